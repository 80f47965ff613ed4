// Issue 41.6's side-by-side run (WARDEN_SIDE_BY_SIDE=10m for the
// issue's ten minutes), 48.3's disk reserve and 48.4's CPU share, through
// the worker binary.

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// groupLine matches a line of /proc/self/cgroup whose path is in a
// worker's parent group: the hierarchy's controllers, the parent's path
// and the call's group.
var groupLine = regexp.MustCompile(`(?m)^\d+:([a-z_,]+):(\S*/warden\.[0-9a-f]+)/(call-\d+)$`)

// cgroupRoot is where the v1 hierarchy of controllers ctl is mounted.
func cgroupRoot(ctl string) string {
	return filepath.Join("/sys/fs/cgroup", strings.Split(ctl, ",")[0])
}

// TestRealWorkerSideBySide: two workers, each in a PID namespace of its
// own (as two containers on one host), run calls side by side for
// WARDEN_SIDE_BY_SIDE (a duration; 1m by default, the 10m on
// demand), while a third worker, in a PID namespace of its own too, is
// started (its cgroup cleanup runs at its first call) and stopped again
// and again. Every call of the two prints its cgroups: each is in a call
// group under its worker's parent in every hierarchy, and each parent
// seen is there at every check. The old rule (a parent whose PID is
// not visible is a dead worker's) removed them at the third worker's
// first call.
func TestRealWorkerSideBySide(t *testing.T) {
	d := time.Minute
	if s := os.Getenv("WARDEN_SIDE_BY_SIDE"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatalf("WARDEN_SIDE_BY_SIDE: %v", err)
		}
	}
	// Bypass: the calls read /proc/self/cgroup, outside the working
	// directories, which asks in default mode; this test is about the
	// cgroups, not the verdict.
	var rules []string
	a := modeRun{w: startRealWorker(t, outside, false, "", pidnsArg), mode: permission.ModeBypass, rules: rules}
	b := modeRun{w: startRealWorker(t, outside, false, "", pidnsArg), mode: permission.ModeBypass, rules: rules}
	// parents are each worker's parent groups (hierarchy → path), from
	// its first call.
	parents := []map[string]string{{}, {}}
	var calls, checks, churns int
	check := func(i int, r model.Message) {
		t.Helper()
		ms := groupLine.FindAllStringSubmatch(r.Content, -1)
		if !strings.Contains(r.Content, "SIDE-MARK") || len(ms) < 3 {
			t.Errorf("worker %d: a call not in its groups: %.600s", i, r.Content)
			return
		}
		calls++
		for _, m := range ms {
			if p, ok := parents[i][m[1]]; ok && p != m[2] {
				t.Errorf("worker %d: its %s parent changed from %s to %s", i, m[1], p, m[2])
			}
			parents[i][m[1]] = m[2]
		}
	}
	intact := func(when string) {
		t.Helper()
		for i, ps := range parents {
			for ctl, p := range ps {
				checks++
				if _, err := os.Stat(filepath.Join(cgroupRoot(ctl), p)); err != nil {
					t.Errorf("%s: worker %d's %s group %s is gone: %v", when, i, ctl, p, err)
				}
			}
		}
	}
	step := []attempt{{tool: "Bash", input: bash("echo SIDE-MARK; cat /proc/self/cgroup")}}
	end := time.Now().Add(d)
	for round := 0; time.Now().Before(end); round++ {
		ida, da := a.start(t, fmt.Sprintf("side-a-%d", round), "", step, step, step)
		idb, db := b.start(t, fmt.Sprintf("side-b-%d", round), "", step, step, step)
		// A third worker, in a PID namespace of its own, starts (its
		// first call opens its cgroups and cleans up) and stops.
		if round%3 == 0 {
			c := modeRun{w: startRealWorker(t, outside, false, "", pidnsArg), mode: permission.ModeBypass, rules: rules}
			for _, r := range c.turn(t, fmt.Sprintf("side-c-%d", round), "", 2*time.Minute, step) {
				if !strings.Contains(r.Content, "SIDE-MARK") {
					t.Errorf("the third worker's call: %.300s", r.Content)
				}
			}
			c.w.terminate()
			<-c.w.exited
			churns++
			intact(fmt.Sprintf("round %d, after the third worker's start", round))
		}
		for i, ch := range []<-chan turnEnd{da, db} {
			id := []string{ida, idb}[i]
			select {
			case r := <-ch:
				if r.err != nil {
					t.Fatalf("worker %d's turn %s: %v", i, id, r.err)
				}
				for _, m := range toolResults(r.res) {
					check(i, m)
				}
			case <-time.After(3 * time.Minute):
				t.Fatalf("worker %d's turn %s did not end", i, id)
			}
		}
		intact(fmt.Sprintf("round %d", round))
	}
	t.Logf("%v side by side: %d calls, each in its worker's groups; %d checks of the two workers' parent groups (%v, %v), all there; %d starts of a third worker",
		d, calls, checks, parents[0], parents[1], churns)
	if calls == 0 || churns == 0 {
		t.Fatalf("nothing ran: %d calls, %d starts of a third worker", calls, churns)
	}
}

// loopDisk mounts a fresh 64 MiB ext4 file system (no root reserve) and
// makes it TMPDIR, so that the test's temporary directories, the
// worker's workspace and data dir among them, are on it.
func loopDisk(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "loopdisk")
	if err != nil {
		t.Fatal(err)
	}
	img := dir + ".img"
	if out, err := exec.Command("sh", "-c", "truncate -s 64M "+img+" && mkfs.ext4 -q -m 0 "+img+" && mount -o loop "+img+" "+dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a small disk: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
		os.Remove(dir)
		os.Remove(img)
	})
	t.Setenv("TMPDIR", dir)
	return dir
}

// diskFree is the free bytes (to a process without privileges) and
// inodes of the file system of p.
func diskFree(p string) (int64, int64) {
	var st unix.Statfs_t
	if unix.Statfs(p, &st) != nil {
		return -1, -1
	}
	return int64(st.Bavail) * st.Bsize, int64(st.Ffree)
}

// TestRealWorkerDiskReserve: on a 64 MiB disk that holds the worker's
// workspace and data dir, one fallocate(FALLOC_FL_KEEP_SIZE) of 2 GiB
// (its file's size stays 0, so limits.write's file size bound never
// applies) and a flood of empty files each end their call with the
// disk_reserve limit, while a second turn on the same worker answers;
// the data dir's free space is sampled during and after, and takes a
// write after. Control: limits.disk_reserve: off, where the same calls
// leave the disk full.
func TestRealWorkerDiskReserve(t *testing.T) {
	for _, on := range []bool{true, false} {
		name, cfg := "reserve_on", ""
		if !on {
			name, cfg = "reserve_off", "backend:\n  local:\n    limits: {disk_reserve: \"off\"}\n"
		}
		t.Run(name, func(t *testing.T) {
			loopDisk(t)
			w := startRealWorker(t, outside, false, cfg)
			m := modeRun{w: w, mode: permission.ModeDefault, rules: []string{"Bash(python3:*)", "Bash(echo:*)"}}
			free0, inodes0 := diskFree(w.data)
			// The data dir's least free space and inodes while the calls run.
			var mu sync.Mutex
			minFree, minInodes := free0, inodes0
			stop := make(chan struct{})
			var sampled sync.WaitGroup
			sampled.Add(1)
			go func() {
				defer sampled.Done()
				for {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
					f, i := diskFree(w.data)
					mu.Lock()
					minFree, minInodes = min(minFree, f), min(minInodes, i)
					mu.Unlock()
				}
			}()
			fallocate := pyCall("import ctypes\nfd=os.open('big',os.O_CREAT|os.O_WRONLY)\nr=ctypes.CDLL(None,use_errno=True).fallocate(fd,1,ctypes.c_long(0),ctypes.c_long(2<<30))\nprint('FALLOCATE',r,os.strerror(ctypes.get_errno()),os.fstat(fd).st_blocks*512,flush=True)\nimport time; time.sleep(1)\nprint('AFTER'+'-ALL',flush=True)\n")
			flood := pyCall("if os.path.exists('big'): os.remove('big')\nos.mkdir('flood')\nn=0\ntry:\n  while True:\n    open('flood/%d'%n,'w').close(); n+=1\nexcept OSError as e: print('FLOODED',n,e,flush=True)\nimport time; time.sleep(1)\nprint('AFTER'+'-ALL',flush=True)\n")
			aliveID, alive := m.start(t, "alive", "", func() [][]attempt {
				var s [][]attempt
				for i := range 8 {
					s = append(s, []attempt{{tool: "Bash", input: bash(fmt.Sprintf("echo alive-%d", i))}})
				}
				return s
			}()...)
			start := time.Now()
			rs := m.turn(t, "fillers", "", 4*time.Minute, []attempt{{name: "fallocate", tool: "Bash", input: fallocate}}, []attempt{{name: "flood", tool: "Bash", input: flood}})
			took := time.Since(start)
			var aliveErr error
			var aliveOK int
			select {
			case r := <-alive:
				aliveErr = r.err
				for i, res := range toolResults(r.res) {
					if strings.Contains(res.Content, fmt.Sprintf("alive-%d", i)) {
						aliveOK++
					}
				}
			case <-time.After(3 * time.Minute):
				aliveErr = fmt.Errorf("the second turn %s did not end", aliveID)
			case <-w.exited:
				t.Fatalf("the worker died:\n%s", w.tail())
			}
			close(stop)
			sampled.Wait()
			free1, inodes1 := diskFree(w.data)
			werr := os.WriteFile(filepath.Join(w.data, "after.bin"), make([]byte, 1<<20), 0o600)
			t.Logf("%s: fillers' turn %v; data dir free %d KiB / %d inodes before, least during %d KiB / %d, after %d KiB / %d; 1 MiB write to the data dir after: %v; second turn: %d/8 answered, err %v",
				name, took.Round(time.Millisecond), free0>>10, inodes0, minFree>>10, minInodes, free1>>10, inodes1, werr, aliveOK, aliveErr)
			for i, r := range rs {
				c := strings.ReplaceAll(r.Content, "\n", " | ")
				t.Logf("%s: %s: %.500s", name, []string{"fallocate", "flood"}[i], c)
				if !strings.Contains(r.Content, "ATTEMPT-RAN") {
					t.Errorf("%s: the attempt did not run: %.500s", []string{"fallocate", "flood"}[i], c)
				}
				if on && (!strings.Contains(r.Content, "disk_reserve") || strings.Contains(r.Content, "AFTER-ALL")) {
					t.Errorf("%s: not ended at the disk reserve: %.800s", []string{"fallocate", "flood"}[i], c)
				}
				if !on && (strings.Contains(r.Content, "disk_reserve:") || !strings.Contains(r.Content, "AFTER-ALL")) {
					t.Errorf("control %s: stopped with the reserve off: %.800s", []string{"fallocate", "flood"}[i], c)
				}
			}
			if on {
				if aliveErr != nil || aliveOK != 8 {
					t.Errorf("the second turn: %d/8 calls answered, err %v", aliveOK, aliveErr)
				}
				if werr != nil {
					t.Errorf("the data dir takes no 1 MiB write after the calls: %v", werr)
				}
			} else if minInodes > 0 && minFree > 1<<20 {
				t.Errorf("control: the disk never came near full (least free %d KiB, %d inodes): the reserve proves nothing", minFree>>10, minInodes)
			}
		})
	}
}

// TestRealWorkerCPUShare: a bounded fork bomb (spinning processes, 4 per
// CPU under the default processes bound) runs in a call while a second
// turn on the same worker runs calls; the second turn's latency is
// measured before and during (logged: figures, not asserted), and the
// bomb's processes are in the call's own cpu group. Control:
// limits.cpu_share: off, where they are in the worker's.
func TestRealWorkerCPUShare(t *testing.T) {
	for _, on := range []bool{true, false} {
		name, cfg := "share_on", ""
		if !on {
			name, cfg = "share_off", "backend:\n  local:\n    limits: {cpu_share: \"off\"}\n"
		}
		t.Run(name, func(t *testing.T) {
			w := startRealWorker(t, outside, false, cfg)
			m := modeRun{w: w, mode: permission.ModeDefault, rules: []string{"Bash(python3:*)", "Bash(echo:*)"}}
			neighbour := func(label string) time.Duration {
				start := time.Now()
				for _, r := range m.turn(t, label, "", 3*time.Minute, []attempt{{tool: "Bash", input: bash("echo NEIGHBOUR")}}, []attempt{{tool: "Bash", input: bash("echo NEIGHBOUR")}}) {
					if !strings.Contains(r.Content, "NEIGHBOUR") {
						t.Errorf("the neighbour turn's call: %.300s", r.Content)
					}
				}
				return time.Since(start)
			}
			var before, during []time.Duration
			for i := range 3 {
				before = append(before, neighbour(fmt.Sprintf("before-%d", i)))
			}
			n := 4 * numCPU()
			bomb := pyCall(fmt.Sprintf("import time,signal\nkids=[]\nfor i in range(%d):\n  p=os.fork()\n  if p==0:\n    while True: pass\n  kids.append(p)\nprint('SPINNING',len(kids),flush=True)\nprint(open('/proc/%%d/cgroup'%%kids[0]).read(),flush=True)\ntime.sleep(12)\nfor p in kids: os.kill(p,signal.SIGKILL)\nprint('BOMB-'+'DONE',flush=True)\n", n))
			id, done := m.start(t, "bomb", "", []attempt{{name: "bomb", tool: "Bash", input: bomb}})
			time.Sleep(3 * time.Second)
			for i := range 3 {
				during = append(during, neighbour(fmt.Sprintf("during-%d", i)))
			}
			var out string
			select {
			case r := <-done:
				if r.err != nil {
					t.Fatalf("the bomb's turn %s: %v", id, r.err)
				}
				for _, res := range toolResults(r.res) {
					out += res.Content
				}
			case <-time.After(3 * time.Minute):
				t.Fatalf("the bomb's turn %s did not end", id)
			}
			// The cpu controller's line (cgroup v1: "N:cpu:/…" or
			// "N:cpu,cpuacct:/…", not cpuset's; v2: "0::/…").
			cpuLine := regexp.MustCompile(`(?m)^\d+:([a-z_]+,)*cpu(,[a-z_]+)*:.*$|^0::.*$`).FindString(out)
			t.Logf("%s: %d spinners; their cpu group %q; neighbour turn (2 calls) median before %v, during %v (before %v, during %v)",
				name, n, cpuLine, medianD(before), medianD(during), before, during)
			if !strings.Contains(out, "ATTEMPT-RAN") || !strings.Contains(out, "SPINNING") {
				t.Fatalf("the bomb did not run: %.800s", out)
			}
			inCall := strings.Contains(cpuLine, "/call-")
			if on && !inCall {
				t.Errorf("the spinners are not in a cpu group of the call's: %q", cpuLine)
			}
			if !on && inCall {
				t.Errorf("control: cpu_share is off, yet the spinners are in a cpu group of the call's: %q", cpuLine)
			}
		})
	}
}

// numCPU is the number of CPUs this process may run on.
func numCPU() int {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil {
		return 1
	}
	return set.Count()
}

// medianD is the middle of ds.
func medianD(ds []time.Duration) time.Duration {
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
