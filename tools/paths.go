package tools

import (
	"path"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
)

// Memo holds what one decision computes once and shares between the
// checker methods of the tool it binds (package decide): the analysis of
// a Bash command. A zero Memo is ready to use.
type Memo struct {
	input    string
	analysis *shell.Analysis
	// raw is the JSON input the analysis is of.
	raw string
	// parses counts the analyses made (one per decision).
	parses int
}

// Parses is the number of command analyses the memo has held: one per
// decision of a Bash call, however many rules it was matched against.
func (m *Memo) Parses() int { return m.parses }

// paths is the path rules' view (permission.Paths) of a call in env
// under the policy pc.
func paths(env *Env, pc *permission.Context) permission.Paths {
	ps := permission.Paths{Workdir: workdir(env), Policy: pc}
	if env != nil {
		ps.Home, ps.Links = env.Home, env.Links
	}
	return ps
}

// dirSuggestion is the "parent directory/**" rule of spec §1.6.
func dirSuggestion(tool, dir string) []permission.Rule {
	return []permission.Rule{permission.DirSuggestion(tool, dir)}
}

// fileSuggestion is the suggestion of a file tool: the parent
// directory of filePath.
func fileSuggestion(tool string, env *Env, filePath string) []permission.Rule {
	if filePath == "" {
		return dirSuggestion(tool, "")
	}
	return dirSuggestion(tool, path.Dir(absPath(env, filePath)))
}

// searchSuggestion is the suggestion of a search tool: the searched
// directory p (default: the workdir).
func searchSuggestion(tool string, env *Env, p string) []permission.Rule {
	if p == "" {
		p = "."
	}
	return dirSuggestion(tool, absPath(env, p))
}
