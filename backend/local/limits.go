package local

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local/cgroup"
	"github.com/wardenhq/warden/backend/local/sandbox"
	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/config"
)

// DefaultLimits are the limits of a call whose profile names none
// (backend.local.limits' defaults): far above what a real build or
// install uses (go build, npm install: hundreds of processes and
// threads, a few GiB of memory, a GiB of temporary files, a few GiB
// written), and reached in a second by a fork bomb, a memory bomb or a
// disk filler. processes: 256 per CPU, at least 512 and at most 4096
// (threads included; 512 on 2 CPUs, where 4096 spinning processes took
// minutes of the machine), and no more than one per 4 MiB of RAM;
// memory the smaller of 4 GiB and half the machine's RAM, tmp 1 GiB
// (memory: charged to the call's memory), write 10 GiB. CPU time and
// the number of CPUs are unbounded (a call's timeout bounds its time,
// and a build should use every core), but each call's processes
// compete for the CPU as one group (Backend.NoCPUShare).
func DefaultLimits() calls.Limits {
	mem := int64(4 << 30)
	procs := min(max(256*int64(runtime.NumCPU()), 512), 4096)
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		ram := int64(si.Totalram) * int64(si.Unit)
		if half := ram / 2; half > 0 && half < mem {
			mem = half
		}
		if n := ram >> 22; n > 0 && n < procs {
			procs = n
		}
	}
	return calls.Limits{Processes: procs, Memory: mem, Tmp: 1 << 30, Write: 10 << 30}
}

// DefaultDiskReserve is the free space a call leaves on each file
// system it writes, by default (see reserveOf).
const DefaultDiskReserve = 1 << 30

// reserve is what a call must leave free on one file system it writes:
// bytes (free to a process without privileges, f_bavail) and inodes.
type reserve struct {
	path          string
	bytes, inodes int64
}

// reserveOf is the reserve of the file system st (of path) for a call
// that starts now, with at most want bytes kept: the smaller of want and
// a twentieth of the file system (a small disk keeps a twentieth), and
// for inodes the smaller of 65,536 and a twentieth of them. On a disk
// already below that, the call may take half of what is free. The
// watcher ends a call that goes below it; a one-call fill (a single
// fallocate) can take the rest for the poll's 20 ms before what it
// allocated is released (finish).
func reserveOf(path string, st *unix.Statfs_t, want int64) reserve {
	size := int64(st.Blocks) * st.Bsize
	free := int64(st.Bavail) * st.Bsize
	r := reserve{path: path, bytes: min(want, size/20, free/2)}
	if st.Files > 0 { // btrfs and others count no inodes
		r.inodes = min(65536, int64(st.Files)/20, int64(st.Ffree)/2)
	}
	return r
}

// below says how the file system of r is below its reserve ("" not).
func (r reserve) below() string {
	var st unix.Statfs_t
	if unix.Statfs(r.path, &st) != nil {
		return ""
	}
	if free := int64(st.Bavail) * st.Bsize; free < r.bytes {
		return fmt.Sprintf(diskFull+"the call took the free space of the file system of %s down to %s, below the %s kept for the worker and other calls, and was killed", r.path, calls.Bytes(free), calls.Bytes(r.bytes))
	}
	if st.Files > 0 && int64(st.Ffree) < r.inodes {
		return fmt.Sprintf(diskFull+"the call took the free inodes (files) of the file system of %s down to %d, below the %d kept for the worker and other calls, and was killed", r.path, st.Ffree, r.inodes)
	}
	return ""
}

// diskFull begins the limit of a call that went below a disk reserve.
const diskFull = "disk_reserve: "

// pollEvery is how often a call's limits are read while it runs.
const pollEvery = 20 * time.Millisecond

// cgroups returns the backend's cgroup manager, opening it at first use,
// or nil with the reason there is none.
func (b *Backend) cgroups() (*cgroup.Manager, error) {
	b.cgMu.Lock()
	defer b.cgMu.Unlock()
	if b.cg == nil && b.cgErr == nil {
		b.cg, b.cgErr = cgroup.Open(cgroup.Options{CPUShare: !b.NoCPUShare})
	}
	return b.cg, b.cgErr
}

// closeCgroups removes the backend's cgroups; a later call opens them
// again.
func (b *Backend) closeCgroups() error {
	b.cgMu.Lock()
	defer b.cgMu.Unlock()
	m := b.cg
	b.cg, b.cgErr = nil, nil
	if m == nil {
		return nil
	}
	return m.Close()
}

// limitsState says what holds a call's limits here, for SandboxState.
func (b *Backend) limitsState() string {
	l := b.Limits.String()
	if l == "" {
		return "limits: none (backend.local.limits turns every one off)"
	}
	share, disk := "a CPU group per call", "disk reserve "+calls.Bytes(b.diskReserve())+" (or a twentieth of the disk)"
	if b.NoCPUShare {
		share = "NO CPU group per call (limits.cpu_share: off): an unbounded call's processes compete for the CPU one by one, as the worker's threads do"
	}
	if b.diskReserve() <= 0 {
		disk = "NO disk reserve (limits.disk_reserve: off): a call may fill the disks it writes"
	}
	m, err := b.cgroups()
	if err != nil {
		return "limits " + l + " by rlimits, sized tmpfs TMPDIR, the write watcher and the " + disk + " only; no cgroups here (" + err.Error() + "): processes, memory and CPU are not bounded"
	}
	return "limits " + l + " (" + m.Describe() + ", " + share + ", rlimits, sized tmpfs TMPDIR, write watcher, " + disk + ")"
}

// diskReserve is the reserve a call leaves on the disks it writes (≤0
// none).
func (b *Backend) diskReserve() int64 {
	if b.DiskReserve == 0 {
		return DefaultDiskReserve
	}
	return b.DiskReserve
}

// CallLimits are the limits a call decided now is recorded with (its
// profile's Limits): the backend's, nil when it sets none or runs
// unsandboxed.
func (b *Backend) CallLimits() *calls.Limits {
	if b.Unsandboxed || b.Limits == (calls.Limits{}) {
		return nil
	}
	l := b.Limits
	return &l
}

// limiter holds one call to its limits: its cgroups (nil when there are
// none here), the disks it writes and what they used when it started,
// and a watcher that kills the call at a limit and says which.
type limiter struct {
	lim   calls.Limits
	g     *cgroup.Group
	disks []disk
	// reserves are the disk reserves of the file systems it writes.
	reserves []reserve
	cancel   context.CancelCauseFunc
	stop     chan struct{}
	done     chan struct{}
	// writes are the call's write paths on the disks, start when it
	// started; cache is the shared cache directory among its write paths
	// ("" none); others returns the write paths of the backend's other
	// running calls.
	writes  []string
	start   time.Time
	cache   string
	others  func() map[string]bool
	release func()
	// own and shared walk the write paths and the cache directory (larger,
	// walked less often) beside the polls; abort ends a running walk.
	own, shared walker
	abort       atomic.Bool

	mu  sync.Mutex
	hit string // the limit that ended the call
}

// disk is a file system a call writes, and its used bytes at the start.
type disk struct {
	path string
	used int64
}

// errLimit is the cause of a context a limit cancelled.
var errLimit = errors.New("local exec: a limit ended the call")

// limitCall prepares the limits of a call that writes writes (its
// private TMPDIR, tmp, excluded; cache is the shared cache directory): its cgroups, when the backend can make
// them, and the watcher. The returned context is cancelled when a
// limit ends the call.
func (b *Backend) limitCall(ctx context.Context, lim calls.Limits, writes []string, tmp, cache string) (context.Context, *limiter, error) {
	l := &limiter{lim: lim, stop: make(chan struct{}), done: make(chan struct{}), start: time.Now()}
	if lim.Processes > 0 || lim.Memory > 0 || lim.CPUs > 0 || lim.CPUTime > 0 || !b.NoCPUShare {
		if m, err := b.cgroups(); err == nil {
			if l.g, err = m.Take(lim); err != nil {
				return nil, nil, fmt.Errorf("local exec: %w", err)
			}
		}
	}
	// The write paths are kept of every call, limited or not: another
	// call's walk leaves them out.
	seen := map[unix.Fsid]bool{}
	for _, p := range writes {
		if p == tmp {
			continue
		}
		var st unix.Statfs_t
		if unix.Statfs(p, &st) != nil || st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
			continue
		}
		if p == cache {
			l.cache = p
		} else {
			l.writes = append(l.writes, p)
		}
		if seen[st.Fsid] {
			continue
		}
		seen[st.Fsid] = true
		if lim.Write > 0 {
			l.disks = append(l.disks, disk{path: p, used: used(&st)})
		}
		if want := b.diskReserve(); want > 0 {
			l.reserves = append(l.reserves, reserveOf(p, &st, want))
		}
	}
	l.own = walker{roots: l.writes, every: walkEvery}
	if l.cache != "" {
		l.shared = walker{roots: []string{l.cache}, every: 10 * walkEvery}
	}
	l.others = func() map[string]bool { return b.writesBut(l) }
	b.runMu.Lock()
	if b.running == nil {
		b.running = map[*limiter]time.Time{}
	}
	// A call that ended stays while a call that ran beside it runs: its
	// files are not that call's.
	oldest := l.start
	for o, end := range b.running {
		if end.IsZero() && o.start.Before(oldest) {
			oldest = o.start
		}
	}
	for o, end := range b.running {
		if !end.IsZero() && end.Before(oldest) {
			delete(b.running, o)
		}
	}
	b.running[l] = time.Time{}
	b.runMu.Unlock()
	l.release = func() {
		b.runMu.Lock()
		b.running[l] = time.Now()
		b.runMu.Unlock()
	}
	ctx, l.cancel = context.WithCancelCause(ctx)
	go l.watch()
	return ctx, l, nil
}

// writesBut returns the write paths of the backend's calls that ran
// beside l (running, or ended since l started).
func (b *Backend) writesBut(l *limiter) map[string]bool {
	b.runMu.Lock()
	defer b.runMu.Unlock()
	out := map[string]bool{}
	for o, end := range b.running {
		if o != l && (end.IsZero() || end.After(l.start)) {
			for _, p := range o.writes {
				out[p] = true
			}
		}
	}
	return out
}

// used is the bytes a file system has in use.
func used(st *unix.Statfs_t) int64 { return int64(st.Blocks-st.Bfree) * st.Bsize }

// request adds the call's cgroups, rlimits and TMPDIR tmpfs to r.
func (l *limiter) request(r *sandbox.Request, tmp string) []*os.File {
	r.Rlimits = l.rlimits()
	if l.lim.Tmp > 0 {
		r.Tmp, r.TmpSize = tmp, l.lim.Tmp
	}
	if l.g == nil {
		return nil
	}
	return l.g.Procs()
}

// rlimits are the call's rlimits: no file larger than limits.write.
func (l *limiter) rlimits() []sandbox.Rlimit {
	if l.lim.Write <= 0 {
		return nil
	}
	return []sandbox.Rlimit{{Resource: unix.RLIMIT_FSIZE, Cur: uint64(l.lim.Write), Max: uint64(l.lim.Write)}}
}

// watch polls the call's limits until the call ends.
func (l *limiter) watch() {
	defer close(l.done)
	if l.g == nil && len(l.disks) == 0 && len(l.reserves) == 0 {
		<-l.stop
		return
	}
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		if s := l.check(false); s != "" {
			l.end(s)
			return
		}
	}
}

// check returns the limit the call is at ("" none). While the call runs
// (wait false) a walk of its write paths runs beside the polls, which go
// on reading what its processes wrote; after it (wait true) the walk is
// waited for.
func (l *limiter) check(wait bool) string {
	if l.g != nil {
		e := l.g.Events()
		switch {
		case e.OOMKills > 0:
			return l.memory()
		case e.PidsMax > 0:
			return fmt.Sprintf("processes: the call's processes reached limits.processes (%d) and were killed", l.lim.Processes)
		}
		if l.lim.CPUTime > 0 {
			if cpu, err := l.g.CPU(); err == nil && cpu > l.lim.CPUTime {
				return fmt.Sprintf("cpu_time: the call's processes used limits.cpu_time (%s of CPU time) and were killed", l.lim.CPUTime)
			}
		}
	}
	for _, r := range l.reserves {
		if s := r.below(); s != "" {
			return s
		}
	}
	for _, d := range l.disks {
		var st unix.Statfs_t
		// Half the bound is the trigger: files freed meanwhile (by anyone)
		// hide growth.
		if unix.Statfs(d.path, &st) != nil || used(&st)-d.used <= l.lim.Write/2 {
			continue
		}
		// The file system grew past the bound: by this call's writes, not
		// another call's or another program's (with no cgroups the call's
		// processes cannot be told apart, and the growth alone counts).
		// What its processes wrote tells at once; what they allocated
		// without writing (fallocate) shows only in the files of its write
		// paths changed since it started, walked at most every walkEvery.
		if l.g == nil || l.g.Written() > l.lim.Write || l.walkedPast(wait) {
			return fmt.Sprintf(writeGrew+"the file system of %s by more than limits.write (%s) and was killed", d.path, calls.Bytes(l.lim.Write))
		}
	}
	return ""
}

// walkedPast reports whether the files of the call's write paths changed
// since it started take more than limits.write. A walk of a large write
// path (the shared cache) takes hundreds of milliseconds on a loaded
// machine, and a call writes hundreds of MiB meanwhile: while the call
// runs, each walk runs in a goroutine of its own and its result is read
// at a later poll; after it (wait), they are waited for.
func (l *limiter) walkedPast(wait bool) bool {
	l.own.poll(l, wait)
	if l.own.last <= l.lim.Write {
		l.shared.poll(l, wait)
	}
	return l.own.last+l.shared.last > l.lim.Write
}

// writeGrew begins the limit of a call whose disks grew past the bound.
const writeGrew = "write: the call grew "

// walkEvery is how often, at most, the write watcher walks the call's
// write paths (only while its disks grew by more than half the bound),
// and never more than a quarter of the time (the shared cache directory
// of a busy machine takes tens of milliseconds, ten times as long).
const walkEvery = 100 * time.Millisecond

// walker walks roots at most every every (and three times as long as its
// last walk took), one walk at a time.
type walker struct {
	roots []string
	every time.Duration
	next  time.Time
	c     chan int64 // the running walk's result (nil none)
	last  int64      // the last walk's result
}

// poll reads the result of the running walk, if it is done (or wait), and
// starts the next one when it is due.
func (w *walker) poll(l *limiter, wait bool) {
	if w.c != nil {
		if !wait {
			select {
			case w.last = <-w.c:
			default:
				return
			}
		} else {
			w.last = <-w.c
		}
		w.c = nil
	}
	if len(w.roots) == 0 || time.Now().Before(w.next) {
		return
	}
	if wait {
		w.last = w.walk(l)
		return
	}
	c := make(chan int64, 1)
	w.c = c
	go func() { c <- w.walk(l) }()
}

// drain ends a running walk whose result is not wanted.
func (w *walker) drain() {
	if w.c != nil {
		<-w.c
		w.c = nil
	}
}

// walk is what the files under w's roots changed since the call started
// take on disk (it stops counting past limits.write); it sets the next
// walk.
func (w *walker) walk(l *limiter) int64 {
	began := time.Now()
	defer func() { w.next = time.Now().Add(max(w.every, 3*time.Since(began))) }()
	roots, bound := w.roots, l.lim.Write
	// A directory another running call writes and this one was not given
	// is that call's: its files are not counted here.
	mine := map[string]bool{l.cache: l.cache != ""}
	for _, p := range l.writes {
		mine[p] = true
	}
	others := l.others()
	start := l.start.UnixNano()
	var n int64
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if l.abort.Load() {
				return filepath.SkipAll
			}
			if err != nil || n > bound {
				return filepath.SkipDir
			}
			if e.IsDir() && others[p] && !mine[p] {
				return filepath.SkipDir
			}
			if !e.Type().IsRegular() {
				return nil
			}
			var st unix.Stat_t
			if unix.Lstat(p, &st) == nil && st.Ctim.Nano() >= start {
				n += st.Blocks * 512
			}
			return nil
		})
	}
	return n
}

// fileReached is the limit of a call one of whose files reached the size
// bound.
func (l *limiter) fileReached() string {
	return fmt.Sprintf("write: a file reached limits.write (%s), the size one file may have, and its writer was stopped", calls.Bytes(l.lim.Write))
}

// fileAtBound reports whether a file of the call's write paths changed
// since it started has reached limits.write in size.
func (l *limiter) fileAtBound() bool {
	found := false
	if l.lim.Write > 0 {
		l.changedFiles(func(_ string, st *unix.Stat_t) bool {
			found = st.Size >= l.lim.Write
			return !found
		})
	}
	return found
}

// changedFiles calls fn with each regular file of the call's write paths
// changed since it started (its path and Lstat), until fn returns false.
// Files of another running call's write paths are left out.
func (l *limiter) changedFiles(fn func(p string, st *unix.Stat_t) bool) {
	mine := map[string]bool{}
	for _, p := range l.writes {
		mine[p] = true
	}
	others := l.others()
	start := l.start.UnixNano()
	stop := false
	for _, root := range l.writes {
		_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return filepath.SkipDir
			}
			if e.IsDir() && others[p] && !mine[p] {
				return filepath.SkipDir
			}
			if !e.Type().IsRegular() {
				return nil
			}
			var st unix.Stat_t
			if unix.Lstat(p, &st) != nil || st.Ctim.Nano() < start {
				return nil
			}
			if !fn(p, &st) {
				stop = true
				return filepath.SkipAll
			}
			return nil
		})
		if stop {
			return
		}
	}
}

// releasePrealloc frees the blocks allocated past the end of the files
// of the call's write paths changed since it started
// (fallocate(FALLOC_FL_KEEP_SIZE) takes blocks and leaves the size): a
// truncate to the file's own size frees them and changes no byte. It
// returns the bytes freed and the files they were in. Files of another
// running call's write paths are left alone.
func (l *limiter) releasePrealloc() (freed int64, files int) {
	l.changedFiles(func(p string, st *unix.Stat_t) bool {
		// Blocks past the size rounded up to whole blocks.
		end := (st.Size + st.Blksize - 1) / st.Blksize * st.Blksize
		if st.Blocks*512 <= end {
			return true
		}
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return true
		}
		defer unix.Close(fd)
		var now unix.Stat_t
		if unix.Fstat(fd, &now) != nil || now.Ino != st.Ino || unix.Ftruncate(fd, now.Size) != nil {
			return true
		}
		if unix.Fstat(fd, &now) == nil && now.Blocks < st.Blocks {
			freed += (st.Blocks - now.Blocks) * 512
			files++
		}
		return true
	})
	return freed, files
}

func (l *limiter) memory() string {
	return fmt.Sprintf("memory: the call's processes reached limits.memory (%s) and were killed", calls.Bytes(l.lim.Memory))
}

// end records the limit s and kills the call.
func (l *limiter) end(s string) {
	l.mu.Lock()
	if l.hit == "" {
		l.hit = s
	}
	l.mu.Unlock()
	if l.g != nil {
		l.g.Kill()
	}
	l.cancel(errLimit)
}

// limited reports the limit that ended the call, "" none.
func (l *limiter) limited() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hit
}

// finish stops the watcher once the call has ended, looks at what the
// call ran into (the events of its groups, a full TMPDIR, a file at the
// size bound) and removes its groups. It sets res.Limit and turns the
// error of a call a limit ended into its result.
func (l *limiter) finish(ctx context.Context, res *backend.ExecResult, err error, tmp sandbox.Result) error {
	close(l.stop)
	<-l.done
	defer l.cancel(nil)
	defer l.release()
	if l.g != nil {
		defer func() {
			if rerr := l.g.Remove(); rerr != nil && err == nil {
				err = rerr
			}
		}()
	}
	s := l.limited()
	// A call that ended well is not blamed on a limit it came near.
	if s == "" && ctx.Err() == nil && res.ExitCode != 0 {
		s = l.check(true)
		if s == "" {
			s = l.after(res, tmp)
		}
	}
	// A file stopped at the size bound is what stopped its writer, even
	// when the watcher (or the last check above) then found the disk
	// grown past the bound by that file's blocks. The watcher may see the
	// file's blocks (and the file system's own writes for them) before
	// its writer gets SIGXFSZ: a file of the call's at the bound says the
	// same.
	if strings.HasPrefix(s, writeGrew) {
		if a := l.after(res, tmp); strings.HasPrefix(a, "write: ") {
			s = a
		} else if l.fileAtBound() {
			s = l.fileReached()
		}
	}
	// A disk below its reserve gets back what the call allocated past its
	// files' ends, even when the call ended before the watcher saw it (a
	// fallocate whose failure it ignored).
	below := strings.HasPrefix(s, diskFull)
	for _, r := range l.reserves {
		if !below {
			if b := r.below(); b != "" {
				below, s = true, cmp.Or(s, b)
			}
		}
	}
	if below {
		if n, files := l.releasePrealloc(); n > 0 {
			s += fmt.Sprintf("; %s it allocated past the end of %d files was released", calls.Bytes(n), files)
		}
	}
	// A walk still running is not needed any more.
	l.abort.Store(true)
	l.own.drain()
	l.shared.drain()
	if s == "" {
		return err
	}
	res.Limit = s
	if errors.Is(context.Cause(ctx), errLimit) {
		err = nil
		if res.ExitCode == 0 {
			res.ExitCode = -1
		}
	}
	return err
}

// after reads what the process's end says of the limits without a
// watcher: a file that reached limits.write (SIGXFSZ: the shell reports
// it), a TMPDIR that is full, or a write that found no space while the
// disks had it (the TMPDIR, then).
func (l *limiter) after(res *backend.ExecResult, tmp sandbox.Result) string {
	out := append(append([]byte{}, res.Stdout...), res.Stderr...)
	if l.lim.Write > 0 && (res.ExitCode == 128+int(syscall.SIGXFSZ) || tmp.Signal == syscall.SIGXFSZ || bytes.Contains(out, []byte("File size limit exceeded"))) {
		return l.fileReached()
	}
	// A program that ignores SIGXFSZ (Python does) gets EFBIG instead.
	if l.lim.Write > 0 && res.ExitCode != 0 && bytes.Contains(bytes.ToLower(out), []byte(syscall.EFBIG.Error())) {
		return fmt.Sprintf("write: a write past limits.write (%s), the size one file may have, was refused (file too large)", calls.Bytes(l.lim.Write))
	}
	if l.lim.Tmp > 0 {
		if tmp.TmpUsed > 0 && tmp.TmpFree < max(l.lim.Tmp/100, 64<<10) {
			return fmt.Sprintf("tmp: the call's TMPDIR, a tmpfs of limits.tmp (%s), is full", calls.Bytes(l.lim.Tmp))
		}
		if bytes.Contains(bytes.ToLower(out), []byte(syscall.ENOSPC.Error())) {
			return fmt.Sprintf("tmp: a write found no space left on device: the call's TMPDIR is a tmpfs of limits.tmp (%s)", calls.Bytes(l.lim.Tmp))
		}
	}
	return ""
}

// ConfigShares are what backend.local.limits says of what a call shares
// with the worker and the calls beside it: whether each call gets a CPU
// group (cpu_share) and the disk reserve (disk_reserve; -1 off, 0 the
// default), for Backend.NoCPUShare and Backend.DiskReserve.
func ConfigShares(l config.LocalLimits) (noCPUShare bool, diskReserve int64, err error) {
	v, err := l.Values()
	if err != nil {
		return false, 0, err
	}
	if v.CPUShare != nil {
		noCPUShare = !*v.CPUShare
	}
	if v.DiskReserve != nil {
		diskReserve = *v.DiskReserve
		if diskReserve == 0 {
			diskReserve = -1
		}
	}
	return noCPUShare, diskReserve, nil
}

// ConfigLimits are the limits backend.local.limits sets, over
// DefaultLimits.
func ConfigLimits(l config.LocalLimits) (calls.Limits, error) {
	v, err := l.Values()
	if err != nil {
		return calls.Limits{}, err
	}
	out := DefaultLimits()
	for _, f := range []struct {
		v   *int64
		dst *int64
	}{{v.Processes, &out.Processes}, {v.Memory, &out.Memory}, {v.Tmp, &out.Tmp}, {v.Write, &out.Write}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if v.CPUTime != nil {
		out.CPUTime = *v.CPUTime
	}
	if v.CPUs != nil {
		out.CPUs = *v.CPUs
	}
	return out, nil
}
