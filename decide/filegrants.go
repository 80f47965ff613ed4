package decide

import (
	"encoding/json"
	"path"
	"slices"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
)

// fileGrants adds to s what the verdict grants a file tool's call (Read,
// Write, Edit, Glob, Grep: they hold the profile as the call's processes
// do) on its path: outside the working directories, a write (Write,
// Edit) or a read (Read, Glob, Grep) of that path when a person approved
// the call (human) or an allow rule naming the path allows it (a rule
// with a pattern; a rule without one, like bypass mode, allows the call,
// not the access); inside them, the read of a sensitive file a person
// approved. A read grant is a pattern of Read: the path itself, or the
// directory searched and what is below it.
func fileGrants(s *calls.Sandbox, b bound, c Call, pc *permission.Context, dirs []string, human, readOnly bool) {
	if b.t == nil {
		return
	}
	name := b.Name()
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Path         string `json:"path"`
		Pattern      string `json:"pattern"`
	}
	if json.Unmarshal(c.Input, &in) != nil {
		return
	}
	abs := func(p string) string {
		if p == "" {
			p = "."
		}
		if !path.IsAbs(p) {
			if c.Workdir == "" {
				return ""
			}
			p = path.Join(c.Workdir, p)
		}
		return path.Clean(p)
	}
	ps := permission.Paths{Workdir: c.Workdir, Home: c.Home, Policy: pc}
	named := func(names []string, p string) bool {
		var rules []permission.Rule
		for _, r := range pc.Allow {
			if r.Content != "" {
				rules = append(rules, r)
			}
		}
		r, err := ps.Rule(rules, names, p)
		return err == nil && r != nil
	}
	addRead := func(pat string) {
		if !slices.Contains(s.Read, pat) {
			s.Read = append(s.Read, pat)
		}
	}
	switch name {
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		p := in.FilePath
		if p == "" {
			p = in.NotebookPath
		}
		if p = abs(p); p == "" || readOnly || permission.Inside(p, dirs) {
			return
		}
		if (human || named([]string{"Edit", "Write"}, p)) && !slices.Contains(s.Write, p) {
			s.Write = append(s.Write, p)
		}
	case "Read":
		p := abs(in.FilePath)
		switch {
		case p == "" || in.FilePath == "":
		case !permission.Inside(p, dirs):
			if human || named([]string{"Read"}, p) {
				addRead(escapeGlob(p))
			}
		case human && ps.SensitiveMatch(p, false) != "":
			addRead(escapeGlob(p))
		}
	case "Glob", "Grep":
		p := abs(in.Path)
		if name == "Glob" && path.IsAbs(in.Pattern) {
			p = shell.GlobBase(path.Clean(in.Pattern))
		}
		if p == "" || permission.Inside(p, dirs) {
			return
		}
		if human || named([]string{"Read"}, p) {
			addRead(escapeGlob(p))
			if p != "/" {
				addRead(escapeGlob(p) + "/**")
			}
		}
	}
}
