package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
)

// Permission checks of the file tools (spec §1.3-§1.6). Paths are paths
// inside the backend and are handled lexically: relative paths resolve
// against the workdir, path.Clean removes "..", and nothing is resolved
// on the host (the backend may be remote). [quirk] The reference uses
// the host cwd and host realpath.

// pathInput holds the path fields the file tools' checks read.
type pathInput struct {
	FilePath string `json:"file_path"`
	Path     string `json:"path"`
	Pattern  string `json:"pattern"`
}

func decodePaths(tool string, input json.RawMessage) (pathInput, error) {
	var in pathInput
	if err := json.Unmarshal(input, &in); err != nil {
		return in, fmt.Errorf("%s input: %w", tool, err)
	}
	return in, nil
}

func workdir(env *Env) string {
	if env == nil {
		return ""
	}
	return env.Workdir
}

// absPath resolves p against the workdir and cleans it. A relative path
// without a workdir stays relative (and cleaned).
func absPath(env *Env, p string) string {
	if p == "" {
		return ""
	}
	if !path.IsAbs(p) && workdir(env) != "" {
		p = path.Join(workdir(env), p)
	}
	return path.Clean(p)
}

// inWorkingDirs reports whether the absolute path p is a working
// directory (the workdir or one of pc.WorkingDirs) or lies inside one.
func inWorkingDirs(env *Env, pc *permission.Context, p string) bool {
	if !path.IsAbs(p) {
		return false
	}
	dirs := []string{workdir(env)}
	if pc != nil {
		dirs = append(dirs, pc.WorkingDirs...)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		d = absPath(env, d)
		if !path.IsAbs(d) {
			continue
		}
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// dangerousPath applies pc's dangerous file and directory lists (or the
// defaults) to the absolute path p.
func dangerousPath(pc *permission.Context, p string) bool {
	files, dirs := shell.DefaultDangerousFiles(), shell.DefaultDangerousDirs()
	if pc != nil && pc.DangerousFiles != nil {
		files = *pc.DangerousFiles
	}
	if pc != nil && pc.DangerousDirs != nil {
		dirs = *pc.DangerousDirs
	}
	return shell.IsDangerousPath(p, files, dirs)
}

// checkEdit is the shared Write/Edit check (spec §1.4): a sensitive path
// is a safety ASK; in ACCEPT_EDITS and DONT_ASK a path inside a working
// directory is allowed; everything else passes through.
func checkEdit(ctx context.Context, tool string, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	in, err := decodePaths(tool, input)
	if err != nil {
		return permission.Decision{}, err
	}
	if in.FilePath == "" {
		return permission.Decision{Behavior: permission.Passthrough, Reason: "Tool check: no file_path"}, nil
	}
	p := absPath(env, in.FilePath)
	if d, err := checkAccesses(tool, env, pc, homeOf(ctx), []shell.Access{{Write: true, Path: p, Resolved: path.IsAbs(p)}}); err != nil || d.Behavior != permission.Passthrough {
		return d, err
	}
	if dangerousPath(pc, p) {
		return permission.Decision{
			Behavior:     permission.Ask,
			Message:      fmt.Sprintf("Permission required: %s operation on sensitive file %s", tool, p),
			Reason:       "Safety check: dangerous file or directory",
			BypassImmune: true,
		}, nil
	}
	if pc != nil && (pc.Mode == permission.ModeAcceptEdits || pc.Mode == permission.ModeDontAsk) && inWorkingDirs(env, pc, p) {
		return permission.Decision{
			Behavior: permission.Allow,
			Message:  fmt.Sprintf("Permission granted for %s operation (in working directory)", tool),
			Reason:   "Mode: " + string(pc.Mode) + " allows edits in working directories",
		}, nil
	}
	return permission.Decision{Behavior: permission.Passthrough, Reason: "Tool check: no opinion"}, nil
}

// matchPath matches a glob rule against the absolute path p with
// doublestar semantics ("**" is any depth, "*" stays within one
// segment); a relative rule resolves against the workdir. [quirk] The
// reference uses fnmatch, whose "*" crosses "/", so "src/**" meant
// "src/*".
func matchPath(env *Env, rule, p string) (bool, error) {
	if p == "" || rule == "" {
		return false, nil
	}
	pat := rule
	if !path.IsAbs(pat) && workdir(env) != "" {
		pat = path.Join(workdir(env), pat)
		if strings.HasSuffix(rule, "/") {
			pat += "/"
		}
	}
	ok, err := doublestar.Match(pat, p)
	if err != nil {
		return false, fmt.Errorf("rule %q: %w", rule, err)
	}
	return ok, nil
}

// dirSuggestion is the "parent directory/**" rule of spec §1.6.
func dirSuggestion(tool, dir string) []permission.Rule {
	dir = strings.TrimRight(dir, `/\`)
	content := "**"
	if dir != "" && dir != "." {
		content = dir + "/**"
	}
	return []permission.Rule{{Tool: tool, Content: content, Behavior: permission.Allow, Source: "suggested"}}
}

func fileSuggestion(tool string, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	in, err := decodePaths(tool, input)
	if err != nil {
		return nil, err
	}
	if in.FilePath == "" {
		return dirSuggestion(tool, ""), nil
	}
	return dirSuggestion(tool, path.Dir(absPath(env, in.FilePath))), nil
}

func fileMatch(tool string, env *Env, content string, input json.RawMessage) (bool, error) {
	in, err := decodePaths(tool, input)
	if err != nil {
		return false, err
	}
	return matchPath(env, content, absPath(env, in.FilePath))
}

// CheckPermissions implements PermissionChecker (spec §1.4).
func (Write) CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	return checkEdit(ctx, "Write", env, input, pc)
}

// MatchRule implements RuleMatcher: a glob on file_path.
func (Write) MatchRule(_ context.Context, env *Env, content string, input json.RawMessage) (bool, error) {
	return fileMatch("Write", env, content, input)
}

// GenerateSuggestions implements Suggester: the parent directory.
func (Write) GenerateSuggestions(_ context.Context, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	return fileSuggestion("Write", env, input)
}

// CheckPermissions implements PermissionChecker (spec §1.4).
func (Edit) CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	return checkEdit(ctx, "Edit", env, input, pc)
}

// MatchRule implements RuleMatcher: a glob on file_path.
func (Edit) MatchRule(_ context.Context, env *Env, content string, input json.RawMessage) (bool, error) {
	return fileMatch("Edit", env, content, input)
}

// GenerateSuggestions implements Suggester: the parent directory.
func (Edit) GenerateSuggestions(_ context.Context, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	return fileSuggestion("Edit", env, input)
}

// MatchRule implements RuleMatcher: a glob on file_path.
func (Read) MatchRule(_ context.Context, env *Env, content string, input json.RawMessage) (bool, error) {
	return fileMatch("Read", env, content, input)
}

// GenerateSuggestions implements Suggester: the parent directory.
func (Read) GenerateSuggestions(_ context.Context, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	return fileSuggestion("Read", env, input)
}

// MatchRule implements RuleMatcher: a glob on path (default: the
// workdir), then on pattern resolved against that path.
func (Glob) MatchRule(_ context.Context, env *Env, content string, input json.RawMessage) (bool, error) {
	in, err := decodePaths("Glob", input)
	if err != nil {
		return false, err
	}
	base := absPath(env, in.Path)
	if base == "" {
		base = absPath(env, ".")
	}
	if in.Path != "" {
		if ok, err := matchPath(env, content, base); ok || err != nil {
			return ok, err
		}
	}
	if in.Pattern == "" {
		return false, nil
	}
	pat := in.Pattern
	if !path.IsAbs(pat) && path.IsAbs(base) {
		pat = path.Join(base, pat)
	}
	return matchPath(env, content, pat)
}

// GenerateSuggestions implements Suggester: the searched directory.
func (Glob) GenerateSuggestions(_ context.Context, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	return searchSuggestion("Glob", env, input)
}

// MatchRule implements RuleMatcher: a glob on path (default: the
// workdir).
func (Grep) MatchRule(_ context.Context, env *Env, content string, input json.RawMessage) (bool, error) {
	in, err := decodePaths("Grep", input)
	if err != nil {
		return false, err
	}
	p := in.Path
	if p == "" {
		p = "."
	}
	return matchPath(env, content, absPath(env, p))
}

// GenerateSuggestions implements Suggester: the searched directory.
func (Grep) GenerateSuggestions(_ context.Context, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	return searchSuggestion("Grep", env, input)
}

func searchSuggestion(tool string, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	in, err := decodePaths(tool, input)
	if err != nil {
		return nil, err
	}
	p := in.Path
	if p == "" {
		p = "."
	}
	return dirSuggestion(tool, absPath(env, p)), nil
}

// CheckPermissions implements PermissionChecker: PowerShell is not
// analysed, so every call is a (non-safety) ASK.
func (PowerShell) CheckPermissions(context.Context, *Env, json.RawMessage, *permission.Context) (permission.Decision, error) {
	return permission.Decision{
		Behavior: permission.Ask,
		Message:  "Execute PowerShell command",
		Reason:   "Tool check: PowerShell commands are not analysed",
	}, nil
}

// MatchRule implements RuleMatcher: only tool-level rules (no content)
// match PowerShell.
func (PowerShell) MatchRule(_ context.Context, _ *Env, content string, _ json.RawMessage) (bool, error) {
	return content == "", nil
}

// GenerateSuggestions implements Suggester: PowerShell suggests nothing.
func (PowerShell) GenerateSuggestions(context.Context, *Env, json.RawMessage) ([]permission.Rule, error) {
	return []permission.Rule{}, nil
}

// homeOf returns the backend home resolved for the call being decided,
// or "" (unknown).
func homeOf(ctx context.Context) string {
	if m := memoFrom(ctx); m != nil {
		return m.home
	}
	return ""
}

// readAccess is a read of the path p as given (relative to the workdir).
func readAccess(env *Env, p string, glob bool) shell.Access {
	a := absPath(env, p)
	return shell.Access{Path: a, Resolved: path.IsAbs(a), Glob: glob}
}

// CheckPermissions implements PermissionChecker: the path rules on the
// file read (outside the working directories or sensitive: ask).
func (Read) CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	in, err := decodePaths("Read", input)
	if err != nil {
		return permission.Decision{}, err
	}
	return checkAccesses("Read", env, pc, homeOf(ctx), []shell.Access{readAccess(env, in.FilePath, false)})
}

// CheckPermissions implements PermissionChecker: the path rules on the
// searched directory and on the pattern resolved against it.
func (Glob) CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	in, err := decodePaths("Glob", input)
	if err != nil {
		return permission.Decision{}, err
	}
	base := in.Path
	if base == "" {
		base = "."
	}
	accs := []shell.Access{readAccess(env, base, false)}
	if in.Pattern != "" {
		pat := in.Pattern
		if !path.IsAbs(pat) {
			pat = path.Join(absPath(env, base), pat)
		}
		// Glob lists names, never contents: the pattern is checked as a
		// path (outside the working directories asks), not probed for
		// the sensitive files it could name.
		accs = append(accs, readAccess(env, pat, false))
	}
	return checkAccesses("Glob", env, pc, homeOf(ctx), accs)
}

// CheckPermissions implements PermissionChecker: the path rules on the
// searched file or directory.
func (Grep) CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	in, err := decodePaths("Grep", input)
	if err != nil {
		return permission.Decision{}, err
	}
	p := in.Path
	if p == "" {
		p = "."
	}
	acc := readAccess(env, p, false)
	acc.Recursive = true // Grep searches everything below a directory
	return checkAccesses("Grep", env, pc, homeOf(ctx), []shell.Access{acc})
}
