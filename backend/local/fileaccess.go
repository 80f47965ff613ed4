package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local/sandbox/child"
	"github.com/wardenhq/warden/calls"
)

// The file operations hold the call's sandbox profile, as its processes
// do (the layer "file_tools" of backend.local.sandbox_off), whatever the
// mode that allowed the call: bypass skips the asking, never the
// profile. A sandboxed process of the call may
//
//   - write only beneath the profile's Write paths, never under its
//     Protect paths nor a hidden path;
//   - read the system's shared roots (child.SharedRoots), what anyone may
//     read of the walked roots (child.WalkReadable over
//     child.WalkedRoots), its working directories, the backend's Read
//     list and the toolchains under the home directory (reads), and its
//     Write paths; never a hidden path (the worker's files, the
//     credentials under the home directory, /run) nor a sensitive file of
//     its working directories the profile does not grant (Read).
//
// The file operations check the same, on the path a file resolves to.
// Outside the working directories, the profile's Read patterns are the
// reads the verdict granted the file tools (an approval, or a Read rule
// naming the path). A directory that holds something the call may read
// may be listed, and lists only that.

// FileToolsLayer is the name of this layer in backend.local.sandbox_off.
const FileToolsLayer = "file_tools"

// confinedFiles reports whether the file operations hold the call's
// profile: the sandbox is on and the layer is not turned off.
func (b *Backend) confinedFiles() bool { return !b.Unsandboxed && !b.FileToolsOff }

// access is what the call ctx is bound to may touch with the file
// operations, computed from its profile once per operation.
type access struct {
	prof *calls.Sandbox
	// dirs are the working directories; writes the Write paths and
	// protect the Protect paths, resolved; hide the hidden paths that
	// hold none of dirs and writes; reads the readable trees.
	dirs, writes, protect, hide, reads []string
	// walked is what anyone may read of the walked roots.
	walked []string
	b      *Backend
}

// access returns what the call of ctx may touch.
func (b *Backend) access(ctx context.Context) (*access, error) {
	prof := b.profile(ctx)
	a := &access{prof: prof, dirs: b.dirs(ctx), b: b}
	for _, w := range prof.Write {
		if w = filepath.Clean(w); w != "/" {
			a.writes = append(a.writes, w)
		}
	}
	a.writes = realPaths(a.writes)
	a.protect = realPaths(prof.Protect)
	a.hide = hidden(b.hide(), append(slices.Clone(a.dirs), a.writes...))
	env := backend.ToolEnv(os.Environ(), b.Env, nil)
	a.reads = append(b.reads(a.dirs, env), a.writes...)
	for _, r := range child.SharedRoots() {
		if r != "/proc" { // the worker's /proc is not the call's (procEntry)
			a.reads = append(a.reads, r)
		}
	}
	walked, err := b.walked()
	if err != nil {
		return nil, fmt.Errorf("local: what anyone may read of %s: %w", strings.Join(child.WalkedRoots(), ", "), err)
	}
	a.walked = walked
	return a, nil
}

// walked returns what anyone may read of the walked roots, walked again
// when one of the walked directories changed (the zygote's rule, with
// the same walk).
func (b *Backend) walked() ([]string, error) {
	b.walkMu.Lock()
	defer b.walkMu.Unlock()
	if b.walk == nil || b.walk.Stale() {
		r, err := child.WalkReadable(child.WalkedRoots(), true)
		if err != nil {
			return nil, err
		}
		if b.walk != nil {
			b.walk.Close()
		}
		b.walk = r
	}
	return b.walk.Paths, nil
}

// closeWalk releases the walk's descriptors.
func (b *Backend) closeWalk() {
	b.walkMu.Lock()
	defer b.walkMu.Unlock()
	if b.walk != nil {
		b.walk.Close()
		b.walk = nil
	}
}

// sandboxRefused is the error of an operation the call's profile does not
// allow: it says the sandbox stopped it, what the call may touch and how
// to ask for more.
func sandboxRefused(path, why, may, more string) error {
	return fmt.Errorf("local: refused by the sandbox: %s %s. This call %s. %s (the file tools hold the same profile as the call's processes, in every mode): %w",
		path, why, may, more, backend.ErrSandbox)
}

// check refuses real (the file path names, resolved) when the call may
// not read it, or write it with write.
func (a *access) check(path, real string, write bool) error {
	if under(real, a.hide) {
		return sandboxRefused(path, "is hidden from tools (the worker's files, the credentials under the home directory, /run)", a.may(write),
			"No mode or rule uncovers it; only a person's approval of a write of that very path grants it")
	}
	if write {
		if under(real, a.protect) {
			return sandboxRefused(path, "is read-only for every call (a .git's hooks or config)", a.may(true),
				fmt.Sprintf("An Edit or Write allow rule naming it (Edit(%s)) grants it", real))
		}
		if !under(real, a.writes) {
			return sandboxRefused(path, "is outside what this call may write", a.may(true),
				fmt.Sprintf("A person's approval of this call, or an allow rule naming the path (Edit(%s) or Write(%s)), grants it; bypass mode and rules without a path do not", real, real))
		}
		return nil
	}
	if d := a.sensitive(real); d != "" {
		return sandboxRefused(path, "is a sensitive file of the working directories ("+d+"), hidden from the call's processes", a.may(false),
			fmt.Sprintf("A person's approval of a call that reads it, or a Read allow rule naming it (Read(%s)), grants it", real))
	}
	if !a.readable(real) {
		return sandboxRefused(path, "is outside what this call may read", a.may(false),
			fmt.Sprintf("A person's approval of this call, a Read allow rule naming it (Read(%s)), the turn's working_dirs or backend.local.read grants it", real))
	}
	return nil
}

// readable reports whether real lies in what the call may read.
func (a *access) readable(real string) bool {
	if under(real, a.reads) || under(real, a.walked) {
		return true
	}
	for _, pat := range a.grantedReads() {
		if ok, _ := doublestar.Match(pat, real); ok {
			return true
		}
	}
	return false
}

// leadsToReadable reports whether the directory real holds something the
// call may read (it may then be listed, showing only that).
func (a *access) leadsToReadable(real string) bool {
	for _, set := range [][]string{a.reads, a.walked, a.grantedBases()} {
		for _, r := range set {
			if within(r, real) {
				return true
			}
		}
	}
	return false
}

// visible reports whether the entry p of a listed directory is shown:
// one the call may read or that leads to one, and not hidden.
func (a *access) visible(p string) bool {
	if under(p, a.hide) {
		return false
	}
	return a.readable(p) || a.leadsToReadable(p)
}

// grantedReads are the profile's Read patterns outside the working
// directories: the reads the verdict granted the file tools.
func (a *access) grantedReads() []string {
	var out []string
	for _, p := range a.prof.Read {
		if base := patternBase(p); base != "" && !under(base, a.dirs) {
			out = append(out, p)
		}
	}
	return out
}

// grantedBases are the directories of grantedReads.
func (a *access) grantedBases() []string {
	var out []string
	for _, p := range a.grantedReads() {
		out = append(out, patternBase(p))
	}
	return out
}

// sensitive returns the sensitive entry on the way to real inside a
// working directory that the profile does not grant ("" when none): the
// call's processes find it hidden.
func (a *access) sensitive(real string) string {
	if !under(real, a.dirs) {
		return ""
	}
	if reachesAny(a.prof.Read, real) || reachesAny(a.prof.Granted, real) {
		return ""
	}
	m := a.b.matcher()
	for p := real; under(p, a.dirs) && !slices.Contains(a.dirs, p); p = filepath.Dir(p) {
		if m.sensitive(p, filepath.Base(p)) && !slices.ContainsFunc(a.writes, func(w string) bool { return within(w, p) }) {
			return p // a granted write of it grants the read too (the guard's rule)
		}
	}
	return ""
}

// may says what the call may touch, for a refusal.
func (a *access) may(write bool) string {
	if write {
		if len(a.writes) == 0 {
			return "may write nothing (it was allowed as read-only)"
		}
		s := "may write " + strings.Join(a.writes, ", ")
		if len(a.protect) > 0 {
			s += " (not " + strings.Join(a.protect, ", ") + ")"
		}
		return s
	}
	s := "may read its working directories (" + strings.Join(a.dirs, ", ") + "), the system's directories (" +
		strings.Join(slices.DeleteFunc(child.SharedRoots(), func(r string) bool { return r == "/proc" }), ", ") + ") and what anyone may read of " + strings.Join(child.WalkedRoots(), " and ")
	if g := a.grantedReads(); len(g) > 0 {
		s += ", and " + strings.Join(g, ", ")
	}
	return s
}

// matcher is the sensitive-path matcher of the backend (the guard's).
func (b *Backend) matcher() *matcher {
	b.walkMu.Lock()
	defer b.walkMu.Unlock()
	if b.sens == nil {
		b.sens = newMatcher(b.Sensitive)
	}
	return b.sens
}
