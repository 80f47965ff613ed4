package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/calls"
)

// smallDisk mounts a fresh 64 MiB ext4 file system (no root reserve:
// nothing of the kernel's keeps space for the worker) and returns where.
func smallDisk(t *testing.T) string {
	t.Helper()
	return ownDisk(t, "64M")
}

// ownDisk mounts a fresh ext4 file system of size (truncate's units: a
// sparse image, no root reserve; mkfs adds mkfs.ext4 options) that
// nothing but the test writes, and returns where. A test that reads a
// call's effect in the file system's free space (limits.write's trigger,
// the disk reserve) runs on one: on a shared disk, files another program
// frees meanwhile hide the growth.
func ownDisk(t *testing.T, size string, mkfs ...string) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatal("needs root (mount)")
	}
	img := filepath.Join(t.TempDir(), "disk.img")
	dir := t.TempDir()
	if out, err := exec.Command("sh", "-c", "truncate -s "+size+" "+img+" && mkfs.ext4 -q -m 0 "+strings.Join(mkfs, " ")+" "+img+" && mount -o loop "+img+" "+dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a disk of its own: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// freeOf is the free bytes (to a process without privileges) and free
// inodes of the file system of p.
func freeOf(t *testing.T, p string) (int64, int64) {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize, int64(st.Ffree)
}

// TestDiskReserve: on a small disk that holds the call's workspace and
// the worker's data dir, one fallocate(FALLOC_FL_KEEP_SIZE) of 2 GiB (a
// file of size 0: limits.write's file size bound never applies) and a
// flood of empty files each end their call with the disk_reserve limit;
// the blocks the fallocate took are released when the call ends, and
// the data dir takes a write meanwhile and after. Control: with the
// reserve off (limits.disk_reserve: off) the same call leaves the disk
// full.
func TestDiskReserve(t *testing.T) {
	fallocate := `python3 -c "
import ctypes, os
print('FALLOCATING', flush=True)
fd = os.open('big', os.O_CREAT|os.O_WRONLY)
r = ctypes.CDLL(None, use_errno=True).fallocate(fd, 1, ctypes.c_long(0), ctypes.c_long(2<<30))
print('FALLOCATE', r, os.strerror(ctypes.get_errno()), os.fstat(fd).st_blocks*512, flush=True)
import time; time.sleep(1)
print('AFTER-ALL')"`
	flood := `python3 -c "
import os
print('FLOODING', flush=True)
os.mkdir('flood')
n = 0
try:
    while True:
        open('flood/%d' % n, 'w').close(); n += 1
except OSError as e:
    print('FLOODED', n, e, flush=True)
import time; time.sleep(1)
print('AFTER-ALL')"`
	for _, c := range []struct{ name, marker, script string }{{"fallocate", "FALLOCATING", fallocate}, {"inodes", "FLOODING", flood}} {
		for _, off := range []bool{false, true} {
			name := c.name
			if off {
				name += "/control"
			}
			t.Run(name, func(t *testing.T) {
				var disk string
				if c.name != "inodes" {
					disk = smallDisk(t)
				} else {
					// 100,000 inodes: the reserve is 5,000 of them. The
					// watcher must see the flood between the reserve and
					// zero; on smallDisk's 16,384 (a reserve of 819) a
					// flood crossed that in less than a poll of a loaded
					// machine (three test packages beside it), and took
					// the last inode.
					disk = ownDisk(t, "128M", "-N", "100000")
				}
				ws, data := filepath.Join(disk, "ws"), filepath.Join(disk, "data")
				for _, d := range []string{ws, data} {
					if err := os.Mkdir(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				b := &Backend{Workdir: ws, Hide: []string{data}}
				if off {
					b.DiskReserve = -1
				}
				defer b.Close()
				free0, inodes0 := freeOf(t, disk)
				var st0 unix.Statfs_t
				if err := unix.Statfs(disk, &st0); err != nil {
					t.Fatal(err)
				}
				r := reserveOf(disk, &st0, DefaultDiskReserve)
				// The worker's data dir takes writes while the call runs.
				stop := make(chan struct{})
				dataErrs := make(chan error, 1)
				go func() {
					var first error
					for i := 0; ; i++ {
						select {
						case <-stop:
							dataErrs <- first
							return
						case <-time.After(10 * time.Millisecond):
						}
						err := os.WriteFile(filepath.Join(data, fmt.Sprintf("rec-%d", i%50)), make([]byte, 4096), 0o644)
						if err != nil && first == nil {
							first = err
						}
					}
				}()
				res, err := b.Exec(context.Background(), backend.ExecRequest{Argv: []string{"bash", "-c", c.script}, Dir: ws, Timeout: 2 * time.Minute})
				close(stop)
				dataErr := <-dataErrs
				if err != nil {
					t.Fatal(err)
				}
				out := string(res.Stdout) + string(res.Stderr)
				free, inodes := freeOf(t, disk)
				t.Logf("%s: exit %d, limit %q, output %.300q; disk free %s → %s, inodes %d → %d; data dir writes during the call: %v",
					name, res.ExitCode, res.Limit, out, calls.Bytes(free0), calls.Bytes(free), inodes0, inodes, dataErr)
				if !strings.Contains(out, c.marker) {
					t.Fatalf("the attempt did not run: %q", out)
				}
				werr := os.WriteFile(filepath.Join(data, "after"), make([]byte, 1<<20), 0o644)
				if off {
					if strings.HasPrefix(res.Limit, diskFull) {
						t.Errorf("control: the reserve is off, yet the limit %q", res.Limit)
					}
					if c.name == "fallocate" && free > 1<<20 || c.name == "inodes" && inodes > 0 {
						t.Errorf("control: the call left %s and %d inodes free: the reserve proves nothing", calls.Bytes(free), inodes)
					}
					return
				}
				if !strings.HasPrefix(res.Limit, diskFull) {
					t.Errorf("limit %q, want %q...", res.Limit, diskFull)
				}
				if strings.Contains(out, "AFTER-ALL") {
					t.Errorf("the call ran on after going below the reserve: %q", out)
				}
				if c.name == "fallocate" && free < r.bytes {
					t.Errorf("after the call %s is free, below the reserve %s: what it preallocated was not released", calls.Bytes(free), calls.Bytes(r.bytes))
				}
				if werr != nil {
					t.Errorf("the data dir takes no 1 MiB write after the call: %v", werr)
				}
			})
		}
	}
}

// TestCPUShare: a bounded fork bomb of spinning processes runs in a CPU
// group of its own (its processes' cpu group is the call's), and a
// neighbour call's latency is measured before and during it (logged, not
// asserted). Control: with the share off (limits.cpu_share: off) the
// spinners are in the worker's own cpu group.
func TestCPUShare(t *testing.T) {
	m, err := (&Backend{}).cgroups()
	if err != nil {
		t.Fatalf("no cgroups here: %v", err)
	}
	m.Close()
	for _, off := range []bool{false, true} {
		name := "share"
		if off {
			name = "control"
		}
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			b := &Backend{Workdir: ws, Limits: calls.Limits{Processes: 64}, NoCPUShare: off}
			defer b.Close()
			neighbour := func() time.Duration {
				start := time.Now()
				res, err := b.Exec(context.Background(), backend.ExecRequest{Argv: []string{"sh", "-c", "echo NEIGHBOUR"}, Dir: ws, Timeout: time.Minute})
				if err != nil || !strings.Contains(string(res.Stdout), "NEIGHBOUR") {
					t.Errorf("the neighbour call: %v %+v", err, res)
				}
				return time.Since(start)
			}
			var before []time.Duration
			for range 5 {
				before = append(before, neighbour())
			}
			// 4 spinners per CPU, under the process bound; the call prints
			// the cpu group of one and spins for 8 s.
			n := 4 * runtime.NumCPU()
			script := fmt.Sprintf(`echo BOMB; for i in $(seq 1 %d); do sh -c 'while :; do :; done' & done; sleep 0.5; grep -E ':cpu,|:cpu:|^0::' /proc/$!/cgroup | head -1; sleep 8; kill $(jobs -p)`, n)
			done := make(chan backend.ExecResult, 1)
			go func() {
				res, err := b.Exec(context.Background(), backend.ExecRequest{Argv: []string{"bash", "-c", script}, Dir: ws, Timeout: time.Minute})
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			time.Sleep(time.Second)
			var during []time.Duration
			for range 5 {
				during = append(during, neighbour())
			}
			res := <-done
			out := string(res.Stdout)
			t.Logf("%s: %d spinners; the bomb's output %q; neighbour call latency median before %v, during %v (before %v, during %v)",
				name, n, out, median(before), median(during), before, during)
			if !strings.Contains(out, "BOMB") {
				t.Fatalf("the bomb did not run: %q %q", out, res.Stderr)
			}
			inCall := strings.Contains(out, "/call-")
			if !off && !inCall {
				t.Errorf("the spinners are not in a cpu group of the call's: %q", out)
			}
			if off && inCall {
				t.Errorf("control: the share is off, yet the spinners are in a cpu group of the call's: %q", out)
			}
		})
	}
}

// median is the middle of ds.
func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
