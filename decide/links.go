package decide

import (
	"context"
	"encoding/json"
	"path"
	"slices"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// LinkPaths are the paths of the call that may lead through a symbolic
// link of its workspace, to resolve before it is decided (Call.Links):
// the absolute, clean paths it names inside its working directories (a
// file tool's path, the directory before the first pattern character of
// Glob's pattern, each file a Bash command reads or writes and the
// directory of a glob it names), in order,
// without repeats. A working directory itself is never one. It does no
// I/O: Bash's command is analysed through the call's memo, which the
// decision then reuses.
func LinkPaths(ctx context.Context, c Call) []string {
	if c.Tool == nil {
		return nil
	}
	pc := c.policy()
	dirs := c.Dirs()
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if !path.IsAbs(p) {
			if c.Workdir == "" {
				return
			}
			p = path.Join(c.Workdir, p)
		}
		p = path.Clean(p)
		if !slices.Contains(dirs, p) && permission.Inside(p, dirs) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	switch c.Tool.Info().Name {
	case "Bash":
		if c.Memo == nil {
			c.Memo = &tools.Memo{}
		}
		// Bound as Verdict binds it, so that the memo's analysis is the
		// one the decision makes.
		if c.Workdir != "" && !slices.Contains(pc.WorkingDirs, c.Workdir) {
			pc.WorkingDirs = append(slices.Clone(pc.WorkingDirs), c.Workdir)
		}
		a, err := tools.BashAnalysis(c.bind(&pc).env, c.Input)
		if err != nil {
			return nil
		}
		for _, acc := range a.Accesses() {
			switch {
			case !acc.Resolved:
			case acc.Glob:
				add(permission.GlobBase(acc.Path))
			default:
				add(acc.Path)
			}
		}
	default:
		var in struct {
			FilePath     string `json:"file_path"`
			NotebookPath string `json:"notebook_path"`
			Path         string `json:"path"`
			Pattern      string `json:"pattern"`
		}
		if json.Unmarshal(c.Input, &in) != nil {
			return nil
		}
		add(in.FilePath)
		add(in.NotebookPath)
		add(in.Path)
		if pat := in.Pattern; c.Tool.Info().Name == "Glob" && pat != "" {
			if !path.IsAbs(pat) {
				base := in.Path
				if !path.IsAbs(base) {
					base = path.Join(c.Workdir, base)
				}
				pat = path.Join(base, pat)
			}
			if path.IsAbs(pat) {
				add(permission.GlobBase(path.Clean(pat)))
			}
		}
	}
	return out
}

// Dirs are the call's working directories, absolute and clean: its
// workdir and its policy's, in that order; the directories LinkPaths
// lie in and links are resolved below.
func (c Call) Dirs() []string { return callDirs(c.Workdir, c.policy().WorkingDirs) }
