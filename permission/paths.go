package permission

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// The path rules every file access goes through, whichever tool makes
// it: Read, Glob, Grep and read-only Bash commands for reads; Write,
// Edit and every write target of a Bash command (redirections, operands
// of file commands, output options) for writes. In order:
//
//  1. a path that cannot be resolved statically asks;
//  2. a protected path (Context.ProtectedPaths) denies, in every mode;
//  3. a deny rule of the path tools (Read for reads; Edit or Write for
//     writes) whose pattern matches the path denies;
//  4. a sensitive path (Context.Sensitive) asks, even inside the working
//     directories;
//  5. an ask rule of the path tools asks;
//  6. an allow rule of the path tools allows;
//  7. inside the working directories: reads are allowed, writes follow
//     the call's own flow (its mode and its rules);
//  8. outside them: ask.
//
// The asks are bypass-immune: an allow rule for a command (Bash(echo:*))
// allows the command, not a write to /etc/cron.d. A path that leads
// through a symbolic link (Paths.Links) goes through them as its target
// and as itself, and the stricter outcome wins.

// Access is one file a call reads or writes, found statically: for a
// Bash command, the operands and path options of read-only commands (and
// the directory they list when they name none), and the write targets of
// every command (redirections, operands of file commands, output
// options); for a file tool, its path.
type Access struct {
	// Write is set for a write, unset for a read.
	Write bool `json:"write,omitempty"`
	// Path is the absolute, clean path inside the backend; when Resolved
	// is false it is the word as written.
	Path     string `json:"path"`
	Resolved bool   `json:"resolved"`
	// Glob is set when the path holds pattern characters; Path is then
	// the pattern.
	Glob bool `json:"glob,omitempty"`
	// Recursive is set when the command reads everything below the path
	// (grep -r, rg, find, du, tree, ls -R).
	Recursive bool `json:"recursive,omitempty"`
	// Command is the simple command the access belongs to, as written.
	Command string `json:"command"`
}

// Paths is what the path rules know of one call: its workdir (relative
// paths and rule patterns resolve against it), the backend user's home
// ("" when unknown: ~ patterns match nothing) and the policy.
type Paths struct {
	Workdir string
	Home    string
	Policy  *Context
	// Links are where the call's paths lead through symbolic links,
	// resolved beforehand; a path that leads through one is decided as
	// its target and as itself (checkLink). nil: none.
	Links Links
}

// Abs resolves p against the workdir and cleans it. A relative path
// without a workdir stays relative (and cleaned).
func (ps Paths) Abs(p string) string {
	if p == "" {
		return ""
	}
	if !path.IsAbs(p) && ps.Workdir != "" {
		p = path.Join(ps.Workdir, p)
	}
	return path.Clean(p)
}

// WorkingDirs returns the absolute, clean working directories: the
// workdir and the policy's WorkingDirs (the turn's and the
// configuration's additional directories).
func (ps Paths) WorkingDirs() []string {
	var out []string
	add := func(d string) {
		if d == "" {
			return
		}
		d = ps.Abs(d)
		if path.IsAbs(d) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	add(ps.Workdir)
	if ps.Policy != nil {
		for _, d := range ps.Policy.WorkingDirs {
			add(d)
		}
	}
	return out
}

// InWorkingDirs reports whether the absolute path p is a working
// directory or lies inside one.
func (ps Paths) InWorkingDirs(p string) bool {
	return path.IsAbs(p) && Inside(p, ps.WorkingDirs())
}

// Inside reports whether the absolute path p is one of dirs or lies
// below one.
func Inside(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || d == "/" || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// MatchPath reports whether the path rule pattern matches the absolute
// path p with doublestar semantics ("**" is any depth, "*" stays within
// one segment); a relative rule resolves against the workdir. [quirk]
// The reference uses fnmatch, whose "*" crosses "/", so "src/**" meant
// "src/*".
func (ps Paths) MatchPath(rule, p string) (bool, error) {
	if p == "" || rule == "" {
		return false, nil
	}
	pat := rule
	if !path.IsAbs(pat) && ps.Workdir != "" {
		pat = path.Join(ps.Workdir, pat)
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

// ReadAccess is a read of the path p as given (relative to the workdir).
func (ps Paths) ReadAccess(p string, glob bool) Access {
	a := ps.Abs(p)
	return Access{Path: a, Resolved: path.IsAbs(a), Glob: glob}
}

// pathCheck is the outcome for one access: Passthrough when the path
// rules have no objection.
type pathCheck struct {
	behavior Behavior
	// why names the path and what about it decided; short is the same
	// in a few words, for the verdict's reason.
	why, short string
	// rule is the rule that decided, if any.
	rule *Rule
}

// sensitiveProbes are file names a glob is tried against to see whether
// it could reach a sensitive file ("cat .e*", "cat ~/.ssh/*").
func sensitiveProbes() []string {
	return []string{".env", ".env.local", ".envrc", "id_rsa", "id_ed25519", "key.pem", "server.key",
		".bashrc", ".profile", ".zshrc", ".netrc", ".npmrc", ".pypirc", ".git-credentials", "environ", "shadow", "credentials", "config"}
}

// SensitiveMatch returns the sensitive pattern of the policy that the
// path p matches (a glob p: could reach), or "".
func (ps Paths) SensitiveMatch(p string, glob bool) string {
	return matchAny(ps.Policy.Sensitive(), ps.Home, p, glob)
}

// matchAny returns the pattern of patterns p matches, or "". A pattern
// starting with "~/" is relative to home.
func matchAny(patterns []string, home, p string, glob bool) string {
	for _, pat := range patterns {
		if strings.HasPrefix(pat, "~/") {
			if home == "" {
				continue
			}
			pat = path.Join(home, pat[2:])
		}
		if ok, _ := doublestar.Match(pat, p); ok {
			return pat
		}
		if !glob {
			continue
		}
		// A glob: does it reach a sensitive file? Try it on probe names
		// in its base directory, and its base directory itself.
		base := GlobBase(p)
		if ok, _ := doublestar.Match(pat, base); ok {
			return pat
		}
		for _, probe := range sensitiveProbes() {
			cand := path.Join(base, probe)
			if m, _ := doublestar.Match(p, cand); m {
				if ok, _ := doublestar.Match(pat, cand); ok {
					return pat
				}
			}
		}
	}
	return ""
}

// Rule returns the first rule of rules for one of the tools names whose
// pattern matches p (a rule without content matches every path).
func (ps Paths) Rule(rules []Rule, names []string, p string) (*Rule, error) {
	for i := range rules {
		r := &rules[i]
		if !slices.Contains(names, r.Tool) {
			continue
		}
		if r.Content == "" {
			return r, nil
		}
		ok, err := ps.MatchPath(r.Content, p)
		if err != nil {
			return nil, err
		}
		if ok {
			return r, nil
		}
	}
	return nil, nil
}

// check applies the path rules to one access.
func (ps Paths) check(acc Access) (pathCheck, error) {
	if t, ok := ps.linked(acc); ok {
		return ps.checkLink(acc, t)
	}
	a := describeAccess(acc)
	verb, names, where := a.verb, a.names, a.where
	if !acc.Resolved {
		return pathCheck{behavior: Ask, short: fmt.Sprintf("%s of unresolved path %q", verb, acc.Path),
			why: fmt.Sprintf("cannot tell which file %q names%s, so its %s cannot be checked", acc.Path, where, verb)}, nil
	}
	pc, home, p := ps.Policy, ps.Home, acc.Path
	if pat := matchAny(pc.ProtectedPaths(), home, p, acc.Glob); pat != "" {
		return pathCheck{behavior: Deny, short: fmt.Sprintf("%s of protected path %s", verb, p),
			why: fmt.Sprintf("%s is protected (%s)%s: it is the worker's own (keys, content, database, config) or a process environment, and no tool may %s it in any mode", p, pat, where, verb)}, nil
	}
	var deny, ask, allow []Rule
	if pc != nil {
		deny, ask, allow = pc.Deny, pc.Ask, pc.Allow
	}
	if r, err := ps.Rule(deny, names, p); err != nil || r != nil {
		if err != nil {
			return pathCheck{}, err
		}
		return pathCheck{behavior: Deny, rule: r,
			why: fmt.Sprintf("the deny rule %s forbids the %s of %s%s", r, verb, p, where)}, nil
	}
	if pat := matchAny(pc.Sensitive(), home, p, acc.Glob); pat != "" {
		return pathCheck{behavior: Ask, short: fmt.Sprintf("%s of sensitive path %s", verb, p),
			why: fmt.Sprintf("%s is a sensitive path (%s)%s: it may hold secrets or change what runs, so its %s always asks", p, pat, where, verb)}, nil
	}
	if acc.Recursive && home != "" && (p == home || p == "/" || strings.HasPrefix(home, p+"/")) {
		return pathCheck{behavior: Ask, short: fmt.Sprintf("recursive read of %s", p),
			why: fmt.Sprintf("%s%s reads everything below %s, which holds the home directory and its credentials, so it always asks", p, where, p)}, nil
	}
	if r, err := ps.Rule(ask, names, p); err != nil || r != nil {
		if err != nil {
			return pathCheck{}, err
		}
		return pathCheck{behavior: Ask, rule: r, short: fmt.Sprintf("%s of %s matches the ask rule %s", verb, p, r),
			why: fmt.Sprintf("the ask rule %s matches the %s of %s%s", r, verb, p, where)}, nil
	}
	if r, err := ps.Rule(allow, names, p); err != nil || r != nil {
		return pathCheck{behavior: Passthrough, rule: r}, err
	}
	return a.workingDirCheck(ps), nil
}

// accessView is one access together with the words check's messages
// use for it.
type accessView struct {
	acc   Access
	verb  string   // "read" or "write"
	names []string // the tools whose path rules govern the access
	where string   // " (in `command`)", or "" when no command is known
}

// describeAccess returns acc with its verb, rule tool names and command
// suffix.
func describeAccess(acc Access) accessView {
	a := accessView{acc: acc, verb: "read", names: []string{"Read"}}
	if acc.Write {
		a.verb, a.names = "write", []string{"Edit", "Write"}
	}
	if acc.Command != "" {
		a.where = " (in `" + oneLine(acc.Command) + "`)"
	}
	return a
}

// workingDirCheck passes an access inside the working directories and asks
// for one outside them, suggesting a rule for its directory.
func (a accessView) workingDirCheck(ps Paths) pathCheck {
	p := a.acc.Path
	check := p
	if a.acc.Glob {
		check = GlobBase(p)
	}
	dirs := ps.WorkingDirs()
	if Inside(check, dirs) {
		return pathCheck{behavior: Passthrough}
	}
	ruleDir := path.Dir(check)
	if ruleDir == "/" {
		ruleDir = check
	}
	return pathCheck{behavior: Ask, short: fmt.Sprintf("%s of %s outside the working directories", a.verb, p),
		why: fmt.Sprintf("%s of %s%s is outside the working directories (%s); add the directory to the turn's or the config's working_dirs, or allow it with a rule such as %s(%s/**)",
			verbNoun(a.verb), p, a.where, strings.Join(dirs, ", "), a.names[0], strings.TrimSuffix(ruleDir, "/"))}
}

func verbNoun(v string) string {
	if v == "write" {
		return "the write"
	}
	return "the read"
}

// oneLine shortens a command for a message: its first line, at most 120
// bytes.
func oneLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// Check applies the path rules to every access of a call of tool and
// returns the strictest outcome as a tool decision: DENY for a denied
// path, a bypass-immune ASK naming every path that asks, or Passthrough.
func (ps Paths) Check(tool string, accs []Access) (Decision, error) {
	var asks []string
	short := ""
	for _, acc := range accs {
		c, err := ps.check(acc)
		if err != nil {
			return Decision{}, err
		}
		switch c.behavior {
		case Deny:
			reason := "Safety check: protected path (" + c.short + ")"
			if c.rule != nil {
				reason = "Rule: " + c.rule.String()
			}
			return Decision{Behavior: Deny,
				Message: fmt.Sprintf("Permission denied for %s: %s", tool, c.why),
				Reason:  reason}, nil
		case Ask:
			if !slices.Contains(asks, c.why) {
				asks = append(asks, c.why)
			}
			if short == "" {
				short = c.short
			}
		}
	}
	if len(asks) == 0 {
		return Decision{Behavior: Passthrough}, nil
	}
	return Decision{Behavior: Ask, BypassImmune: true,
		Message: fmt.Sprintf("Permission required for %s: %s", tool, strings.Join(asks, "; ")),
		Reason:  "Safety check: path rules (" + short + ")"}, nil
}

// CheckEdit is the shared Write/Edit check (spec §1.4) of the file at
// filePath: the path rules; then a dangerous path is a safety ASK; in
// ACCEPT_EDITS and DONT_ASK a path inside a working directory is
// allowed; everything else passes through.
func (ps Paths) CheckEdit(tool, filePath string) (Decision, error) {
	if filePath == "" {
		return Decision{Behavior: Passthrough, Reason: "Tool check: no file_path"}, nil
	}
	p := ps.Abs(filePath)
	if d, err := ps.Check(tool, []Access{{Write: true, Path: p, Resolved: path.IsAbs(p)}}); err != nil || d.Behavior != Passthrough {
		return d, err
	}
	pc := ps.Policy
	if pc.DangerousPath(p) {
		if RunsLater(p) {
			return Decision{
				Behavior:     Ask,
				Message:      fmt.Sprintf("Permission required: %s operation on %s, a file the host runs later", tool, p),
				Reason:       "Safety check: a file the host runs later",
				BypassImmune: true,
			}, nil
		}
		return Decision{
			Behavior:     Ask,
			Message:      fmt.Sprintf("Permission required: %s operation on sensitive file %s", tool, p),
			Reason:       "Safety check: dangerous file or directory",
			BypassImmune: true,
		}, nil
	}
	if pc != nil && (pc.Mode == ModeAcceptEdits || pc.Mode == ModeDontAsk) && ps.InWorkingDirs(p) {
		return Decision{
			Behavior: Allow,
			Message:  fmt.Sprintf("Permission granted for %s operation (in working directory)", tool),
			Reason:   "Mode: " + string(pc.Mode) + " allows edits in working directories",
		}, nil
	}
	return Decision{Behavior: Passthrough, Reason: "Tool check: no opinion"}, nil
}

// DirSuggestion is the "parent directory/**" rule of spec §1.6.
func DirSuggestion(tool, dir string) Rule {
	dir = strings.TrimRight(dir, `/\`)
	content := "**"
	if dir != "" && dir != "." {
		content = dir + "/**"
	}
	return Rule{Tool: tool, Content: content, Behavior: Allow, Source: "suggested"}
}

// GlobBase returns the directory part of an absolute glob pattern
// before its first segment holding a pattern character (a relative
// pattern is returned as it is).
func GlobBase(p string) string {
	if !path.IsAbs(p) {
		return p
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if strings.ContainsAny(s, "*?[{") {
			return path.Clean("/" + strings.Join(segs[:i], "/"))
		}
	}
	return p
}

// DefaultDangerousFiles returns the spec's default dangerous file names
// and the files the host runs later (RunLaterFiles), matched
// case-insensitively against a path's base name; entries with a slash
// match the end of the path, and entries with a glob character (*, ?,
// [, {) are doublestar patterns matched against the path's tail
// (".github/workflows/**" is that directory and all it holds).
func DefaultDangerousFiles() []string {
	return append([]string{".gitconfig", ".gitmodules", ".bashrc", ".bash_profile", ".zshrc", ".zprofile",
		".profile", ".ssh/config", ".ssh/authorized_keys", ".netrc", ".npmrc", ".pypirc", ".env",
		".envrc", ".env.local", ".env.development", ".env.development.local", ".env.test",
		".env.test.local", ".env.staging", ".env.production", ".env.production.local"}, RunLaterFiles()...)
}

// RunLaterFiles are the files something on the host runs or obeys
// later, outside any call: an agent's or editor's own configuration
// (its hooks, MCP servers and permissions), CI workflows, git hooks
// managers and git attributes (filter and diff drivers), Python's
// virtual environment (pyvenv.cfg, activate scripts, .pth files run at
// every interpreter start), pytest's conftest.py, cargo's and yarn's
// configuration. A write to one is a bypass-immune safety ASK, and the
// sandbox keeps them read-only (and moves aside one a call creates)
// unless an Edit/Write allow rule or an approval names them.
func RunLaterFiles() []string {
	return []string{".mcp.json", ".claude/settings.json", ".claude/settings.local.json",
		".github/workflows/**", ".pre-commit-config.yaml", ".gitattributes",
		"pyvenv.cfg", ".venv/bin/activate*", ".venv/**/*.pth", "site-packages/*.pth", "conftest.py",
		".cargo/config.toml", ".cargo/config", ".yarnrc.yml", ".yarnrc"}
}

// DefaultDangerousDirs returns the spec's default dangerous directory
// names and the run-later ones (RunLaterDirs), matched against every
// path segment, case-insensitively.
func DefaultDangerousDirs() []string {
	return append([]string{".git", ".vscode", ".idea", ".ssh"}, RunLaterDirs()...)
}

// RunLaterDirs are directories whose whole content the host runs or
// obeys later: git hooks managers (.husky), agents' and editors' own
// directories (.claude, .codex, .cursor) and dev containers.
func RunLaterDirs() []string {
	return []string{".husky", ".claude", ".codex", ".cursor", ".devcontainer"}
}

// RunsLater reports whether p is one of the default files or
// directories the host runs later (RunLaterFiles, RunLaterDirs).
func RunsLater(p string) bool {
	return IsDangerousPath(p, RunLaterFiles(), RunLaterDirs())
}

// DangerousLists returns the dangerous file and directory lists of c:
// its own where set, else the defaults.
func (c *Context) DangerousLists() (files, dirs []string) {
	files, dirs = DefaultDangerousFiles(), DefaultDangerousDirs()
	if c != nil && c.DangerousFiles != nil {
		files = *c.DangerousFiles
	}
	if c != nil && c.DangerousDirs != nil {
		dirs = *c.DangerousDirs
	}
	return files, dirs
}

// DangerousPath applies c's dangerous file and directory lists (or the
// defaults) to the absolute path p.
func (c *Context) DangerousPath(p string) bool {
	files, dirs := c.DangerousLists()
	return IsDangerousPath(p, files, dirs)
}

// IsDangerousPath reports whether the absolute, clean path p is a
// dangerous file or lies in a dangerous directory under files and dirs.
func IsDangerousPath(p string, files, dirs []string) bool {
	base := path.Base(p)
	for _, f := range files {
		if f == "" {
			continue
		}
		if strings.EqualFold(base, f) {
			return true
		}
		if strings.ContainsAny(f, "*?[{") {
			if ok, _ := doublestar.Match("**/"+strings.ToLower(strings.TrimPrefix(f, "/")), strings.ToLower(p)); ok {
				return true
			}
			continue
		}
		if strings.Contains(f, "/") && len(p) >= len(f) && strings.EqualFold(p[len(p)-len(f):], f) &&
			(len(p) == len(f) || p[len(p)-len(f)-1] == '/') {
			return true
		}
	}
	if len(dirs) == 0 {
		return false
	}
	rest := p
	for rest != "" {
		seg := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			seg, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if seg == "" {
			continue
		}
		for _, d := range dirs {
			if d != "" && strings.EqualFold(seg, d) {
				return true
			}
		}
	}
	return false
}
