package child

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// SharedRoots are the trees a sandboxed process reads whole: the
// system's programs and libraries, /sys, and the sandbox's own /proc.
func SharedRoots() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/sys", "/proc"}
}

// WalkedRoots are the trees a sandboxed process reads only where anyone
// may: configuration and state hold files only root may read
// (/etc/shadow, /etc/ssl/private, /var/lib/postgresql, /var/log/auth.log).
func WalkedRoots() []string { return []string{"/etc", "/var"} }

// maxWalk bounds the entries one walk looks at: a tree beyond it is
// granted only as far as it was walked (less, never more).
const maxWalk = 200000

// worldReadable reports whether anyone may read (and, for a directory,
// enter and list) st.
func worldReadable(st *unix.Stat_t) bool {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return st.Mode&0o005 == 0o005
	case unix.S_IFREG:
		return st.Mode&0o004 != 0
	}
	return false
}

// Readable is what a walk of roots found world-readable: the paths to
// grant (a directory stands for everything beneath it), held open, and
// the directories it walked, whose changes make it stale.
type Readable struct {
	// Paths are the granted paths, in walk order.
	Paths []string
	fds   []int
	isDir []bool
	dirs  []watched
	// inotify watches every walked directory (from before it is listed):
	// an entry added, removed, renamed or chmod'ed makes the walk stale.
	// -1 when the walk is not kept (a helper's) or inotify failed: then
	// the directories' times are compared instead.
	inotify int
}

// watched is a walked directory and what it looked like.
type watched struct {
	fd         int
	mtim, ctim unix.Timespec
}

// WalkReadable walks each root and returns what of it anyone may read:
// a directory whole when everything beneath it is world-readable
// (files o+r, directories o+rx), otherwise its world-readable entries
// one by one, recursively; never an entry others may not read, nor a
// device, socket or FIFO. Links are not granted themselves: what they
// lead to is granted or not where it lies. A root that does not exist
// is skipped.
//
// With watch, inotify watches the walked directories, so Stale sees
// every change of an entry (a chmod too); without, Stale compares the
// directories' times.
func WalkReadable(roots []string, watch bool) (*Readable, error) {
	r := &Readable{inotify: -1}
	if watch {
		if fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK); err == nil {
			r.inotify = fd
		}
	}
	budget := maxWalk
	for _, root := range roots {
		whole, err := r.walk(root, &budget)
		if err != nil {
			r.Close()
			return nil, err
		}
		if whole {
			if err := r.grant(root); err != nil {
				r.Close()
				return nil, err
			}
		}
	}
	return r, nil
}

// walk looks at dir and reports whether it is readable whole; when not,
// it has granted its readable entries.
func (r *Readable) walk(dir string, budget *int) (whole bool, err error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return false, fmt.Errorf("stat %s: %w", dir, err)
	}
	if !worldReadable(&st) || st.Mode&(unix.S_ISVTX|0o002) == unix.S_ISVTX|0o002 {
		// Not for everyone, or everyone's scratch space (/var/tmp: its
		// churn would make every walk stale; tools have TMPDIR).
		unix.Close(fd)
		return false, nil
	}
	if r.inotify >= 0 {
		if _, err := unix.InotifyAddWatch(r.inotify, dir, watchMask); err != nil {
			unix.Close(r.inotify)
			r.inotify = -1
		}
	}
	r.dirs = append(r.dirs, watched{fd: fd, mtim: st.Mtim, ctim: st.Ctim})
	f, err := os.Open(dir)
	if err != nil {
		return false, nil // gone since, or not ours to list: not granted
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return false, nil
	}
	whole = true
	var parts []string
	for _, n := range names {
		*budget--
		if *budget < 0 {
			return false, nil
		}
		p := filepath.Join(dir, n)
		var est unix.Stat_t
		if err := unix.Lstat(p, &est); err != nil {
			whole = false
			continue
		}
		switch est.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			// Leads to something granted, or not, where it lies.
		case unix.S_IFDIR:
			sub, err := r.walk(p, budget)
			if err != nil {
				return false, err
			}
			if sub {
				parts = append(parts, p)
			} else {
				whole = false
			}
		case unix.S_IFREG:
			if worldReadable(&est) {
				parts = append(parts, p)
			} else {
				whole = false
			}
		default:
			whole = false
		}
	}
	if whole {
		return true, nil
	}
	for _, p := range parts {
		if err := r.grant(p); err != nil {
			return false, err
		}
	}
	return false, nil
}

// grant holds p open for a rule.
func (r *Readable) grant(p string) error {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return fmt.Errorf("stat %s: %w", p, err)
	}
	r.Paths = append(r.Paths, p)
	r.fds = append(r.fds, fd)
	r.isDir = append(r.isDir, st.Mode&unix.S_IFMT == unix.S_IFDIR)
	return nil
}

// Stale reports whether a walked directory changed since the walk (an
// entry added, removed, renamed or, with inotify, chmod'ed; its own mode
// changed).
func (r *Readable) Stale() bool {
	if r.inotify >= 0 {
		var buf [4096]byte
		n, err := unix.Read(r.inotify, buf[:])
		return n > 0 || !errors.Is(err, unix.EAGAIN)
	}
	for _, w := range r.dirs {
		var st unix.Stat_t
		if unix.Fstat(w.fd, &st) != nil || st.Mtim != w.mtim || st.Ctim != w.ctim {
			return true
		}
	}
	return false
}

// Close releases the descriptors.
func (r *Readable) Close() {
	for _, fd := range r.fds {
		unix.Close(fd)
	}
	for _, w := range r.dirs {
		unix.Close(w.fd)
	}
	if r.inotify >= 0 {
		unix.Close(r.inotify)
	}
	r.fds, r.isDir, r.dirs, r.inotify = nil, nil, nil, -1
}

// watchMask is what makes a walked directory's walk stale: an entry
// created, removed, renamed in or out, its mode or owner changed, or the
// directory itself removed or renamed.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// readCache is a zygote's walk of the walked roots, redone when stale.
type readCache struct {
	mu    sync.Mutex
	roots []string
	r     *Readable
}

// get returns the current walk, redoing it when a walked directory
// changed. The caller holds it until done with its descriptors, and
// releases it with the returned function.
func (c *readCache) get() (*Readable, func(), error) {
	c.mu.Lock()
	if c.r == nil || c.r.Stale() {
		r, err := WalkReadable(c.roots, true)
		if err != nil {
			c.mu.Unlock()
			return nil, nil, err
		}
		if c.r != nil {
			c.r.Close()
		}
		c.r = r
	}
	return c.r, c.mu.Unlock, nil
}
