package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/backend"
)

// The file operations run inside the worker process, so they are held
// to what a sandboxed process could do:
//
//   - the worker's own /proc entries (/proc/self, /proc/thread-self,
//     /proc/<pid>) are refused: they would be the worker's, not a tool's;
//   - a hidden path (the data directory, the config file) is refused,
//     however it is reached: by its name, or by identity (device and
//     inode, hidden), so a hidden file or directory renamed, or one
//     of its ancestors, is still refused under its new name, and a
//     hidden file replaced by rename is refused as its new inode;
//   - only regular files are read or written (a FIFO, socket or device
//     is refused, opened without blocking), and reads are bounded in
//     size before a byte is read (ReadFileLimit);
//   - a path is acted on as the file it resolves to, and a link that
//     resolves outside the call's working directories is refused, so the
//     model names the target and the call is decided as that path;
//   - the resolved path is opened with no link allowed on the way
//     (openat2 RESOLVE_NO_SYMLINKS), so a link swapped in after the check
//     is not followed;
//   - a file with more than one hard link is refused when it is one of
//     the hidden files, and refused for writing always: its other names
//     may be outside the working directories.

// refused is the error of an operation the backend will not do; tools
// show its text to the model.
func refused(format string, args ...any) error {
	return fmt.Errorf("local: refused: "+format, args...)
}

// op is what a file operation does with a path.
type op int

const (
	opRead  op = iota // read a file
	opWrite           // write a file
	opList            // list a directory, or stat a path
)

// resolve checks path for an operation and returns the path to act on.
func (b *Backend) resolve(ctx context.Context, path string, o op) (string, error) {
	write := o == opWrite
	clean := filepath.Clean(path)
	if !filepath.IsAbs(clean) {
		clean = filepath.Join(b.Workdir, clean)
	}
	if procEntry(clean) {
		return "", refused("%s is a /proc entry of the worker process; the file tools run inside the worker, so they do not read processes (use Bash, which runs in its own sandbox)", path)
	}
	real, err := realPath(clean)
	if err != nil {
		return "", err
	}
	if procEntry(real) {
		return "", refused("%s leads to %s, a /proc entry of the worker process", path, real)
	}
	h := b.hidden(false)
	if h.covers(clean) || h.covers(real) || h.ids.holds(real) {
		return "", refused("%s is one of the worker's own files (its data directory or config); no tool can read or write it", path)
	}
	if real != clean {
		dirs := b.dirs(ctx)
		if !insideAny(real, dirs) {
			verb := "read"
			if write {
				verb = "write"
			}
			return "", refused("%s is a link to %s, outside the working directories (%s); to %s it, name %s itself so the call is decided as that path",
				path, real, strings.Join(dirs, ", "), verb, real)
		}
	}
	if o != opList || !b.confinedFiles() {
		return real, nil // a file is checked against the profile once known to be one (holds)
	}
	a, err := b.access(ctx)
	if err != nil {
		return "", err
	}
	if !under(real, a.hide) && a.leadsToReadable(real) {
		return real, nil // listed, showing only what the call may read (ListDir)
	}
	if err := a.check(path, real, false); err != nil {
		return "", err
	}
	return real, nil
}

// holds checks the file real (path resolved) against the call's profile
// for a read or, with write, a write (fileaccess.go), when the file
// operations hold it.
func (b *Backend) holds(ctx context.Context, path, real string, write bool) error {
	if !b.confinedFiles() {
		return nil
	}
	a, err := b.access(ctx)
	if err != nil {
		return err
	}
	return a.check(path, real, write)
}

// dirs are the working directories of the call ctx is bound to (the
// backend's workdir when its profile names none).
func (b *Backend) dirs(ctx context.Context) []string {
	if s := b.profile(ctx); len(s.Dirs) > 0 {
		return realPaths(s.Dirs)
	}
	return realPaths([]string{b.Workdir})
}

// realPath resolves every link in p. A path that does not exist yet
// resolves through its deepest existing ancestor; a dangling link is an
// error (writing through it would create its target).
func realPath(p string) (string, error) {
	r, err := filepath.EvalSymlinks(p)
	if err == nil {
		return r, nil
	}
	if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return "", refused("%s is a link whose target does not exist", p)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", wrap(err)
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p, nil
	}
	rp, err := realPath(parent)
	if err != nil {
		return "", err
	}
	return filepath.Join(rp, filepath.Base(p)), nil
}

// procEntry reports whether p is a process's entry in /proc (or below
// one): /proc/self, /proc/thread-self or /proc/<pid>.
func procEntry(p string) bool {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return false
	}
	first, _, _ := strings.Cut(rest, "/")
	if first == "self" || first == "thread-self" {
		return true
	}
	_, err := strconv.Atoi(first)
	return err == nil
}

// covers reports whether p is one of the hidden paths (as resolved at
// the snapshot) or below one.
func (h *hiddenSnap) covers(p string) bool {
	return insideAny(p, h.reals)
}

func insideAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if within(p, d) {
			return true
		}
	}
	return false
}

// open opens the resolved path real with no link on the way.
func open(real string, flags int, mode os.FileMode) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, real, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Mode:    uint64(mode.Perm()),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ELOOP) {
		return nil, refused("%s changed into a link while it was being opened", real)
	}
	if err != nil {
		return nil, wrap(&fs.PathError{Op: "open", Path: real, Err: err})
	}
	return os.NewFile(uintptr(fd), real), nil
}

// checkOpened checks the file f opened for path: a regular file, not
// one of the hidden files (by identity), and, with several hard links,
// not a link to one of them nor to be written. It returns f's status.
func (b *Backend) checkOpened(f *os.File, path string, write bool) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return st, wrap(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return st, notRegular(path, modeOf(st.Mode))
	}
	if b.hidden(false).ids.has(st.Dev, st.Ino) {
		return st, refused("%s is one of the worker's own files (its data directory or config); no tool can read or write it", path)
	}
	if st.Nlink <= 1 {
		return st, nil
	}
	if write {
		return st, refused("%s has %d hard links; its other names may be outside the working directories, so it is not written through this one", path, st.Nlink)
	}
	if b.hiddenInode(st.Dev, st.Ino) {
		return st, refused("%s is a hard link to one of the worker's own files", path)
	}
	return st, nil
}

// notRegular is the error of a file tool given a path that is not a
// regular file.
func notRegular(path string, m fs.FileMode) error {
	kind := "not a regular file"
	switch {
	case m&fs.ModeNamedPipe != 0:
		kind = "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeSymlink != 0:
		kind = "a link"
	}
	return fmt.Errorf("local: refused: %s is %s; the file tools read and write regular files only (use Bash for others): %w", path, kind, backend.ErrNotRegular)
}

// modeOf is the fs.FileMode type bits of a stat mode.
func modeOf(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return 0
}

// fileID is a file's identity: its device and inode.
type fileID struct{ dev, ino uint64 }

// idSet is a set of identities.
type idSet map[fileID]struct{}

// has reports whether (dev, ino) is in s.
func (s idSet) has(dev, ino uint64) bool {
	_, ok := s[fileID{dev, ino}]
	return ok
}

// holds reports whether real (a resolved path) or one of its existing
// ancestors is in s.
func (s idSet) holds(real string) bool {
	if len(s) == 0 {
		return false
	}
	for p := filepath.Clean(real); ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && s.has(st.Dev, st.Ino) {
			return true
		}
		if p == "/" || p == "." {
			return false
		}
	}
}

// maxHiddenIDs bounds the identities remembered: past it, only the
// hidden paths' current ones are kept.
const maxHiddenIDs = 4096

// hiddenTTL is how long a snapshot of the hidden paths serves the file
// operations before they stat them again (every process a call starts
// takes a fresh one first): a Grep over 10,000 files does not stat them
// 20,000 times.
const hiddenTTL = 100 * time.Millisecond

// hiddenSnap is what the hidden paths were at one moment: their
// resolved paths, and every identity they have had since the backend's
// first use. It is not changed once made.
type hiddenSnap struct {
	at    time.Time
	reals []string
	ids   idSet
}

// hidden returns the snapshot of the hidden paths, taken again when it
// is older than hiddenTTL or force is set: each hidden path is resolved
// and stat-ed, and its identity added to those it had, so a hidden file
// or directory that was renamed (its old name is gone, its inode is the
// same) or replaced by rename (the new inode is the hidden path's now)
// is known either way. A handful of stats.
func (b *Backend) hidden(force bool) *hiddenSnap {
	b.idMu.Lock()
	defer b.idMu.Unlock()
	if old := b.snap; old != nil && !force && time.Since(old.at) < hiddenTTL {
		return old
	}
	ids := idSet{}
	if b.snap != nil && len(b.snap.ids) <= maxHiddenIDs {
		ids = maps.Clone(b.snap.ids)
	}
	for _, h := range b.Hide {
		var st unix.Stat_t
		if unix.Stat(h, &st) == nil {
			ids[fileID{st.Dev, st.Ino}] = struct{}{}
		}
	}
	b.snap = &hiddenSnap{at: time.Now(), reals: realPaths(b.Hide), ids: ids}
	return b.snap
}

// hiddenInode reports whether (dev, ino) is a file of the hidden paths
// (searched three levels deep, at most 10,000 entries: keys and
// config sit near the top).
func (b *Backend) hiddenInode(dev, ino uint64) bool {
	seen := 0
	var found bool
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		if found || seen > 10000 {
			return
		}
		seen++
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return
		}
		if st.Dev == dev && st.Ino == ino {
			found = true
			return
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || depth == 0 {
			return
		}
		entries, _ := os.ReadDir(p)
		for _, e := range entries {
			walk(filepath.Join(p, e.Name()), depth-1)
		}
	}
	for _, h := range realPaths(b.Hide) {
		walk(h, 3)
	}
	return found
}
