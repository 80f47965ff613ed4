package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/permission"
)

// kind is what an indexed entry is to the guard (bits: an entry may be
// several).
type kind uint8

const (
	// kindGit is a .git entry: a directory, a file or a link.
	kindGit kind = 1 << iota
	// kindSensitive matches a sensitive path pattern (.env, keys):
	// hidden from a call unless granted.
	kindSensitive
	// kindDangerous is one of the analyser's dangerous files or
	// directories (.bashrc, .vscode): read-only unless granted.
	kindDangerous
	// kindRepo is the HEAD of a directory git would take as a git
	// directory of its own (a bare repository: HEAD with objects and
	// refs, or HEAD with a commondir), wherever it lies: git finds it
	// when run in that directory.
	kindRepo
)

// entry is an indexed entry of interest.
type entry struct {
	kind kind
	// mode is its file type (os.ModeDir, os.ModeSymlink, 0 for a file).
	mode     os.FileMode
	dev, ino uint64
}

// dirNode is an indexed directory.
type dirNode struct {
	wd int32 // its inotify watch, -1 when unwatched
	// stamp is the directory's modification and change times when it
	// was read, and read when: an unwatched directory is read again
	// when they changed, or were too recent to tell a later change by.
	stamp, read int64
	subdirs     map[string]bool // the child directories indexed beneath it
	marks       map[string]entry
}

// index knows the entries of interest (kind) in the working directories
// the backend's calls ran in. It is refreshed incrementally: every
// indexed directory is watched with inotify for entries created,
// removed or renamed in it (content writes do not matter: names do),
// and a refresh re-reads only the directories an event named. Without
// inotify (or when the kernel's queue overflowed, or a watch could not
// be added) a refresh walks everything again. Safe for concurrent use.
type index struct {
	mu    sync.Mutex
	match *matcher
	fd    int // the inotify instance, -1 when there is none
	// full makes the next refresh walk every root again.
	full   bool
	roots  []string
	dirs   map[string]*dirNode
	wds    map[int32]string
	polled map[string]bool  // the directories no watch covers
	marked map[string]entry // full path -> entry
	buf    []byte           // for the events
	// version counts the changes of marked; snaps are the last lists
	// refresh returned, by roots.
	version uint64
	snaps   map[string]snapshot
	// running are the calls between their guard and their check, each
	// with the calls that ran at the same time (begin, end).
	running map[*guardCall][]*guardCall
	// fresh are the directories refreshes found new in an indexed
	// directory (the roots of new trees) since the first of the running
	// calls began: a call's check finds there what it created when the
	// working directories grew past the bound (guardCall.flood).
	fresh []string
	// aside are trees the guard moved aside in place (quarantine could
	// not move them out of the working directories): not indexed.
	aside map[string]bool
	// maxDirs bounds the directories indexed (maxIndexedDirs when 0).
	maxDirs int
}

// errTooManyDirs is refresh's error when the working directories hold
// more directories than the index may hold.
var errTooManyDirs = errors.New("more directories than the repository guard can check")

// bound is the most directories the index holds.
func (x *index) bound() int {
	if x.maxDirs > 0 {
		return x.maxDirs
	}
	return maxIndexedDirs
}

// begin records that g runs, alongside the calls running now.
func (x *index) begin(g *guardCall) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.running == nil {
		x.running = map[*guardCall][]*guardCall{}
	}
	if len(x.running) == 0 {
		x.fresh = nil
	}
	g.freshFrom = len(x.fresh)
	var peers []*guardCall
	for o := range x.running {
		x.running[o] = append(x.running[o], g)
		peers = append(peers, o)
	}
	x.running[g] = peers
}

// end records that g ran, and returns the calls that ran at the same
// time (in overlapping working directories).
func (x *index) end(g *guardCall) []*guardCall {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []*guardCall
	for _, o := range x.running[g] {
		if slices.ContainsFunc(o.dirs, func(d string) bool { return under(d, g.dirs) }) ||
			slices.ContainsFunc(g.dirs, func(d string) bool { return under(d, o.dirs) }) {
			out = append(out, o)
		}
	}
	delete(x.running, g)
	return out
}

// snapshot is the list of marked entries inside some roots, sorted by
// path, at a version of the index.
type snapshot struct {
	version uint64
	list    []marked
}

// marked is one marked entry.
type marked struct {
	path string
	entry
}

// newIndex returns an empty index matching sensitive and dangerous
// names with m.
func newIndex(m *matcher) *index {
	x := &index{match: m, dirs: map[string]*dirNode{}, wds: map[int32]string{}, polled: map[string]bool{}, marked: map[string]entry{}}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		fd = -1
	}
	x.fd = fd
	return x
}

// close releases the inotify instance.
func (x *index) close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.fd >= 0 {
		_ = unix.Close(x.fd)
		x.fd = -1
	}
}

// watchMask is what a directory's watch reports: names appearing and
// disappearing in it, and the directory itself going.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// refresh brings the index up to date for roots (clean absolute paths)
// and returns the marked entries inside them. The snapshot is shared:
// read-only to the caller.
func (x *index) refresh(roots []string) (snapshot, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, r := range roots {
		if !slices.Contains(x.roots, r) {
			x.roots = append(x.roots, r)
		}
	}
	dirty, err := x.events()
	if err != nil {
		return snapshot{}, err
	}
	if x.full {
		// Events were lost: read every indexed directory again (what
		// is new in them is found new, as from events).
		x.full = false
		dirty = dirty[:0]
		for d := range x.dirs {
			dirty = append(dirty, d)
		}
	}
	// The directories no watch covers (no inotify, or out of watches):
	// read again those whose times changed.
	for d := range x.polled {
		if node := x.dirs[d]; node != nil && (stampOf(d) != node.stamp || node.stamp >= node.read-racyWindow) {
			dirty = append(dirty, d)
		}
	}
	// Parents first: a directory a parent's re-read dropped or walked
	// afresh needs nothing more.
	slices.SortFunc(dirty, func(a, b string) int { return len(a) - len(b) })
	done := map[string]bool{}
	for _, d := range dirty {
		if done[d] || x.dirs[d] == nil {
			continue
		}
		x.reread(d, done)
	}
	for _, r := range x.roots {
		if x.dirs[r] == nil {
			x.walk(r, done)
		}
	}
	if len(x.dirs) > x.bound() {
		// Fail closed: what is not indexed cannot be guarded. While a
		// call runs the index stays as far as it got (what is new in it
		// is in fresh, for the check of the call that made it) and the
		// next refresh reads every directory again; otherwise it is
		// dropped.
		n := len(x.dirs)
		if len(x.running) > 0 {
			x.full = true
		} else {
			for _, r := range x.roots {
				x.drop(r)
			}
			x.roots = nil
		}
		return snapshot{}, fmt.Errorf("the working directories %s hold %d directories or more, more than the %d the sandbox can guard; name smaller working directories: %w", strings.Join(roots, ", "), n, x.bound(), errTooManyDirs)
	}
	key := strings.Join(roots, "\x00")
	if snap, ok := x.snaps[key]; ok && snap.version == x.version {
		return snap, nil
	}
	snap := snapshot{version: x.version}
	for p, e := range x.marked {
		if under(p, roots) {
			snap.list = append(snap.list, marked{p, e})
		}
	}
	slices.SortFunc(snap.list, func(a, b marked) int { return strings.Compare(a.path, b.path) })
	if x.snaps == nil || len(x.snaps) > 64 {
		x.snaps = map[string]snapshot{}
	}
	x.snaps[key] = snap
	return snap, nil
}

// maxIndexedDirs bounds the index: working directories holding more
// directories (a home directory, the root) fail the call rather than
// take minutes and every inotify watch of the user.
const maxIndexedDirs = 250_000

// racyWindow is how close to its reading a directory's time may be for
// a change in the same clock tick to go unseen (the kernel stamps with
// a coarse clock).
const racyWindow = int64(20 * time.Millisecond)

// stampOf combines the directory d's modification and change times (0
// when it cannot be read).
func stampOf(d string) int64 {
	var st unix.Stat_t
	if unix.Lstat(d, &st) != nil {
		return 0
	}
	return max(st.Mtim.Nano(), st.Ctim.Nano())
}

// events drains the inotify queue and returns the directories whose
// entries changed.
func (x *index) events() ([]string, error) {
	if x.fd < 0 {
		return nil, nil
	}
	var dirty []string
	if x.buf == nil {
		x.buf = make([]byte, 64<<10)
	}
	buf := x.buf
	for {
		n, err := unix.Read(x.fd, buf)
		if errors.Is(err, unix.EAGAIN) || n == 0 {
			return dirty, nil
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				x.full = true
				continue
			}
			p, ok := x.wds[ev.Wd]
			if !ok {
				continue
			}
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(x.wds, ev.Wd)
				if n := x.dirs[p]; n != nil && n.wd == ev.Wd {
					n.wd = -1
					x.polled[p] = true
				}
			}
			if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 {
				dirty = append(dirty, filepath.Dir(p))
			}
			dirty = append(dirty, p)
		}
	}
}

// reread reads the directory d again: its marks, and its child
// directories (new ones walked, gone ones dropped).
func (x *index) reread(d string, done map[string]bool) {
	done[d] = true
	node := x.dirs[d]
	node.stamp, node.read = stampOf(d), time.Now().UnixNano()
	subs, marks, err := x.read(d)
	if err != nil {
		x.drop(d)
		return
	}
	for name := range node.subdirs {
		if !subs[name] {
			x.drop(filepath.Join(d, name))
		}
	}
	x.setMarks(d, node, marks)
	for name := range subs {
		p := filepath.Join(d, name)
		if !node.subdirs[name] || x.dirs[p] == nil {
			if !node.subdirs[name] && !x.aside[p] {
				x.fresh = append(x.fresh, p)
			}
			x.walk(p, done)
		}
	}
	node.subdirs = subs
}

// walk indexes the tree at root afresh.
func (x *index) walk(root string, done map[string]bool) {
	stack := []string{root}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x.dirs[d] != nil {
			x.drop(d)
		}
		if len(x.dirs) > x.bound() {
			return // refresh fails the call
		}
		if d == "/proc" || d == "/sys" || d == "/dev" || x.aside[d] {
			continue // kernel file systems: nothing of a workspace's
		}
		node := &dirNode{wd: -1}
		if x.fd >= 0 {
			// The watch first, then the listing: nothing created in
			// between goes unseen.
			wd, err := unix.InotifyAddWatch(x.fd, d, watchMask)
			if err == nil {
				node.wd = int32(wd)
				x.wds[node.wd] = d
			}
			// Out of watches: the directory is polled (stampOf).
		}
		node.stamp, node.read = stampOf(d), time.Now().UnixNano()
		subs, marks, err := x.read(d)
		if err != nil {
			if node.wd >= 0 {
				_, _ = unix.InotifyRmWatch(x.fd, uint32(node.wd))
				delete(x.wds, node.wd)
			}
			continue
		}
		node.subdirs = subs
		x.dirs[d] = node
		if node.wd < 0 {
			x.polled[d] = true
		}
		done[d] = true
		x.setMarks(d, node, marks)
		for name := range subs {
			stack = append(stack, filepath.Join(d, name))
		}
	}
}

// drop forgets the tree at d.
func (x *index) drop(d string) {
	node := x.dirs[d]
	if node == nil {
		return
	}
	delete(x.dirs, d)
	delete(x.polled, d)
	if node.wd >= 0 && x.wds[node.wd] == d {
		_, _ = unix.InotifyRmWatch(x.fd, uint32(node.wd))
		delete(x.wds, node.wd)
	}
	for name := range node.marks {
		delete(x.marked, filepath.Join(d, name))
		x.version++
	}
	for name := range node.subdirs {
		x.drop(filepath.Join(d, name))
	}
}

// setMarks replaces the marks of the directory d.
func (x *index) setMarks(d string, node *dirNode, marks map[string]entry) {
	if len(node.marks) == 0 && len(marks) == 0 {
		return
	}
	x.version++
	for name := range node.marks {
		delete(x.marked, filepath.Join(d, name))
	}
	node.marks = marks
	for name, e := range marks {
		x.marked[filepath.Join(d, name)] = e
	}
}

// read lists the directory d: its child directories to index and its
// entries of interest. It does not descend into .git (the guard reads
// what it needs there) nor into a sensitive directory (hidden whole).
func (x *index) read(d string) (subs map[string]bool, marks map[string]entry, err error) {
	// Raw getdents: an os.File would register the directory with the
	// runtime's poller, three more system calls per directory.
	fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: d, Err: err}
	}
	defer unix.Close(fd)
	subs = map[string]bool{}
	// What makes d a git directory (gitDirShape).
	var shape gitDirShape
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, nil, &os.PathError{Op: "getdents", Path: d, Err: err}
		}
		if n <= 0 {
			if shape.repo() {
				p := d + "/HEAD"
				if fi, err := os.Lstat(p); err == nil {
					en := entry{kind: kindRepo, mode: fi.Mode().Type()}
					en.dev, en.ino = ids(fi)
					if marks == nil {
						marks = map[string]entry{}
					}
					marks["HEAD"] = en
				}
			}
			return subs, marks, nil
		}
		for off := 0; off < n; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			rec := buf[off:n]
			if len(rec) < 20 {
				break
			}
			reclen := int(rec[16]) | int(rec[17])<<8
			if reclen < 20 || reclen > len(rec) {
				break
			}
			typ, nameb := rec[18], rec[19:reclen]
			off += reclen
			if i := bytes.IndexByte(nameb, 0); i >= 0 {
				nameb = nameb[:i]
			}
			name := string(nameb)
			if name == "." || name == ".." {
				continue
			}
			p := d + "/" + name
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Lstat(p, &st) != nil {
					continue
				}
				if st.Mode&unix.S_IFMT == unix.S_IFDIR {
					typ = unix.DT_DIR
				}
			}
			dir := typ == unix.DT_DIR
			shape.see(name)
			k := x.match.kind(p, name, dir)
			if k != 0 {
				fi, err := os.Lstat(p)
				if err != nil {
					continue // gone meanwhile: the event will say so
				}
				en := entry{kind: k, mode: fi.Mode().Type()}
				en.dev, en.ino = ids(fi)
				if marks == nil {
					marks = map[string]entry{}
				}
				marks[name] = en
			}
			if dir && k&(kindGit|kindSensitive) == 0 {
				subs[name] = true
			}
		}
	}
}

// gitDirShape is what of a git directory's entries a directory holds:
// git takes a directory as a git directory when it has a HEAD and
// either objects and refs directories or a commondir file (git's
// is_git_directory; HEAD's content is not looked at: a HEAD git would
// refuse today a later write could fix).
type gitDirShape struct{ head, objects, refs, commondir bool }

// see notes the entry name (of any type: git follows links, and a
// directory's name alone costs a mount at most).
func (s *gitDirShape) see(name string) {
	switch name {
	case "HEAD":
		s.head = true
	case "objects":
		s.objects = true
	case "refs":
		s.refs = true
	case "commondir":
		s.commondir = true
	}
}

func (s gitDirShape) repo() bool { return s.head && (s.objects && s.refs || s.commondir) }

// ids are the device and inode of fi.
func ids(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Dev, st.Ino
	}
	return 0, 0
}

// matcher tells the sensitive and dangerous names from the rest: the
// policy's sensitive path patterns, compiled to cheap tests for the
// common shapes ("**/.env", "**/*.pem", "**/.docker/config.json"), and
// the analyser's dangerous files and directories.
type matcher struct {
	base      map[string]bool // "**/name"
	baseGlobs []segGlob       // "**/glob" of one segment
	tails     [][]segGlob     // "**/a/b": the last segments
	full      []fullPattern   // the rest, matched on the whole path
	files     []string        // the analyser's dangerous files
	dirGlobs  []string        // those of them that name a directory ("x/**")
	dirs      []string        // the analyser's dangerous directories, .git apart
}

type fullPattern struct{ pat, prefix string }

// newMatcher compiles the sensitive patterns (the defaults and extra)
// and the default dangerous lists. A pattern that names a directory
// ("x{,/**}", "x/**") matches the directory itself: hiding it hides
// what it holds.
func newMatcher(extra []string) *matcher {
	m := &matcher{base: map[string]bool{}, files: permission.DefaultDangerousFiles()}
	for _, f := range m.files {
		if strings.HasSuffix(f, "/**") {
			m.dirGlobs = append(m.dirGlobs, f)
		}
	}
	for _, d := range permission.DefaultDangerousDirs() {
		if d != ".git" {
			m.dirs = append(m.dirs, d)
		}
	}
	home, _ := os.UserHomeDir()
	for _, pat := range append(permission.DefaultSensitivePaths(), extra...) {
		if strings.HasPrefix(pat, "~/") {
			if home == "" {
				continue
			}
			pat = path.Join(home, pat[2:])
		}
		pat = strings.TrimSuffix(strings.TrimSuffix(pat, "{,/**}"), "/**")
		rest, ok := strings.CutPrefix(pat, "**/")
		if !ok || strings.ContainsAny(rest, "{\\") || strings.Contains(rest, "**") {
			prefix := pat
			if i := strings.IndexAny(pat, "*?[{\\"); i >= 0 {
				prefix = pat[:i]
			}
			m.full = append(m.full, fullPattern{pat: pat, prefix: prefix})
			continue
		}
		segs := strings.Split(rest, "/")
		switch {
		case len(segs) > 1:
			var t []segGlob
			for _, sg := range segs {
				t = append(t, newSegGlob(sg))
			}
			m.tails = append(m.tails, t)
		case strings.ContainsAny(rest, "*?["):
			m.baseGlobs = append(m.baseGlobs, newSegGlob(rest))
		default:
			m.base[rest] = true
		}
	}
	return m
}

// kind classifies the entry p (named name; dir when a directory).
func (m *matcher) kind(p, name string, dir bool) kind {
	if name == ".git" {
		return kindGit
	}
	var k kind
	if m.sensitive(p, name) {
		k |= kindSensitive
	}
	if dir {
		for _, d := range m.dirs {
			if strings.EqualFold(name, d) {
				k |= kindDangerous
			}
		}
		// A dangerous directory pattern (".github/workflows/**")
		// names the directory itself too.
		if k&kindDangerous == 0 && permission.IsDangerousPath(p, m.dirGlobs, nil) {
			k |= kindDangerous
		}
	} else if permission.IsDangerousPath(p, m.files, nil) {
		k |= kindDangerous
	}
	return k
}

// sensitive reports whether the path p (base name name) matches a
// sensitive pattern.
func (m *matcher) sensitive(p, name string) bool {
	if m.base[name] {
		return true
	}
	for _, g := range m.baseGlobs {
		if g.match(name) {
			return true
		}
	}
	for _, segs := range m.tails {
		if !segs[len(segs)-1].match(name) {
			continue
		}
		rest := p
		match := true
		for i := len(segs) - 1; i >= 0 && match; i-- {
			j := strings.LastIndexByte(rest, '/')
			if j < 0 {
				match = false
				break
			}
			match, rest = segs[i].match(rest[j+1:]), rest[:j]
		}
		if match {
			return true
		}
	}
	for _, f := range m.full {
		if !strings.HasPrefix(p, f.prefix) && !strings.HasPrefix(f.prefix, p) {
			continue
		}
		if ok, _ := doublestar.Match(f.pat, p); ok {
			return true
		}
	}
	return false
}

// segGlob is one path segment's pattern, with the common shapes
// ("name", "prefix*", "*suffix") tested without path.Match.
type segGlob struct {
	pat, prefix, suffix string
	exact, generic      bool
}

func newSegGlob(pat string) segGlob {
	g := segGlob{pat: pat}
	meta := strings.IndexAny(pat, "*?[\\")
	switch {
	case meta < 0:
		g.exact = true
	case meta == len(pat)-1 && pat[meta] == '*':
		g.prefix = pat[:meta]
	case meta == 0 && pat[0] == '*' && !strings.ContainsAny(pat[1:], "*?[\\"):
		g.suffix = pat[1:]
	default:
		g.generic = true
	}
	return g
}

func (g segGlob) match(name string) bool {
	switch {
	case g.exact:
		return name == g.pat
	case g.generic:
		ok, _ := path.Match(g.pat, name)
		return ok
	case g.suffix != "":
		return strings.HasSuffix(name, g.suffix)
	default:
		return strings.HasPrefix(name, g.prefix)
	}
}
