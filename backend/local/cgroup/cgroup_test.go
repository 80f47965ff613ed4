package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/calls"
)

// TestGroup: a call's groups carry its bounds, count what its processes
// do, and are removed with what is left in them; Close removes the
// worker's parents, and a new Manager removes the parents no process
// holds the lock of (a worker that is gone), not one whose lock is held.
// Control: an unbounded group holds no bound.
func TestGroup(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("needs root (cgroups)")
	}
	probe, err := Open(Options{CPUShare: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", probe.Describe())
	// A dead worker's parent in each hierarchy (nobody holds its lock),
	// and a live one's (its lock held here, by another open file).
	var stale, live []string
	for _, p := range probe.parents {
		base := filepath.Dir(p)
		s := filepath.Join(base, prefix+"dead")
		l := filepath.Join(base, prefix+"live")
		for _, d := range []string{s, filepath.Join(s, "call-1"), l} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.Open(l)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		stale, live = append(stale, s), append(live, l)
	}
	defer func() {
		for _, l := range live {
			_ = os.Remove(l)
		}
	}()
	probe.Close()

	m, err := Open(Options{CPUShare: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stale {
		if _, err := os.Stat(s); err == nil {
			t.Errorf("stale %s left", s)
		}
	}
	for _, l := range live {
		if _, err := os.Stat(l); err != nil {
			t.Errorf("a live worker's %s removed", l)
		}
	}
	g, err := m.New(calls.Limits{Processes: 77, Memory: 96 << 20})
	if err != nil {
		t.Fatal(err)
	}
	free, err := m.New(calls.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	read := func(g *Group, ctl, v1, v2 string) string {
		f := v1
		if m.v2 {
			f = v2
		}
		b, _ := os.ReadFile(filepath.Join(g.dir(ctl), f))
		return strings.TrimSpace(string(b))
	}
	if p, mem := read(g, "pids", "pids.max", "pids.max"), read(g, "memory", "memory.limit_in_bytes", "memory.max"); p != "77" || mem != strconv.Itoa(96<<20) {
		t.Errorf("bounds: pids.max %s, memory %s", p, mem)
	}
	if p := read(free, "pids", "pids.max", "pids.max"); p != "max" {
		t.Errorf("control: pids.max %s", p)
	}
	// A process joins (as the zygote's child does) and forks past the
	// bound; it stays when the group is removed, which kills it.
	cmd := exec.Command("sh", "-c", "read go; for i in $(seq 1 100); do sleep 60 & done; sleep 60")
	start, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range g.Procs() {
		if _, err := f.WriteString(strconv.Itoa(cmd.Process.Pid)); err != nil {
			t.Fatal(err)
		}
	}
	start.Write([]byte("go\n")) // it forks once in its groups
	start.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for range 200 {
		if g.Events().PidsMax > 0 {
			break
		}
		exec.Command("sleep", "0.01").Run()
	}
	if e := g.Events(); e.PidsMax == 0 {
		t.Errorf("no pids max event: %+v", e)
	}
	dirs := g.Dirs()
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	<-done
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s left", d)
		}
	}
	free.Remove()
	parents := m.parents
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range parents {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("parent %s left", p)
		}
	}
}

// TestTakeMadeAhead: Take serves a call from the group made ahead for
// the same limits, with those limits written, and makes the next one;
// a call with other limits gets a group of its own; Close removes the
// one made ahead.
func TestTakeMadeAhead(t *testing.T) {
	m, err := Open(Options{CPUShare: true})
	if err != nil {
		t.Skipf("no cgroups here: %v", err) // TestGroup fails for that where they are expected
	}
	l := calls.Limits{Processes: 64, Memory: 64 << 20}
	g1, err := m.Take(l)
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Calls() // waits for the group made ahead
	m.mu.Lock()
	ahead := m.spare
	m.mu.Unlock()
	if ahead == nil {
		t.Fatal("no group made ahead")
	}
	g2, err := m.Take(l)
	if err != nil {
		t.Fatal(err)
	}
	if g2 != ahead || g2 == g1 {
		t.Errorf("the second call got %v, not the group made ahead %v", g2.dirs, ahead.dirs)
	}
	if b, err := os.ReadFile(filepath.Join(g2.dir("pids"), "pids.max")); err == nil && strings.TrimSpace(string(b)) != "64" {
		t.Errorf("the group made ahead has pids.max %q", b)
	}
	g3, err := m.Take(calls.Limits{Processes: 32})
	if err != nil {
		t.Fatal(err)
	}
	if g3 == ahead {
		t.Error("a call with other limits got a group made for different ones")
	}
	for _, g := range []*Group{g1, g2, g3} {
		if err := g.Remove(); err != nil {
			t.Error(err)
		}
	}
	if left := m.Calls(); len(left) != 0 {
		t.Errorf("groups left besides the one made ahead: %v", left)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range m.parents {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after Close: %v", p, err)
		}
	}
}
