package backend

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// LinkResolver is a backend that tells where paths of its workspace lead
// through symbolic links, for the decision of the call that names them
// (decide.Call.Links): the local backend reads its own file system.
// Docker and E2B have none: a call's paths are decided as named there.
type LinkResolver interface {
	// ResolveLinks returns, for each of paths (absolute and clean) that
	// lies inside one of dirs and leads through a symbolic link below
	// it, the path it leads to ("" when that cannot be told), as
	// Resolve does. Paths that lead through none are left out; nil: none
	// does.
	ResolveLinks(ctx context.Context, dirs, paths []string) map[string]string
}

// ResolveLinks is b's LinkResolver's answer for paths inside dirs, or
// nil when b has none.
func ResolveLinks(ctx context.Context, b Backend, dirs, paths []string) map[string]string {
	lr, ok := b.(LinkResolver)
	if !ok || len(paths) == 0 {
		return nil
	}
	return lr.ResolveLinks(ctx, dirs, paths)
}

// Readlink is what Resolve reads of one path: the target of a symbolic
// link (isLink), nothing for another file, or an error (one wrapping
// fs.ErrNotExist for a path that does not exist).
type Readlink func(p string) (target string, isLink bool, err error)

// LocalReadlink is Readlink on the local file system.
func LocalReadlink(p string) (string, bool, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			err = fs.ErrNotExist // a file where a directory would be: nothing below it exists
		}
		return "", false, err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return "", false, nil
	}
	t, err := os.Readlink(p)
	return t, err == nil, err
}

// maxLinks is how many links one resolution follows (the kernel's
// MAXSYMLINKS) before it gives up as on a loop.
const maxLinks = 40

// errLoop is a resolution that followed more than maxLinks links.
var errLoop = errors.New("too many levels of symbolic links")

// Resolve returns the path p leads to, following the symbolic links of
// its components one by one as the kernel does (a ".." in a link's
// target goes up from where the link led); the components from the
// first one that does not exist on are kept as written. linked reports
// whether a link was followed.
func Resolve(p string, readlink Readlink) (target string, linked bool, err error) {
	rest := strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/")
	cur, hops := "/", 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		t, isLink, err := readlink(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return path.Join(append([]string{next}, rest...)...), linked, nil
		case err != nil:
			return "", linked, err
		case !isLink:
			cur = next
			continue
		}
		if hops++; hops > maxLinks {
			return "", true, errLoop
		}
		linked = true
		if path.IsAbs(t) {
			cur = "/"
		}
		rest = append(strings.Split(t, "/"), rest...)
	}
	return cur, linked, nil
}

// ResolveLinksWith is the LinkResolver answer of a file system read with
// readlink: each of paths inside one of dirs (the innermost) that leads
// through a link below that directory, mapped to where it leads. The
// directories themselves may lie behind links (a workspace under a
// linked /home): a path is linked only when it leads elsewhere than the
// directory's own real path does, and a target inside a directory's real
// path is named under that directory, as the call names its paths.
func ResolveLinksWith(dirs, paths []string, readlink Readlink) map[string]string {
	real := map[string]string{}
	for _, d := range dirs {
		if r, _, err := Resolve(d, readlink); err == nil {
			real[d] = r
		}
	}
	var out map[string]string
	for _, p := range paths {
		d := innermost(p, dirs)
		rd, ok := real[d]
		if d == "" || !ok {
			continue
		}
		t, linked, err := Resolve(p, readlink)
		switch {
		case err != nil && linked:
			t = "" // where it leads cannot be told: the decision asks
		case err != nil || !linked:
			continue
		case t == path.Join(rd, strings.TrimPrefix(p, d)):
			continue // only the directory's own links: the path is what it says
		default:
			if t = named(t, dirs, real); t == p {
				continue
			}
		}
		if out == nil {
			out = map[string]string{}
		}
		out[p] = t
	}
	return out
}

// LocalLinks is ResolveLinksWith on the local file system.
func LocalLinks(dirs, paths []string) map[string]string {
	return ResolveLinksWith(dirs, paths, LocalReadlink)
}

// innermost is the innermost of dirs that holds p (p itself excepted:
// a working directory is what it is), "" when none does.
func innermost(p string, dirs []string) string {
	best := ""
	for _, d := range dirs {
		if p != d && under(p, d) && len(d) > len(best) {
			best = d
		}
	}
	return best
}

// named is the real path t under the directory of dirs whose real path
// holds it (the innermost), else t.
func named(t string, dirs []string, real map[string]string) string {
	best, bestReal := "", ""
	for _, d := range dirs {
		if r, ok := real[d]; ok && (t == r || under(t, r)) && len(r) > len(bestReal) {
			best, bestReal = d, r
		}
	}
	if best == "" {
		return t
	}
	return path.Join(best, strings.TrimPrefix(t, bestReal))
}

// under reports whether p lies below the directory d.
func under(p, d string) bool {
	return d == "/" && p != "/" || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/")
}
