package local

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/calls"
)

// testLimits are small limits for the bombs (modest sizes: the controls
// run without them on a shared machine). No CPU time: an interpreter's
// start alone takes 0.25-0.6 s of CPU on a loaded machine; the CPU
// spinner sets its own (cpuBudget).
var testLimits = calls.Limits{Processes: 128, Memory: 64 << 20, Tmp: 32 << 20, Write: 64 << 20}

// cpuBudget is the CPU spinner's cpu_time: read from the call's cgroup
// (the CPU its processes were charged, not wall time), and well above
// python3's start; the spinner stops by itself at twice as much of its
// own CPU time.
const cpuBudget = 1500 * time.Millisecond

// bomb is one attempt to take the worker down, and what stops it.
type bomb struct {
	name   string
	script string
	// limit is the start of the Limit that ends it; off is the limit
	// the control turns off, and control what its output shows then
	// (it got further).
	limit   string
	on      func(*calls.Limits)
	off     func(*calls.Limits)
	control string
	// slow runs the call through the helper (a directory the zygote
	// hides) rather than the zygote.
	slow bool
}

var bombs = []bomb{
	{name: "fork", script: `for i in $(seq 1 200); do sleep 30 & done; echo SPAWNED-ALL`,
		limit: "processes: ", off: func(l *calls.Limits) { l.Processes = 0 }, control: "SPAWNED-ALL"},
	{name: "fork-slow", script: `for i in $(seq 1 200); do sleep 30 & done; echo SPAWNED-ALL`, slow: true,
		limit: "processes: ", off: func(l *calls.Limits) { l.Processes = 0 }, control: "SPAWNED-ALL"},
	{name: "memory", script: `python3 -c "s = b'x' * (256 << 20); print('ALLOCATED', len(s))"`,
		limit: "memory: ", off: func(l *calls.Limits) { l.Memory = 0 }, control: "ALLOCATED 268435456"},
	{name: "memory-slow", script: `python3 -c "s = b'x' * (256 << 20); print('ALLOCATED', len(s))"`, slow: true,
		limit: "memory: ", off: func(l *calls.Limits) { l.Memory = 0 }, control: "ALLOCATED 268435456"},
	{name: "tmp-fill", script: `dd if=/dev/zero of="$TMPDIR/x" bs=1M count=48 && echo FILLED`,
		limit: "tmp: ", off: func(l *calls.Limits) { l.Tmp = 0 }, control: "FILLED"},
	// fallocate fails at once on a tmpfs too small (nothing is
	// allocated); its control is not run (it would take 100G of disk).
	{name: "tmp-fallocate", script: `fallocate -l 48M "$TMPDIR/x" && echo FILLED`, limit: "tmp: "},
	// A file larger than limits.write is stopped by its size wherever it
	// is.
	{name: "tmp-fallocate-100G", script: `fallocate -l 100G "$TMPDIR/x" && echo FILLED`, limit: "write: a file reached"},
	{name: "write-file", script: `dd if=/dev/zero of=big bs=1M count=96 status=none && echo WROTE`,
		limit: "write: a file reached", off: func(l *calls.Limits) { l.Write = 0 }, control: "WROTE"},
	{name: "write-fallocate", script: `fallocate -l 100G big && echo WROTE`, limit: "write: a file reached"},
	// Python ignores SIGXFSZ: its write fails with EFBIG, and the call
	// still says which limit.
	{name: "write-python", script: `python3 -c "import os; fd = os.open('big', os.O_CREAT|os.O_WRONLY); os.posix_fallocate(fd, 0, 96 << 20); print('WROTE')"`,
		limit: "write: a write past", off: func(l *calls.Limits) { l.Write = 0 }, control: "WROTE"},
	{name: "write-files", script: `for i in $(seq 1 20); do dd if=/dev/zero of=f$i bs=1M count=8 status=none || exit; done; echo WROTE`,
		limit: "write: the call grew", off: func(l *calls.Limits) { l.Write = 0 },
		control: "WROTE"},
	// Files allocated without a write (each below the file size bound)
	// are found by the walk of the call's write paths.
	{name: "write-fallocates", script: `for i in $(seq 1 16); do fallocate -l 32M f$i || exit; sleep 0.1; done; echo WROTE`,
		limit: "write: the call grew", off: func(l *calls.Limits) { l.Write = 0 }, control: "WROTE"},
	// The spinner counts its own CPU time (process_time), so the machine's
	// load changes how long it runs, not what it reaches.
	{name: "cpu", script: `python3 -c "
import time
print('SPINNING', flush=True)
while time.process_time() < 3: pass
print('SP'+'UN')"`,
		limit: "cpu_time: ", on: func(l *calls.Limits) { l.CPUTime = cpuBudget }, off: func(l *calls.Limits) { l.CPUTime = 0 }, control: "SPUN"},
}

// TestLimits: a fork bomb, a memory bomb, a TMPDIR filler, a workspace
// filler and a CPU spinner each end their call with a Limit naming the
// limit, through the zygote and (fork, memory) the helper, while a
// second call started at the same time on the same backend completes;
// the worker's RSS stays bounded, the workspace holds no more than the
// bound, and the call's cgroups are gone. Control: with that limit off
// the same attempt gets further. The workspace is on a disk of its own:
// limits.write is triggered by the file system's growth, which files
// freed beside it (another test's, or Docker's layers) would hide.
func TestLimits(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("the limits' tests need root (cgroups)")
	}
	disk := ownDisk(t, "2G")
	ws, hidden := filepath.Join(disk, "ws"), filepath.Join(disk, "hidden")
	for _, d := range []string{ws, hidden} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b := &Backend{Workdir: ws, Hide: []string{hidden}, Limits: testLimits}
	defer b.Close()
	m, err := b.cgroups()
	if err != nil {
		t.Fatalf("no cgroups here: %v", err)
	}
	t.Logf("sandbox: %s", b.SandboxState())
	rss0 := rss(t)
	for _, bb := range bombs {
		for _, control := range []bool{false, true} {
			if control && bb.off == nil {
				continue
			}
			name := bb.name
			if control {
				name += "/control"
			}
			t.Run(name, func(t *testing.T) {
				dir := filepath.Join(ws, name)
				if bb.slow {
					dir = filepath.Join(hidden, name)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				lim := testLimits
				if bb.on != nil {
					bb.on(&lim)
				}
				if control {
					bb.off(&lim)
				}
				prof := &calls.Sandbox{Write: []string{dir}, Dirs: []string{dir}, Limits: &lim}
				var wg sync.WaitGroup
				var second backend.ExecResult
				var secondErr error
				wg.Add(1)
				go func() {
					defer wg.Done()
					second, secondErr = b.Exec(context.Background(), backend.ExecRequest{Argv: []string{"bash", "-c", "sleep 0.3; echo SECOND-OK"},
						Dir: ws, Timeout: 30 * time.Second})
				}()
				start := time.Now()
				// A loaded machine gives the CPU spinner a small share: its
				// control needs its 3 s of CPU time.
				res, err := b.Exec(backend.WithSandbox(context.Background(), prof), backend.ExecRequest{Argv: []string{"bash", "-c", bb.script}, Dir: dir,
					Timeout: 2 * time.Minute, MaxOutput: 64 << 10})
				took := time.Since(start)
				wg.Wait()
				if err != nil {
					t.Fatal(err)
				}
				out := string(res.Stdout) + string(res.Stderr)
				t.Logf("%s: exit %d in %v, limit %q, output %.300q", name, res.ExitCode, took, res.Limit, out)
				if control {
					// Another limit may still end it later: the one turned
					// off may not.
					if strings.HasPrefix(res.Limit, bb.limit) || !strings.Contains(out, bb.control) {
						t.Errorf("control: limit %q, output %q lacks %q", res.Limit, out, bb.control)
					}
				} else {
					if !strings.HasPrefix(res.Limit, bb.limit) {
						t.Errorf("limit %q, want %q...", res.Limit, bb.limit)
					}
					if bb.control != "" && strings.Contains(out, bb.control) {
						t.Errorf("the attempt went through: %q", out)
					}
					if res.TimedOut {
						t.Errorf("it ran to its timeout")
					}
				}
				if secondErr != nil || second.ExitCode != 0 || strings.TrimSpace(string(second.Stdout)) != "SECOND-OK" || second.Limit != "" {
					t.Errorf("the second call: %v %+v", secondErr, second)
				}
				if left := m.Calls(); len(left) > 0 {
					t.Errorf("call groups left: %v", left)
				}
				// The watcher reads the disks every pollEvery, and walks
				// beside the polls: a call writes one poll's worth more by
				// write (~8 MiB on a loaded machine), one walk's worth by
				// fallocate (here 32 MiB every 100 ms).
				n := du(t, dir)
				t.Logf("%s: the workspace holds %s", name, calls.Bytes(n))
				if !control && n > lim.Write+(64<<20) {
					t.Errorf("the workspace holds %d bytes, more than limits.write (%d)", n, lim.Write)
				}
				if r := rss(t); r > rss0+200<<20 {
					t.Errorf("the worker's RSS grew from %d to %d", rss0, r)
				}
				_ = os.RemoveAll(dir)
			})
		}
	}
}

// TestLimitsDefault: a call whose profile names no limits gets the
// backend's, and a profile's own replace them.
func TestLimitsDefault(t *testing.T) {
	ws := t.TempDir()
	b := &Backend{Workdir: ws, Limits: calls.Limits{Processes: 64}}
	defer b.Close()
	script := `for i in $(seq 1 100); do sleep 30 & done; echo SPAWNED-ALL`
	res, err := b.Exec(context.Background(), backend.ExecRequest{Argv: []string{"bash", "-c", script}, Timeout: 30 * time.Second})
	if err != nil || !strings.HasPrefix(res.Limit, "processes: ") || !strings.Contains(res.Limit, "(64)") {
		t.Errorf("default limits: %v %q", err, res.Limit)
	}
	prof := &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}, Limits: &calls.Limits{Processes: 1000}}
	res, err = b.Exec(backend.WithSandbox(context.Background(), prof), backend.ExecRequest{Argv: []string{"bash", "-c", script}, Timeout: 30 * time.Second})
	if err != nil || res.Limit != "" || !strings.Contains(string(res.Stdout), "SPAWNED-ALL") {
		t.Errorf("the profile's limits: %v %q %s", err, res.Limit, res.Stderr)
	}
}

// rss is the test process's resident set in bytes.
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// du is the bytes the files under dir take on disk.
func du(t *testing.T, dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			} else {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// TestLimitsNotWidened: a call's process can neither raise its own
// bound nor leave its group for its parent's: the cgroup files are not
// among what it may write. Control: the worker (root) writes the same
// kind of file of a group it made.
func TestLimitsNotWidened(t *testing.T) {
	ws := t.TempDir()
	b := &Backend{Workdir: ws, Limits: calls.Limits{Processes: 100, Memory: 64 << 20}}
	defer b.Close()
	m, err := b.cgroups()
	if err != nil {
		t.Fatalf("no cgroups here: %v", err)
	}
	// The pids group's path as the process sees it, then its own bound and
	// its parent's member list.
	script := `g=$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup); d=/sys/fs/cgroup/pids$g; echo "GROUP $g"
echo 100000 > $d/pids.max && echo RAISED; echo $$ > $(dirname $d)/cgroup.procs && echo LEFT; cat $d/pids.max`
	res, err := b.Exec(context.Background(), backend.ExecRequest{Argv: []string{"bash", "-c", script}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	t.Logf("%q", out)
	if !strings.Contains(out, "GROUP /warden.") || strings.Contains(out, "RAISED") || strings.Contains(out, "LEFT") || !strings.Contains(out, "\n100\n") {
		t.Errorf("the process widened its limits: %q", out)
	}
	g, err := m.New(calls.Limits{Processes: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	for _, d := range g.Dirs() {
		if _, err := os.Stat(filepath.Join(d, "pids.max")); err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(d, "pids.max"), []byte("100000"), 0); err != nil {
			t.Errorf("control: the worker cannot write %s: %v", d, err)
		}
	}
}
