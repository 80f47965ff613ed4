package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/wardenhq/warden/calls"
)

// ownerEnv makes the test binary a worker's stand-in (TestOwnerHelper):
// "hold" opens a Manager, makes a call group, prints its groups and
// holds them until its stdin closes; "open" prints whether a PID is
// visible from where it runs, then opens a Manager (the cleanup a worker
// does at start) and closes it.
const ownerEnv = "WARDEN_CGROUP_OWNER_HELPER"

// TestOwnerHelper is the stand-in's body (run only as a child of
// TestCleanupOwnership).
func TestOwnerHelper(t *testing.T) {
	mode := os.Getenv(ownerEnv)
	if mode == "" {
		return // not a helper: nothing to do in a normal run
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	self, _ := os.Readlink("/proc/self") // the host's PID: /proc is the host's
	fmt.Fprintf(out, "PID %d HOSTPID %s\n", os.Getpid(), self)
	switch mode {
	case "hold":
		m, err := Open(Options{CPUShare: true})
		if err != nil {
			t.Fatal(err)
		}
		g, err := m.New(calls.Limits{Processes: 64, Memory: 64 << 20})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "GROUPS %s\n", strings.Join(append(append([]string{}, m.parents...), g.Dirs()...), " "))
		out.Flush()
		_, _ = io.Copy(io.Discard, os.Stdin)
		g.Remove()
		m.Close()
	case "open":
		pid, _ := strconv.Atoi(os.Getenv("WARDEN_PROBE_PID"))
		fmt.Fprintf(out, "KILL0 %d %v\n", pid, syscall.Kill(pid, 0))
		m, err := Open(Options{CPUShare: true})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "OPENED %s\n", strings.Join(m.parents, " "))
		m.Close()
	}
}

// helper is one stand-in worker, in a PID namespace of its own (unshare
// --pid --fork): its output lines by first word, and its stdin.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines map[string]string
}

// startHelper starts the stand-in in mode, in a PID namespace of its
// own, and reads its lines up to the one beginning with until.
func startHelper(t *testing.T, mode, until string, env ...string) *helper {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", bin, "-test.run", "^TestOwnerHelper$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), ownerEnv+"="+mode), env...)
	cmd.Stderr = os.Stderr
	h := &helper{cmd: cmd, lines: map[string]string{}}
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("unshare --pid: %v", err)
	}
	t.Cleanup(func() { h.stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		h.lines[k] = v
		if k == until {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return h
		}
	}
	t.Fatalf("the %s helper ended before %s: %v", mode, until, h.lines)
	return nil
}

// TestCleanupOwnership: two stand-in workers, each in a PID namespace of
// its own. The second, which cannot see the first's PID (shown: kill 0
// gives ESRCH, so the old rule by PID removed its groups), opens its
// Manager, and every group of the first is still there. Once the first
// is killed (SIGKILL: no Close runs), the next Manager to open, in a PID
// namespace of its own too, removes its groups.
func TestCleanupOwnership(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("needs root (cgroups, unshare)")
	}
	a := startHelper(t, "hold", "GROUPS")
	groups := strings.Fields(a.lines["GROUPS"])
	hostPID := strings.Fields(a.lines["PID"])[2]
	t.Logf("first worker: pid %s, host pid %s, groups %v", strings.Fields(a.lines["PID"])[0], hostPID, groups)
	if len(groups) < 2 {
		t.Fatalf("the first worker made no groups: %v", a.lines)
	}
	b := startHelper(t, "open", "OPENED", "WARDEN_PROBE_PID="+hostPID)
	t.Logf("second worker: pid %s; kill(%s, 0) there: %s; its groups %s", strings.Fields(b.lines["PID"])[0], hostPID, b.lines["KILL0"], b.lines["OPENED"])
	if !strings.Contains(b.lines["KILL0"], "no such process") {
		t.Errorf("the second worker sees the first's PID (%s): the test does not show the PID namespace case", b.lines["KILL0"])
	}
	_ = b.cmd.Wait()
	for _, g := range groups {
		if _, err := os.Stat(g); err != nil {
			t.Errorf("the second worker's start removed the first's live group %s: %v", g, err)
		}
	}
	// The first dies without cleaning up.
	pid, _ := strconv.Atoi(hostPID)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	for _, g := range groups {
		if _, err := os.Stat(g); err != nil {
			t.Fatalf("the killed worker's %s went before any cleanup: the test shows nothing", g)
		}
	}
	c := startHelper(t, "open", "OPENED", "WARDEN_PROBE_PID="+hostPID)
	_ = c.cmd.Wait()
	for _, g := range groups {
		if _, err := os.Stat(g); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a dead worker's group %s left after the next worker's start: %v", g, err)
		}
	}
}
