// Package cgroup puts each tool call of the local backend in cgroups of
// its own that bound its processes, memory and CPU, and reads back
// which bound the call reached.
//
// cgroup v2 is used where the unified hierarchy has the memory and pids
// controllers; otherwise the cgroup v1 hierarchies of memory, pids, cpu
// and cpuacct (a hybrid machine: v1 controllers, a unified hierarchy with
// none of them). The worker makes one parent group per Manager
// (warden.<random>, in each hierarchy) and one child per call, removed
// after the call (the next call's is made ahead, off its path). Only a
// worker that may write the hierarchies (root, or a delegated subtree on
// v2) gets limits; Open says why not otherwise.
//
// Ownership is held in the group itself, not inferred from a PID: the
// Manager keeps each parent directory open with an exclusive flock(2)
// for as long as it lives. A Manager that opens removes a warden.*
// parent only when it can take that lock itself, that is when no process
// holds it any more. The lock is the kernel's, on the group's inode: it
// holds across PID namespaces and containers that see the same
// hierarchy (they share its inodes), and the kernel drops it when the
// owner exits however it exits (SIGKILL included), so a dead worker's
// groups are cleaned by the next one. A PID proves nothing across PID
// namespaces: a worker in a namespace of its own sees none of the host's
// PIDs (the old rule, by PID, removed live workers' groups). Groups of
// the older naming (warden-<pid>-<random>) carry no lock and are left
// alone.
package cgroup

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/calls"
)

// v1Controllers are the cgroup v1 hierarchies a call gets a group in.
var v1Controllers = []string{"memory", "pids", "cpu", "cpuacct"}

// Manager makes the cgroups of one worker's calls.
type Manager struct {
	v2 bool
	// parents are the worker's parent groups, one per hierarchy; ctl
	// names the controllers of each (v1; on v2 all are in the one).
	parents []string
	ctl     []map[string]bool
	// locks are the parents, open and flocked while the Manager lives.
	locks []*os.File
	share bool
	seq   atomic.Uint64
	// spare is a group made ahead for the limits of the last call (Take);
	// making says one is being made, closed that Close ran. made counts
	// the makers Close waits for.
	mu     sync.Mutex
	spare  *Group
	making bool
	closed bool
	made   sync.WaitGroup
}

// Options are a Manager's choices beyond each call's limits.
type Options struct {
	// CPUShare puts every call in a CPU group of its own, bounded or not
	// (cgroup v1: the cpu hierarchy; v2 always does): the call's
	// processes then compete for the CPU as one group of the default
	// weight (cpu.shares 1024, cpu.weight 100), against the worker's own
	// threads and each other call, however many processes it forks.
	// Without it, an unbounded call's processes stay in the worker's
	// cpu group on v1 and each competes as the worker's threads do.
	CPUShare bool
}

// Open detects the cgroup hierarchies, removes the groups of workers
// that are gone (whose lock no process holds) and makes this worker's
// parent groups, locked. An error says why there are no limits here.
func Open(o Options) (*Manager, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	// One parent per Manager: a process may hold several (tests do). A
	// parent another Manager's cleanup removed between its mkdir and its
	// lock is made again under a new name.
	for range 5 {
		var r [8]byte
		_, _ = rand.Read(r[:])
		name := fmt.Sprintf("%s%x", prefix, r)
		m, err := openV2(mounts, name)
		if err != nil && !errors.Is(err, errLost) && len(mounts.v1) > 0 {
			m, err = openV1(mounts, own, name)
		}
		if errors.Is(err, errLost) {
			continue
		}
		if m != nil {
			m.share = o.CPUShare
		}
		return m, err
	}
	return nil, errors.New("cgroup: another worker's cleanup removed this worker's new parent group five times")
}

// prefix begins the name of every parent group a Manager makes.
const prefix = "warden."

// errLost is the error of a parent group removed before its Manager
// locked it.
var errLost = errors.New("cgroup: the new parent group was removed before it was locked")

// makeParent makes the parent group dir and locks it for the Manager's
// life (errLost: another Manager's cleanup removed it first).
func (m *Manager) makeParent(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return errLost
	} else if err != nil {
		return err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return errLost // a cleanup holds it, and removes it
		}
		return fmt.Errorf("lock %s: %w", dir, err)
	}
	// The lock is ours; the directory it locks must still be the one at
	// dir (a cleanup may have locked and removed it before).
	var held, now unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(dir, &now) != nil || held.Ino != now.Ino || held.Dev != now.Dev {
		f.Close()
		return errLost
	}
	m.locks = append(m.locks, f)
	return nil
}

// openV2 makes the parent at the unified hierarchy's root: under the
// worker's own group it could not enable controllers for children while
// the worker is a process of that group (no internal processes).
func openV2(mounts mountSet, name string) (*Manager, error) {
	if mounts.v2 == "" {
		return nil, errors.New("no cgroup2 hierarchy")
	}
	have, err := os.ReadFile(filepath.Join(mounts.v2, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("cgroup2: %w", err)
	}
	ctrl := map[string]bool{}
	for _, c := range strings.Fields(string(have)) {
		ctrl[c] = true
	}
	if !ctrl["memory"] || !ctrl["pids"] {
		return nil, fmt.Errorf("cgroup2 at %s has no memory and pids controllers (it has %q)", mounts.v2, strings.TrimSpace(string(have)))
	}
	root := filepath.Join(mounts.v2, "cgroup.subtree_control")
	if err := write(root, "+memory +pids"); err != nil {
		return nil, fmt.Errorf("cgroup2: enable controllers: %w", err)
	}
	// cpu is optional (the kernel refuses it while a realtime process
	// runs outside the root group, say): without it limits.cpus is not
	// held, and CPU time is still read from cpu.stat.
	enable := "+memory +pids"
	if ctrl["cpu"] && write(root, "+cpu") == nil {
		enable += " +cpu"
	} else {
		ctrl["cpu"] = false
	}
	cleanStale(mounts.v2)
	parent := filepath.Join(mounts.v2, name)
	m := &Manager{v2: true}
	if err := m.makeParent(parent); err != nil {
		return nil, fmt.Errorf("cgroup2: %w", err)
	}
	m.parents, m.ctl = []string{parent}, []map[string]bool{ctrl}
	if err := write(filepath.Join(parent, "cgroup.subtree_control"), enable); err != nil {
		m.Close()
		return nil, fmt.Errorf("cgroup2: enable controllers: %w", err)
	}
	return m, nil
}

// openV1 makes a parent in each v1 hierarchy, under the worker's own
// group there (v1 allows groups beside processes), so a bound set on
// the worker's group still holds its calls.
func openV1(mounts mountSet, own map[string]string, name string) (*Manager, error) {
	m := &Manager{}
	seen := map[string]int{}
	for _, c := range v1Controllers {
		mp, ok := mounts.v1[c]
		if !ok {
			continue
		}
		if i, ok := seen[mp]; ok {
			m.ctl[i][c] = true // co-mounted (cpu,cpuacct)
			continue
		}
		base := mp
		if p := own[c]; p != "" && p != "/" {
			if fi, err := os.Stat(filepath.Join(mp, p)); err == nil && fi.IsDir() {
				base = filepath.Join(mp, p)
			}
		}
		cleanStale(base)
		parent := filepath.Join(base, name)
		if err := m.makeParent(parent); err != nil {
			m.Close()
			return nil, fmt.Errorf("cgroup v1 %s: %w", c, err)
		}
		seen[mp] = len(m.parents)
		m.parents = append(m.parents, parent)
		m.ctl = append(m.ctl, map[string]bool{c: true})
	}
	if len(m.parents) == 0 {
		return nil, errors.New("no cgroup v1 memory, pids, cpu or cpuacct hierarchy")
	}
	if !m.has("memory") || !m.has("pids") {
		m.Close()
		return nil, errors.New("cgroup v1: no memory or pids hierarchy")
	}
	return m, nil
}

func (m *Manager) has(c string) bool {
	for _, ctl := range m.ctl {
		if ctl[c] {
			return true
		}
	}
	return false
}

// Describe says what the manager uses: "cgroup v2 at
// /sys/fs/cgroup/warden-12" or "cgroup v1 (memory, pids, cpu,
// cpuacct)".
func (m *Manager) Describe() string {
	if m.v2 {
		return "cgroup v2 at " + m.parents[0]
	}
	var cs []string
	for _, c := range v1Controllers {
		if m.has(c) {
			cs = append(cs, c)
		}
	}
	return "cgroup v1 (" + strings.Join(cs, ", ") + ")"
}

// Close removes the worker's parent groups (and any call group left).
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	spare := m.spare
	m.spare = nil
	m.mu.Unlock()
	m.made.Wait()
	if spare != nil {
		_ = spare.Remove()
	}
	var errs []error
	for _, p := range m.parents {
		if err := removeTree(p); err != nil {
			errs = append(errs, err)
		}
	}
	// The locks go last: a parent is never unlocked while it is there.
	for _, f := range m.locks {
		f.Close()
	}
	m.locks = nil
	return errors.Join(errs...)
}

// Group is the cgroups of one call: one per hierarchy.
type Group struct {
	m    *Manager
	dirs []string
	// ctl are the controllers of each of dirs' hierarchies.
	ctl   []map[string]bool
	procs []*os.File
	lim   calls.Limits
}

// New makes the groups of one call, bounded by l (a zero field is no
// bound), and opens their cgroup.procs files for the call's process to
// join.
func (m *Manager) New(l calls.Limits) (*Group, error) {
	g := &Group{m: m, lim: l}
	name := fmt.Sprintf("call-%d", m.seq.Add(1))
	for i, p := range m.parents {
		if !m.v2 && !needed(m.ctl[i], l, m.share) {
			continue // joining a hierarchy costs the call's start time
		}
		dir := filepath.Join(p, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			g.Remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		g.dirs, g.ctl = append(g.dirs, dir), append(g.ctl, m.ctl[i])
		if err := m.set(dir, m.ctl[i], l); err != nil {
			g.Remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		f, err := os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			g.Remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		g.procs = append(g.procs, f)
	}
	return g, nil
}

// Take is New served from a group made ahead for the same limits when
// one waits; it then makes the next call's group off the call's path
// (making a group is most of what the limits add to a call's start).
func (m *Manager) Take(l calls.Limits) (*Group, error) {
	m.mu.Lock()
	g := m.spare
	if g != nil && g.lim == l {
		m.spare = nil
	} else {
		g = nil
	}
	start := !m.making && !m.closed
	if start {
		m.making = true
		m.made.Add(1)
	}
	m.mu.Unlock()
	if start {
		go m.makeSpare(l)
	}
	if g != nil {
		return g, nil
	}
	return m.New(l)
}

// makeSpare makes a group for l ahead and keeps it, replacing a spare
// for other limits.
func (m *Manager) makeSpare(l calls.Limits) {
	defer m.made.Done()
	g, err := m.New(l)
	m.mu.Lock()
	old := m.spare
	if err == nil && !m.closed {
		m.spare, g = g, nil
	} else {
		old = nil
	}
	m.mu.Unlock()
	for _, x := range []*Group{old, g} {
		if x != nil {
			_ = x.Remove()
		}
	}
	// Done once the replaced spare is gone too (Calls waits for it).
	m.mu.Lock()
	m.making = false
	m.mu.Unlock()
}

// needed reports whether a v1 hierarchy of the controllers ctl holds
// one of l's bounds or what the watcher reads for them (cpuacct for the
// CPU time; pids for the processes, whose list the write watcher reads,
// and memory are always made), or the call's CPU share (share).
func needed(ctl map[string]bool, l calls.Limits, share bool) bool {
	return ctl["memory"] || ctl["pids"] || ctl["cpu"] && (l.CPUs > 0 || share) || ctl["cpuacct"] && l.CPUTime > 0
}

// cpuPeriod is the CFS period the CPU bound is a quota of (µs).
const cpuPeriod = 100000

// set writes the bounds of l that ctl's controllers hold into dir.
func (m *Manager) set(dir string, ctl map[string]bool, l calls.Limits) error {
	var files [][2]string
	if m.v2 {
		if l.Processes > 0 {
			files = append(files, [2]string{"pids.max", strconv.FormatInt(l.Processes, 10)})
		}
		if l.Memory > 0 {
			files = append(files, [2]string{"memory.max", strconv.FormatInt(l.Memory, 10)},
				[2]string{"memory.swap.max", "0"}, [2]string{"memory.oom.group", "1"})
		}
		if l.CPUs > 0 && ctl["cpu"] {
			files = append(files, [2]string{"cpu.max", fmt.Sprintf("%d %d", int64(l.CPUs*cpuPeriod), cpuPeriod)})
		}
	} else {
		if l.Processes > 0 && ctl["pids"] {
			files = append(files, [2]string{"pids.max", strconv.FormatInt(l.Processes, 10)})
		}
		if l.Memory > 0 && ctl["memory"] {
			// memsw (memory and swap) must not be below the memory bound,
			// so it is written after it.
			files = append(files, [2]string{"memory.limit_in_bytes", strconv.FormatInt(l.Memory, 10)},
				[2]string{"memory.memsw.limit_in_bytes", strconv.FormatInt(l.Memory, 10)})
		}
		if l.CPUs > 0 && ctl["cpu"] {
			files = append(files, [2]string{"cpu.cfs_period_us", strconv.Itoa(cpuPeriod)},
				[2]string{"cpu.cfs_quota_us", strconv.FormatInt(int64(l.CPUs*cpuPeriod), 10)})
		}
	}
	for _, f := range files {
		p := filepath.Join(dir, f[0])
		if err := write(p, f[1]); err != nil {
			if errors.Is(err, os.ErrNotExist) && (f[0] == "memory.swap.max" || f[0] == "memory.memsw.limit_in_bytes") {
				continue // no swap accounting here
			}
			return fmt.Errorf("set %s: %w", p, err)
		}
	}
	return nil
}

// Procs are the cgroup.procs files of the call's groups, opened for
// writing: a process writing "0" to each joins the call.
func (g *Group) Procs() []*os.File { return g.procs }

// Dirs are the call's group directories.
func (g *Group) Dirs() []string { return g.dirs }

// dir returns the group directory that holds controller c ("" none).
func (g *Group) dir(c string) string {
	for i, d := range g.dirs {
		if g.m.v2 || g.ctl[i][c] {
			return d
		}
	}
	return ""
}

// CPU returns the CPU time the call's processes used so far.
func (g *Group) CPU() (time.Duration, error) {
	if g.m.v2 {
		v, err := keyed(filepath.Join(g.dirs[0], "cpu.stat"), "usage_usec")
		return time.Duration(v) * time.Microsecond, err
	}
	d := g.dir("cpuacct")
	if d == "" {
		return 0, errors.New("cgroup: no cpuacct hierarchy")
	}
	b, err := os.ReadFile(filepath.Join(d, "cpuacct.usage"))
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return time.Duration(ns), err
}

// Events is what the call's processes ran into.
type Events struct {
	// OOMKills counts processes the kernel killed at the memory bound.
	OOMKills int64
	// PidsMax counts forks refused at the process bound.
	PidsMax int64
}

// Events reads the events of the call's groups.
func (g *Group) Events() Events {
	var e Events
	if d := g.dir("pids"); d != "" {
		e.PidsMax, _ = keyed(filepath.Join(d, "pids.events"), "max")
	}
	if d := g.dir("memory"); d != "" {
		if g.m.v2 {
			e.OOMKills, _ = keyed(filepath.Join(d, "memory.events"), "oom_kill")
		} else {
			e.OOMKills, _ = keyed(filepath.Join(d, "memory.oom_control"), "oom_kill")
		}
	}
	return e
}

// Kill kills every process of the call's groups.
func (g *Group) Kill() {
	if g.m.v2 {
		if write(filepath.Join(g.dirs[0], "cgroup.kill"), "1") == nil {
			return
		}
	}
	for _, d := range g.dirs {
		killAll(d)
	}
}

// Remove closes the cgroup.procs files and removes the call's groups,
// killing what is left in them; it waits a little for the processes to
// go.
func (g *Group) Remove() error {
	for _, f := range g.procs {
		f.Close()
	}
	g.procs = nil
	var errs []error
	for _, d := range g.dirs {
		if err := removeGroup(d); err != nil {
			errs = append(errs, err)
		}
	}
	g.dirs = nil
	return errors.Join(errs...)
}

// removeGroup removes one group directory, killing its processes and
// retrying while they exit (an exiting process stays in its group until
// it is reaped).
func removeGroup(d string) error {
	var err error
	for i := range 200 {
		if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if i%10 == 0 {
			killAll(d)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("cgroup: remove %s: %w", d, err)
}

// killAll sends SIGKILL to each process in group d.
func killAll(d string) {
	b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeTree removes a parent group: its call groups, then itself.
func removeTree(p string) error {
	ents, err := os.ReadDir(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	for _, e := range ents {
		if e.IsDir() {
			_ = removeGroup(filepath.Join(p, e.Name()))
		}
	}
	return removeGroup(p)
}

// cleanStale removes the parent groups under base whose Manager is gone:
// those whose lock it can take. It holds the lock while it removes one,
// so a Manager making a parent of that name finds it lost (makeParent).
func cleanStale(base string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix) || !e.IsDir() {
			continue
		}
		p := filepath.Join(base, e.Name())
		f, err := os.OpenFile(p, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			_ = removeTree(p)
		}
		f.Close()
	}
}

// keyed reads the value of key in a flat keyed file ("key value"
// lines).
func keyed(path, key string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), " ")
		if ok && k == key {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("cgroup: no %s in %s", key, path)
}

// write writes s to a cgroup file.
func write(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mountSet is where the hierarchies are mounted: the unified one and
// each v1 controller's.
type mountSet struct {
	v2 string
	v1 map[string]string
}

// cgroupMounts reads the cgroup mounts of /proc/self/mountinfo.
func cgroupMounts() (mountSet, error) {
	ms := mountSet{v1: map[string]string{}}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ms, fmt.Errorf("cgroup: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		pre, post, ok := strings.Cut(s.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 {
			continue
		}
		mp := fields[4]
		switch tail[0] {
		case "cgroup2":
			if ms.v2 == "" {
				ms.v2 = mp
			}
		case "cgroup":
			for _, o := range strings.Split(tail[2], ",") {
				if _, ok := ms.v1[o]; !ok {
					ms.v1[o] = mp
				}
			}
		}
	}
	return ms, s.Err()
}

// ownCgroups reads the worker's own group in each v1 hierarchy
// (controller → path) from /proc/self/cgroup.
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" {
				out[c] = parts[2]
			}
		}
	}
	return out, nil
}

// Calls lists the call groups that exist now, in every hierarchy, but
// the one made ahead for the next call (Take), once it is made.
func (m *Manager) Calls() []string {
	var spare []string
	for range 200 {
		m.mu.Lock()
		making := m.making
		if m.spare != nil {
			spare = slices.Clone(m.spare.dirs)
		}
		m.mu.Unlock()
		if !making {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	var out []string
	for _, p := range m.parents {
		ents, _ := os.ReadDir(p)
		for _, e := range ents {
			if d := filepath.Join(p, e.Name()); e.IsDir() && strings.HasPrefix(e.Name(), "call-") && !slices.Contains(spare, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// Written is the bytes the call's processes wrote to files so far
// (write_bytes of /proc/PID/io: counted when a page is dirtied, so
// buffered writes count at once): the sum over the group's live
// processes, each of which counts the processes it reaped. Rewriting a
// page counts again; fallocate counts nothing.
func (g *Group) Written() int64 {
	d := g.dir("pids")
	if d == "" {
		d = g.dirs[0]
	}
	b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
	if err != nil {
		return 0
	}
	var n int64
	for _, f := range strings.Fields(string(b)) {
		if v, err := keyedColon("/proc/"+f+"/io", "write_bytes"); err == nil {
			n += v
		}
	}
	return n
}

// keyedColon reads the value of key in a "key: value" file.
func keyedColon(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("cgroup: no %s in %s", key, path)
}
