package local

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/calls"
)

// gitConfigNames are the entries of a git directory that git executes or
// reads as configuration: a call that is not allowed to change them
// finds them read-only, and what it creates among them is removed after
// it.
func gitConfigNames() []string {
	return []string{"hooks", "config", "config.worktree", "commondir", "info", "gitdir"}
}

// guardCall is what the guard keeps of one call between its start and
// its end: the entries of interest before it ran and the git
// directories whose configuration it must verify.
type guardCall struct {
	x      *index
	prof   *calls.Sandbox
	dirs   []string
	write  []string
	before snapshot
	repos  []*repoState
	// refs are what the repositories' configuration names outside their
	// git directories (core.hooksPath targets, included files) that the
	// call could write, as they were.
	refs []gitRef
	// freshFrom is where the call's part of the index's fresh list
	// starts (index.begin).
	freshFrom int
	// limit says, when the call made the working directories too large
	// to check, what the check did (ExecResult.Limit).
	limit string
}

// gitRef is a path a repository's configuration makes git read or run
// (a core.hooksPath directory, an include.path file), as it was before
// the call.
type gitRef struct {
	path, what string
	was        fileState
}

// repoState is a .git directory a call may write in (Git, or a rule
// granted some of it): its git directories and, for each, the
// configuration entries as they were.
type repoState struct {
	git     string
	gitdirs map[string]map[string]fileState
}

// fileState is an entry as it was: absent, or its identity and, for a
// small regular file, its content (restored when it changes).
type fileState struct {
	exists   bool
	mode     os.FileMode // its type
	perm     os.FileMode
	dev, ino uint64
	size     int64
	mtime    int64
	content  []byte
}

func stateOf(p string) fileState {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileState{}
	}
	s := fileState{exists: true, mode: fi.Mode().Type(), perm: fi.Mode().Perm(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	s.dev, s.ino = ids(fi)
	if fi.Mode().IsRegular() && fi.Size() <= 256<<10 {
		s.content, _ = os.ReadFile(p)
	}
	return s
}

func (s fileState) same(t fileState) bool {
	return s.exists == t.exists && s.mode == t.mode && s.dev == t.dev && s.ino == t.ino &&
		(s.mode.IsDir() || (s.size == t.size && s.mtime == t.mtime))
}

// guardIndex returns the backend's index, made at first use.
func (b *Backend) guardIndex() *index {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.idx == nil {
		b.idx = newIndex(newMatcher(b.Sensitive))
		b.idx.maxDirs = b.GuardMaxDirs
	}
	return b.idx
}

// guard computes what the call of profile prof, which may write write,
// finds hidden, pinned and read-only in its working directories, on top
// of protect (the profile's own):
//
//   - the sensitive files (.env, keys, .npmrc: the policy's sensitive
//     paths) are hidden unless prof.Read (or prof.Granted) grants them
//     (a write to a hidden file goes to /dev/null);
//   - the analyser's dangerous files and directories (.bashrc, .vscode,
//     .gitmodules, ...) are read-only unless prof.Granted names them;
//   - every .git (directory or file, nested repositories' too) is
//     read-only: its name pinned, nothing in it writable. For a git
//     command allowed to write (prof.Git) .git is pinned writable and
//     only what git executes or reads as configuration is read-only
//     (gitConfigNames, in every git directory it holds: modules/*,
//     worktrees/*).
//
// The returned guardCall's verify undoes, after the call, what no mount
// could cover: names that did not exist yet.
func (b *Backend) guard(prof *calls.Sandbox, write, protect []string) (hide, pin, prot []string, g *guardCall, err error) {
	if b.NoGitGuard {
		return nil, nil, protect, nil, nil
	}
	dirs := realPaths(prof.Dirs)
	if len(dirs) == 0 {
		dirs = realPaths([]string{b.Workdir})
	}
	x := b.guardIndex()
	before, err := x.refresh(dirs)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("local exec: index of the working directories: %w", err)
	}
	g = &guardCall{x: x, prof: prof, dirs: dirs, write: write, before: before}
	x.begin(g)
	keep := append(slices.Clone(dirs), write...)
	prot = slices.Clone(protect)
	addProt := func(p string, mode os.FileMode) {
		if mode&os.ModeSymlink != 0 {
			// A mount lands on what a link leads to; a dangling link has
			// nothing to protect (what the call makes of it is checked
			// after the call).
			t, err := filepath.EvalSymlinks(p)
			if err != nil || !under(t, write) {
				return
			}
			p = t
		}
		if !slices.Contains(prot, p) {
			prot = append(prot, p)
		}
	}
	home, _ := os.UserHomeDir()
	global := globalGitConfigs(home)
	for _, m := range before.list {
		p, e := m.path, m.entry
		if e.kind&(kindGit|kindRepo) != 0 {
			// What its configuration makes git read or run elsewhere.
			for _, r := range repoRefs(p, e, global, home) {
				if !under(r.path, write) || reachesAny(prof.Granted, r.path) || slices.ContainsFunc(g.refs, func(o gitRef) bool { return o.path == r.path }) {
					continue
				}
				r.was = stateOf(r.path)
				if r.was.exists {
					addProt(r.path, r.was.mode)
				}
				g.refs = append(g.refs, r)
			}
		}
		switch {
		case e.kind&kindRepo != 0:
			// A directory git takes as a git directory (a bare
			// repository): its configuration entries are read-only, what
			// the call creates among them is removed after it, as in a
			// .git a git command may write.
			d := filepath.Dir(p)
			if !under(d, write) {
				continue
			}
			rs := &repoState{git: d, gitdirs: map[string]map[string]fileState{}}
			for _, gd := range gitDirsOf(d) {
				states := map[string]fileState{}
				for _, name := range gitConfigNames() {
					q := filepath.Join(gd, name)
					states[name] = stateOf(q)
					if states[name].exists && !reachesAny(prof.Granted, q) {
						addProt(q, states[name].mode)
					}
				}
				rs.gitdirs[gd] = states
			}
			g.repos = append(g.repos, rs)
		case e.kind&kindSensitive != 0:
			// A granted write grants the read too: the file is the
			// call's to change.
			if reachesAny(prof.Read, p) || reachesAny(prof.Granted, p) || slices.ContainsFunc(keep, func(k string) bool { return under(k, []string{p}) }) {
				continue
			}
			if e.mode&os.ModeSymlink != 0 {
				// The link leads to the secret: hide what it leads to.
				t, err := filepath.EvalSymlinks(p)
				if err != nil || reachesAny(prof.Read, t) {
					continue
				}
				p = t
			}
			hide = append(hide, p)
		case !under(p, write):
			// Nothing to protect: the call cannot write there.
		case e.kind&kindGit != 0:
			if e.mode.IsDir() && (prof.Git || reachesAny(prof.Granted, p)) {
				rs := &repoState{git: p, gitdirs: map[string]map[string]fileState{}}
				pin = append(pin, p)
				for _, sub := range []string{"modules", "worktrees"} {
					if _, err := os.Lstat(filepath.Join(p, sub)); err == nil {
						pin = append(pin, filepath.Join(p, sub))
					}
				}
				for _, d := range gitDirsOf(p) {
					if d != p {
						pin = append(pin, d)
					}
					states := map[string]fileState{}
					for _, name := range gitConfigNames() {
						q := filepath.Join(d, name)
						states[name] = stateOf(q)
						if states[name].exists && !reachesAny(prof.Granted, q) {
							addProt(q, states[name].mode)
						}
					}
					rs.gitdirs[d] = states
				}
				g.repos = append(g.repos, rs)
				continue
			}
			addProt(p, e.mode)
		case e.kind&kindDangerous != 0:
			if !reachesAny(prof.Granted, p) {
				addProt(p, e.mode)
			}
		}
	}
	return hide, pin, prot, g, nil
}

// verify is the guard's step after the call (all its processes gone):
// a .git the call created or replaced is moved aside unless it is a
// clean one an allowed git command made; what it created among a git
// directory's configuration entries is removed, a changed one restored;
// a dangerous file or directory it created is moved aside unless
// granted. The result's stderr says what was done. A step that fails
// fails the call.
func (g *guardCall) verify(res backend.ExecResult, err error) (backend.ExecResult, error) {
	if g == nil {
		return res, err
	}
	notes, verr := g.check()
	if g.limit != "" && res.Limit == "" {
		res.Limit = g.limit
	}
	for _, n := range notes {
		if len(res.Stderr) > 0 && !bytes.HasSuffix(res.Stderr, []byte("\n")) {
			res.Stderr = append(res.Stderr, '\n')
		}
		res.Stderr = append(res.Stderr, "warden: "+n+"\n"...)
	}
	if verr != nil && err == nil {
		err = fmt.Errorf("local exec: repository guard: %w", verr)
	}
	return res, err
}

// check does verify's work and returns its notes.
func (g *guardCall) check() ([]string, error) {
	after, err := g.x.refresh(g.dirs)
	var notes []string
	if errors.Is(err, errTooManyDirs) {
		// The call made the check impossible: what it created is moved
		// out of the working directories, and the check is made on
		// what is left.
		note, ferr := g.flood()
		if ferr != nil {
			g.x.end(g)
			return nil, errors.Join(err, ferr)
		}
		notes = append(notes, note)
		after, err = g.x.refresh(g.dirs)
	}
	peers := g.x.end(g)
	if err != nil {
		return notes, err
	}
	// What a call that ran meanwhile was allowed to make is not this
	// call's doing: its own check judged it.
	peerGit, peerGranted := false, []string(nil)
	for _, p := range peers {
		peerGit = peerGit || p.prof.Git
		peerGranted = append(peerGranted, p.prof.Granted...)
	}
	var errs []error
	// What the repositories' configuration makes git read or run
	// outside their git directories: created or replaced, it is moved
	// aside; a changed small file is restored.
	for _, r := range g.refs {
		now := stateOf(r.path)
		if r.was.same(now) || reachesAny(peerGranted, r.path) {
			continue
		}
		switch {
		case !now.exists:
		case r.was.content != nil && now.mode.IsRegular():
			if err := restore(r.path, r.was); err != nil {
				errs = append(errs, err)
				continue
			}
			notes = append(notes, fmt.Sprintf("restored %s, which this call changed: it is %s", r.path, r.what))
		default:
			to, err := g.quarantine(r.path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			notes = append(notes, fmt.Sprintf("moved %s aside to %s, which this call created or replaced: it is %s", r.path, to, r.what))
		}
	}
	// The git directories the call could write: configuration created,
	// changed, or new git directories.
	for _, rs := range g.repos {
		for _, d := range gitDirsOf(rs.git) {
			states, known := rs.gitdirs[d]
			if !known {
				if why := cleanGitDir(d, isWorktreeDir(d)); why != "" {
					to, err := g.quarantine(d)
					if err != nil {
						errs = append(errs, err)
						continue
					}
					notes = append(notes, fmt.Sprintf("moved %s aside to %s, which this call created: %s", d, to, why))
				}
				continue
			}
			for _, name := range gitConfigNames() {
				q := filepath.Join(d, name)
				was, now := states[name], stateOf(q)
				if was.same(now) || reachesAny(g.prof.Granted, q) {
					continue
				}
				switch {
				case !was.exists:
					if err := os.RemoveAll(q); err != nil {
						errs = append(errs, err)
						continue
					}
					notes = append(notes, fmt.Sprintf("removed %s, which this call created: git would have read it later", q))
				case was.content != nil:
					if err := restore(q, was); err != nil {
						errs = append(errs, err)
						continue
					}
					notes = append(notes, fmt.Sprintf("restored %s, which this call changed: git would have read it later", q))
				default:
					errs = append(errs, fmt.Errorf("%s changed during the call and cannot be restored", q))
				}
			}
		}
	}
	if after.version == g.before.version {
		// No name of interest appeared, went or changed.
		return g.result(notes, errs)
	}
	before := make(map[string]entry, len(g.before.list))
	for _, m := range g.before.list {
		before[m.path] = m.entry
	}
	// The list is sorted by path, parents first: what lies in a
	// directory moved aside went with it and is not moved again.
	var aside []string
	quarantine := func(p string) (string, error) {
		to, err := g.quarantine(p)
		if err == nil {
			aside = append(aside, p)
		}
		return to, err
	}
	for _, m := range after.list {
		p, e := m.path, m.entry
		if !under(p, g.write) || e.kind&kindSensitive != 0 && e.kind&(kindGit|kindDangerous) == 0 || under(p, aside) {
			continue
		}
		if old, ok := before[p]; ok && old.dev == e.dev && old.ino == e.ino && old.mode == e.mode {
			continue
		}
		switch {
		case e.kind&kindRepo != 0:
			if g.moved(e) {
				continue // an existing repository under a new name
			}
			d := filepath.Dir(p)
			why := "git would take " + d + " as a repository and run what it configures"
			if g.prof.Git || peerGit {
				if why = cleanGitDir(d, false); why == "" {
					continue // a clean bare repository an allowed git command made
				}
			}
			to, err := quarantine(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			notes = append(notes, fmt.Sprintf("moved %s aside to %s, which this call created: %s", p, to, why))
		case e.kind&kindGit != 0:
			if g.moved(e) {
				continue // an existing repository under a new name: its .git was read-only
			}
			why := "git would have run what it configures"
			if g.prof.Git || peerGit {
				if why = g.cleanNewGit(p, e); why == "" {
					continue
				}
			}
			to, err := quarantine(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			notes = append(notes, fmt.Sprintf("moved %s aside to %s, which this call created: %s", p, to, why))
		case e.kind&kindDangerous != 0:
			if reachesAny(g.prof.Granted, p) || reachesAny(peerGranted, p) || g.moved(e) {
				continue
			}
			if g.prof.Git || peerGit {
				notes = append(notes, fmt.Sprintf("this git command created %s, a dangerous path", p))
				continue
			}
			to, err := quarantine(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			notes = append(notes, fmt.Sprintf("moved %s aside to %s, which this call created: writing it needs a human's approval or an Edit/Write rule naming it", p, to))
		}
	}
	return g.result(notes, errs)
}

// result is check's answer: the notes, and the errors as one.
func (g *guardCall) result(notes []string, errs []error) ([]string, error) {
	if len(errs) > 0 {
		return notes, errors.Join(errs...)
	}
	return notes, nil
}

// moved reports whether e is an entry of interest that existed before
// the call (under another name).
func (g *guardCall) moved(e entry) bool {
	for _, o := range g.before.list {
		if o.dev == e.dev && o.ino == e.ino && o.mode == e.mode {
			return true
		}
	}
	return false
}

// quarantine renames p to the first free p.warden-quarantine-N, a name
// git and shells ignore.
func (g *guardCall) quarantine(p string) (string, error) {
	for n := 1; ; n++ {
		to := fmt.Sprintf("%s.warden-quarantine-%d", p, n)
		if _, err := os.Lstat(to); err == nil {
			continue
		}
		if err := os.Rename(p, to); err != nil {
			return "", fmt.Errorf("move %s aside: %w", p, err)
		}
		return to, nil
	}
}

// restore puts the small regular file p back as it was.
func restore(p string, was fileState) error {
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	return os.WriteFile(p, was.content, was.perm)
}

// cleanNewGit says why the .git entry p (new, made by an allowed git
// command) may not stay, or "" when it is clean: a directory whose git
// directories are clean, or a file that leads into a git directory of a
// repository the call could already use.
func (g *guardCall) cleanNewGit(p string, e entry) string {
	switch {
	case e.mode.IsDir():
		for _, d := range gitDirsOf(p) {
			if why := cleanGitDir(d, isWorktreeDir(d)); why != "" {
				return why
			}
		}
		return ""
	case e.mode.IsRegular():
		b, err := os.ReadFile(p)
		if err != nil {
			return "unreadable .git file"
		}
		target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok || strings.ContainsAny(target, "\n") {
			return "a .git file that is not a gitdir line"
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		target = filepath.Clean(target)
		for _, rs := range g.repos {
			for _, sub := range []string{"modules", "worktrees"} {
				if within(target, filepath.Join(rs.git, sub)) && target != filepath.Join(rs.git, sub) {
					return ""
				}
			}
		}
		return "a .git file leading outside the repositories' modules and worktrees"
	default:
		return "a .git link"
	}
}

// isWorktreeDir reports whether the git directory d is a linked
// worktree's (…/.git/worktrees/name).
func isWorktreeDir(d string) bool { return filepath.Base(filepath.Dir(d)) == "worktrees" }

// gitDirsOf lists the git directories of the .git directory g: g, its
// linked worktrees' (worktrees/*) and its submodules' (modules/…, a
// submodule's name may hold slashes), theirs too.
func gitDirsOf(g string) []string {
	out := []string{g}
	if ents, err := os.ReadDir(filepath.Join(g, "worktrees")); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, filepath.Join(g, "worktrees", e.Name()))
			}
		}
	}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		ents, err := os.ReadDir(dir)
		if err != nil || depth > 8 {
			return
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if _, err := os.Lstat(filepath.Join(p, "HEAD")); err == nil {
				out = append(out, gitDirsOf(p)...)
				continue
			}
			walk(p, depth+1)
		}
	}
	walk(filepath.Join(g, "modules"), 0)
	return out
}

// cleanGitDir says why the git directory d may not stay, or "" when it
// is what git itself makes: configuration keys from a safe set, only
// sample hooks, plain files in info, and a commondir only in a linked
// worktree's directory.
func cleanGitDir(d string, worktree bool) string {
	for _, name := range []string{"config", "config.worktree"} {
		p := filepath.Join(d, name)
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if !fi.Mode().IsRegular() {
			return p + " is not a regular file"
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err.Error()
		}
		if key := unsafeConfig(b); key != "" {
			return fmt.Sprintf("%s sets %s, which git would act on", p, key)
		}
	}
	for _, sub := range []string{"hooks", "info"} {
		p := filepath.Join(d, sub)
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			return p + " is not a directory"
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return err.Error()
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || (sub == "hooks" && !strings.HasSuffix(e.Name(), ".sample")) {
				return fmt.Sprintf("%s holds %s, which git would run or read", p, e.Name())
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(d, "commondir")); err == nil && !worktree {
		return filepath.Join(d, "commondir") + " redirects the repository"
	}
	return ""
}

// safeConfigKey reports whether the configuration key (section.key, "*"
// for any subsection) is one git writes itself (init, clone, submodule,
// worktree) and that runs nothing.
func safeConfigKey(k string) bool {
	switch k {
	case "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
		"core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.worktree",
		"core.autocrlf", "extensions.objectformat", "extensions.worktreeconfig",
		"remote.*.url", "remote.*.fetch", "remote.*.pushurl", "branch.*.remote",
		"branch.*.merge", "submodule.*.url", "submodule.*.active", "init.defaultbranch",
		"user.name", "user.email":
		return true
	}
	return false
}

// unsafeConfig returns the first key of the git config data outside
// safeConfigKey, or a description of what it could not read as plain
// git-written config (continued lines, a key on a section line, a
// transport helper URL): "" when every line is plainly safe.
func unsafeConfig(data []byte) string {
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			return "a continued line"
		}
		if line[0] == '[' {
			if !strings.HasSuffix(line, "]") {
				return "a section line with more on it"
			}
			head := strings.TrimSpace(line[1 : len(line)-1])
			name, sub, hasSub := strings.Cut(head, " ")
			if hasSub {
				sub = strings.TrimSpace(sub)
				if len(sub) < 2 || sub[0] != '"' || sub[len(sub)-1] != '"' || strings.ContainsAny(sub[1:len(sub)-1], "\"\\") {
					return "section " + head
				}
				name += ".*"
			}
			if !validConfigName(strings.TrimSuffix(name, ".*")) {
				return "section " + head
			}
			section = strings.ToLower(name)
			continue
		}
		key, val, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if section == "" || !validConfigName(key) {
			return "line " + line
		}
		full := section + "." + key
		if !safeConfigKey(full) {
			return full
		}
		if strings.HasSuffix(full, "url") && strings.Contains(val, "::") {
			return full + " (a transport helper)"
		}
	}
	if sc.Err() != nil {
		return "an unreadable config"
	}
	return ""
}

func validConfigName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// reachesAny reports whether one of the doublestar patterns matches p or
// may match something beneath it (its fixed part lies inside p).
func reachesAny(pats []string, p string) bool {
	for _, pat := range pats {
		if ok, _ := doublestar.Match(pat, p); ok {
			return true
		}
		if base := patternBase(pat); base != "" && base != "/" && within(base, p) {
			return true
		}
	}
	return false
}

// patternBase is the directory part of a doublestar pattern before its
// first pattern character, unescaped.
func patternBase(pat string) string {
	var b strings.Builder
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		if c == '\\' && i+1 < len(pat) {
			i++
			b.WriteByte(pat[i])
			continue
		}
		if strings.IndexByte("*?[{", c) >= 0 {
			s := b.String()
			if j := strings.LastIndexByte(s, '/'); j >= 0 {
				return s[:j]
			}
			return ""
		}
		b.WriteByte(c)
	}
	return b.String()
}

// under reports whether the clean path p is one of the clean paths
// dirs or below one (insideAny without cleaning: the guard's paths are
// clean).
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || d == "/" || (len(p) > len(d) && p[len(d)] == '/' && p[:len(d)] == d) {
			return true
		}
	}
	return false
}

// flood moves what the call created in its working directories (the
// trees the index found new since the call began, index.fresh) out of
// them, into a quarantine directory beside the working directory (or,
// where that cannot be, aside in place, where the index no longer
// looks), so that its check and later calls can run; it returns the
// note that says so.
func (g *guardCall) flood() (string, error) {
	x := g.x
	x.mu.Lock()
	defer x.mu.Unlock()
	var news []string
	for _, p := range x.fresh[min(g.freshFrom, len(x.fresh)):] {
		if under(p, g.dirs) && under(p, g.write) {
			news = append(news, p)
		}
	}
	// Shallowest first; a tree inside one already moved goes with it.
	slices.SortFunc(news, func(a, b string) int { return len(a) - len(b) })
	var moved []string
	var errs []error
	dest := map[string]string{} // working directory -> its quarantine
	stamp := time.Now().UTC().Format("20060102T150405.000000000")
	for _, p := range news {
		if under(p, moved) {
			continue
		}
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		root := ""
		for _, d := range g.dirs {
			if under(p, []string{d}) && len(d) > len(root) {
				root = d
			}
		}
		q, ok := dest[root]
		if !ok {
			q = filepath.Join(filepath.Dir(root), ".warden-quarantine", filepath.Base(root)+"-"+stamp)
			if root == "/" || under(q, g.dirs) || under(q, g.write) {
				q = ""
			}
			dest[root] = q
		}
		x.drop(p)
		if q != "" {
			rel, _ := filepath.Rel(root, p)
			to := filepath.Join(q, rel)
			if err := os.MkdirAll(filepath.Dir(to), 0o700); err == nil {
				if err := os.Rename(p, to); err == nil {
					moved = append(moved, p)
					continue
				}
			}
			// Not on the same file system, or not writable: in place.
			dest[root] = ""
		}
		to, err := g.quarantine(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if x.aside == nil {
			x.aside = map[string]bool{}
		}
		x.aside[to] = true
		moved = append(moved, p)
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("moving the call's new directories aside: %w", errors.Join(errs...))
	}
	var where []string
	for _, q := range dest {
		if q != "" {
			where = append(where, q)
		} else {
			where = append(where, "beside each, renamed *.warden-quarantine-N")
		}
	}
	slices.Sort(where)
	shown := moved[:min(len(moved), 5)]
	more := ""
	if len(moved) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(moved)-len(shown))
	}
	g.limit = fmt.Sprintf("directories: the call made its working directories hold more than the %d directories the repository guard can check; the %d directory trees it created (%s%s) were moved out of them, to %s",
		x.bound(), len(moved), strings.Join(shown, ", "), more, strings.Join(where, "; "))
	return g.limit, nil
}

// globalGitConfigs are the user's git configuration files (git reads
// them in every repository).
func globalGitConfigs(home string) []string {
	var out []string
	if home != "" {
		out = append(out, filepath.Join(home, ".gitconfig"))
	}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	if xdg != "" {
		out = append(out, filepath.Join(xdg, "git", "config"))
	}
	return out
}

// repoRefs are the paths the configuration of the repository marked at
// p (a .git entry, or the HEAD of a git directory) makes git read or
// run outside its git directory: core.hooksPath (relative to the
// working tree, or to the git directory of a bare repository) and the
// files include.path and includeIf.*.path name, the user's global
// configuration included. Each is cleaned; nothing is checked for
// existence.
func repoRefs(p string, e entry, global []string, home string) []gitRef {
	var gitdir, base string
	switch {
	case e.kind&kindRepo != 0:
		gitdir = filepath.Dir(p)
		base = gitdir
	case e.mode.IsDir():
		gitdir, base = p, filepath.Dir(p)
	case e.mode.IsRegular():
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok {
			return nil
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		gitdir, base = filepath.Clean(target), filepath.Dir(p)
	default:
		return nil
	}
	files := slices.Clone(global)
	files = append(files, filepath.Join(gitdir, "config"), filepath.Join(gitdir, "config.worktree"))
	if b, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		common := strings.TrimSpace(string(b))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
		files = append(files, filepath.Join(filepath.Clean(common), "config"))
	}
	hooks, includes := gitConfigRefs(files, home)
	var out []gitRef
	for _, h := range hooks {
		h = expandHome(h, home)
		if !filepath.IsAbs(h) {
			h = filepath.Join(base, h)
		}
		out = append(out, gitRef{path: filepath.Clean(h), what: "the directory core.hooksPath of " + gitdir + " names: git runs the hooks in it"})
	}
	for _, i := range includes {
		out = append(out, gitRef{path: i, what: "a file the configuration of " + gitdir + " includes: git reads it as its configuration"})
	}
	return out
}

// maxGitConfigFiles bounds the configuration files gitConfigRefs reads
// (includes of includes).
const maxGitConfigFiles = 32

// gitConfigRefs reads the git configuration files (and the files they
// include, depth first) and returns the core.hooksPath values as
// written and the included files' clean paths (relative ones taken
// from the including file's directory). A file that cannot be read is
// skipped.
func gitConfigRefs(files []string, home string) (hooks, includes []string) {
	seen := map[string]bool{}
	queue := slices.Clone(files)
	for len(queue) > 0 && len(seen) < maxGitConfigFiles {
		f := queue[0]
		queue = queue[1:]
		if seen[f] {
			continue
		}
		seen[f] = true
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, kv := range gitConfigPairs(data) {
			switch {
			case kv[0] == "core.hookspath" && kv[1] != "":
				hooks = append(hooks, kv[1])
			case (kv[0] == "include.path" || strings.HasPrefix(kv[0], "includeif.") && strings.HasSuffix(kv[0], ".path")) && kv[1] != "":
				i := expandHome(kv[1], home)
				if !filepath.IsAbs(i) {
					i = filepath.Join(filepath.Dir(f), i)
				}
				i = filepath.Clean(i)
				includes = append(includes, i)
				queue = append(queue, i)
			}
		}
	}
	return hooks, includes
}

// expandHome replaces a leading ~/ with home.
func expandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
		return filepath.Join(home, rest)
	}
	return p
}

// gitConfigPairs reads git configuration data as lower-case
// section[.subsection].key names (the subsection as written) and
// values: quotes removed, escapes applied, comments dropped. Continued
// lines are joined. It reads what git reads for the common shapes; it
// need not refuse odd ones (unsafeConfig does).
func gitConfigPairs(data []byte) [][2]string {
	var out [][2]string
	section := ""
	text := strings.ReplaceAll(string(data), "\\\n", "")
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		for len(line) > 0 && line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				line = ""
				break
			}
			head := strings.TrimSpace(line[1:end])
			name, sub, hasSub := strings.Cut(head, " ")
			section = strings.ToLower(name)
			if hasSub {
				section += "." + strings.Trim(strings.TrimSpace(sub), "\"")
			} else if i := strings.IndexByte(name, '.'); i >= 0 {
				section = strings.ToLower(name[:i]) + "." + name[i+1:]
			}
			line = strings.TrimSpace(line[end+1:])
		}
		if line == "" || line[0] == '#' || line[0] == ';' || section == "" {
			continue
		}
		key, val, _ := strings.Cut(line, "=")
		out = append(out, [2]string{strings.ToLower(section) + "." + strings.ToLower(strings.TrimSpace(key)), gitConfigValue(val)})
	}
	return out
}

// gitConfigValue is a configuration value as git reads it.
func gitConfigValue(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(v[i])
			}
		case (c == '#' || c == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}
