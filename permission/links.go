package permission

import (
	"fmt"
	"path"
	"strings"
)

// Links are the symbolic links a call's paths lead through, resolved
// before the decision (nothing here does I/O): each absolute, clean path
// the call names inside its working directories that leads through a
// link, mapped to the path it leads to (absolute and clean), or to ""
// when where it leads could not be told (a loop, a component that
// cannot be read). The worker's Prepare resolves them through the
// call's backend; nil: none known, every path is decided as itself.
type Links map[string]string

// Target returns where the path p leads through l: its own entry, or
// that of its nearest ancestor in l with the rest of p below it (a
// linked directory). ok is false when p leads through no link of l.
func (l Links) Target(p string) (target string, ok bool) {
	if len(l) == 0 || !path.IsAbs(p) {
		return "", false
	}
	for q, rest := p, ""; ; {
		if t, ok := l[q]; ok {
			if t == "" || rest == "" {
				return t, true
			}
			return path.Join(t, rest), true
		}
		if q == "/" {
			return "", false
		}
		rest = path.Join(path.Base(q), rest)
		q = path.Dir(q)
	}
}

// checkLink applies the path rules to an access whose path leads
// through a link to target ("": unknown): the access is decided as its
// target and as itself, and the stricter outcome wins (a deny rule of
// the link's own path still denies; an allow rule of it does not pass a
// target outside the working directories). A write whose target is a
// dangerous file asks, as a Write of it would. The messages name the
// path and where it leads ("/src/app/notes/key -> /home/u/.ssh/authorized_keys").
func (ps Paths) checkLink(acc Access, target string) (pathCheck, error) {
	own := ps
	own.Links = nil
	named, err := own.check(acc)
	if err != nil || named.behavior == Deny {
		return named, err
	}
	link := fmt.Sprintf("%s -> %s", acc.Path, target)
	if target == "" {
		a := describeAccess(acc)
		return pathCheck{behavior: Ask, short: fmt.Sprintf("%s of %s, a link that cannot be followed", a.verb, acc.Path),
			why: fmt.Sprintf("%s%s is a symbolic link whose target cannot be told (a loop, or a directory that cannot be read), so its %s cannot be checked", acc.Path, a.where, a.verb)}, nil
	}
	tacc := acc
	tacc.Path = target
	t, err := own.check(tacc)
	if err != nil {
		return t, err
	}
	if t.behavior == Passthrough && acc.Write && ps.Policy.DangerousPath(target) && !ps.Policy.DangerousPath(acc.Path) {
		a := describeAccess(acc)
		what, kind := "a dangerous file", "dangerous file"
		if RunsLater(target) {
			what, kind = "a file the host runs later", "file the host runs later"
		}
		t = pathCheck{behavior: Ask, short: fmt.Sprintf("write of %s %s", kind, target),
			why: fmt.Sprintf("the write of %s%s reaches %s, so it always asks", target, a.where, what)}
	}
	if t.behavior != Deny && t.behavior != Ask {
		return named, nil
	}
	t.why = link + " (a symbolic link, decided as its target): " + t.why
	if t.short != "" {
		t.short += " through the link " + acc.Path
	}
	return t, nil
}

// linked reports where acc's path leads when it goes through one of
// ps.Links: a glob whose base directory does leads to the same pattern
// below where the directory leads.
func (ps Paths) linked(acc Access) (string, bool) {
	if len(ps.Links) == 0 || !acc.Resolved {
		return "", false
	}
	p, suffix := acc.Path, ""
	if acc.Glob {
		base := GlobBase(p)
		p, suffix = base, strings.TrimPrefix(p, base)
	}
	t, ok := ps.Links.Target(p)
	if !ok || t == p {
		return "", false
	}
	if t == "" {
		return "", true
	}
	return path.Join(t, suffix), true
}
