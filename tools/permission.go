package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
)

// Call is one tool call to decide, with everything the decision needs
// resolved beforehand, so that no I/O happens inside it.
type Call struct {
	Tool  Tool
	Input json.RawMessage
	// Workdir is the workspace directory inside the backend; it is
	// always a working directory.
	Workdir string
	// Home is the backend user's home directory, resolved once per
	// backend outside the decision (backend.Backend.Home); "" means
	// unknown, which makes ~ paths unresolvable (they ask).
	Home string
	// Policy is the turn's permission context; nil means the default.
	Policy *permission.Context
	// Validator caches compiled schemas across calls; nil validates
	// without a cache.
	Validator *Validator
	// State is the turn's tool state as the call will find it, for the
	// input checks that depend on it (an Edit of a file not read in this
	// turn); see State.Anticipate for calls decided together. nil means
	// unknown: those checks are left to the call itself.
	State *State
	// Sandboxed says the call will run in the local kernel sandbox, which
	// sandbox.auto_allow requires.
	Sandboxed bool
	// ToolNetwork is the network the worker's settings give every call
	// of the tool (tools.NAME.network, tools.NAME.network_hosts); nil:
	// none.
	ToolNetwork *NetworkGrant
}

// Decide is the one decision function for a tool call: it validates the
// input against the tool's schema (a *ValidationError, wrapped, when it
// does not fit), runs the tool's own input check (InputChecker: an
// *InputError, wrapped, when the call would fail without running), and
// only then runs the permission engine (permission.Evaluate) on the tool
// bound to the call's workspace, so that no call that cannot succeed is
// put to a human. The worker's Prepare, "starter permission check" and
// the inbox's role check all call it. The tool gets no backend: nothing
// inside the decision can touch the workspace. A Bash command is parsed
// once per call, whatever the number of rules.
func Decide(ctx context.Context, c Call) (permission.Verdict, error) {
	if c.Tool == nil {
		return permission.Verdict{}, errors.New("decide: no tool")
	}
	v := c.Validator
	if v == nil {
		v = &Validator{}
	}
	name := c.Tool.Info().Name
	if err := v.Validate(c.Tool.Info(), c.Input); err != nil {
		return permission.Verdict{}, fmt.Errorf("decide %s: %w", name, err)
	}
	pc := permission.Context{}
	if c.Policy != nil {
		pc = *c.Policy
	}
	if pc.Mode == "" {
		pc.Mode = permission.ModeDefault
	}
	if c.Workdir != "" && !slices.Contains(pc.WorkingDirs, c.Workdir) {
		pc.WorkingDirs = append(slices.Clone(pc.WorkingDirs), c.Workdir)
	}
	env := &Env{Workdir: c.Workdir, Permission: &pc, State: c.State}
	if ic, ok := c.Tool.(InputChecker); ok {
		if err := ic.CheckInput(ctx, env, c.Input); err != nil {
			return permission.Verdict{}, fmt.Errorf("decide %s: %w", name, err)
		}
	}
	env.State = nil // the permission checks do not depend on it
	b := bindTool(c.Tool, env, c.Home, &pc)
	b.memo.tool = c.ToolNetwork
	verdict, err := permission.Evaluate(ctx, &pc, b, c.Input)
	if err != nil {
		return verdict, err
	}
	return autoAllow(ctx, b, c, &pc, verdict), nil
}

func cleanHome(h string) string {
	if h == "" || !path.IsAbs(h) {
		return ""
	}
	return path.Clean(h)
}

// ForPermission binds a tool to its environment and adapts it to the
// permission engine, filling in the defaults of AgentScope's ToolBase for
// the checker interfaces the tool does not implement. The backend's home
// is not resolved (~ paths are unknown); prefer Decide.
func ForPermission(t Tool, env *Env) permission.Tool {
	var pc *permission.Context
	if env != nil {
		pc = env.Permission
	}
	return bindTool(t, env, "", pc)
}

// bindTool binds t to env for one decision or match, with a fresh memo
// holding the backend's home (cleaned; "" or a relative home is unknown)
// and the policy pc: the checker methods called through the binding share
// the analysis of a Bash command.
func bindTool(t Tool, env *Env, home string, pc *permission.Context) bound {
	return bound{t: t, env: env, memo: &memo{home: cleanHome(home), pc: pc}}
}

// memo holds what one decision computes once: the backend's home, the
// policy, and the analysis of a Bash command.
type memo struct {
	home     string
	pc       *permission.Context
	tool     *NetworkGrant
	input    string
	analysis *shell.Analysis
	// raw is the JSON input the analysis is of.
	raw string
	// parses counts the analyses made (one per decision).
	parses int
}

type memoKey struct{}

// memoFrom returns the memo of the call being decided, or nil.
func memoFrom(ctx context.Context) *memo {
	m, _ := ctx.Value(memoKey{}).(*memo)
	return m
}

type bound struct {
	t    Tool
	env  *Env
	memo *memo
}

func (b bound) ctx(ctx context.Context) context.Context {
	if b.memo == nil {
		return ctx
	}
	return context.WithValue(ctx, memoKey{}, b.memo)
}

func (b bound) Name() string { return b.t.Info().Name }

func (b bound) CheckPermissions(ctx context.Context, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	if c, ok := b.t.(PermissionChecker); ok {
		return c.CheckPermissions(b.ctx(ctx), b.env, input, pc)
	}
	return permission.Decision{Behavior: permission.Passthrough}, nil
}

func (b bound) CheckReadOnly(ctx context.Context, input json.RawMessage) (bool, error) {
	if c, ok := b.t.(ReadOnlyChecker); ok {
		return c.CheckReadOnly(b.ctx(ctx), b.env, input)
	}
	return b.t.Info().ReadOnly, nil
}

func (b bound) MatchRule(ctx context.Context, content string, input json.RawMessage) (bool, error) {
	if m, ok := b.t.(RuleMatcher); ok {
		return m.MatchRule(b.ctx(ctx), b.env, content, input)
	}
	if content == "" {
		return true, nil
	}
	// A content rule of a tool that cannot match content: refused, never
	// quietly unmatched (a deny rule that denies nothing).
	beh, _ := permission.RuleBehaviorFrom(ctx)
	return false, &UnmatchableRuleError{Rule: permission.Rule{Tool: b.Name(), Content: content, Behavior: beh}, Why: noMatcher(b.Name(), SourceOf(b.t))}
}

func (b bound) GenerateSuggestions(ctx context.Context, input json.RawMessage) ([]permission.Rule, error) {
	if s, ok := b.t.(Suggester); ok {
		return s.GenerateSuggestions(b.ctx(ctx), b.env, input)
	}
	return []permission.Rule{{Tool: b.Name(), Behavior: permission.Allow, Source: "suggested"}}, nil
}

// DecideOrAsk is Decide as the worker applies it: an input that does not
// fit the tool's schema or fails the tool's input check gives invalid
// (the tool error the model reads) and no verdict; any other error fails
// closed to an ASK that says the check failed. The worker's Prepare and "starter permission check" both
// use it, so they answer alike.
func DecideOrAsk(ctx context.Context, c Call) (v permission.Verdict, invalid string) {
	v, err := Decide(ctx, c)
	var ve *ValidationError
	var ie *InputError
	switch {
	case errors.As(err, &ve):
		return permission.Verdict{}, ve.Error()
	case errors.As(err, &ie):
		return permission.Verdict{}, ie.Message
	case err != nil:
		name := ""
		if c.Tool != nil {
			name = c.Tool.Info().Name
		}
		mode := permission.ModeDefault
		if c.Policy != nil && c.Policy.Mode != "" {
			mode = c.Policy.Mode
		}
		return permission.Verdict{Decision: permission.Decision{Behavior: permission.Ask,
			Message: "Permission required for " + name + ": the permission check failed (" + err.Error() + ")",
			Reason:  "Check failed: " + err.Error()}, Layer: "check failed", Mode: mode}, ""
	}
	return v, ""
}

// The path rules every file access goes through, whichever tool makes
// it: Read, Glob, Grep and read-only Bash commands for reads; Write,
// Edit and every write target of a Bash command (redirections, operands
// of file commands, output options) for writes. In order:
//
//  1. a path that cannot be resolved statically asks;
//  2. a deny rule of the path tools (Read for reads; Edit or Write for
//     writes) whose pattern matches the path denies;
//  3. a sensitive path (permission.Context.Sensitive) asks, even inside
//     the working directories;
//  4. an ask rule of the path tools asks;
//  5. an allow rule of the path tools allows;
//  6. inside the working directories: reads are allowed, writes follow
//     the call's own flow (its mode and its rules);
//  7. outside them: ask.
//
// The asks are bypass-immune: an allow rule for a command (Bash(echo:*))
// allows the command, not a write to /etc/cron.d.

// pathCheck is the outcome for one access: Passthrough when the path
// rules have no objection.
type pathCheck struct {
	behavior permission.Behavior
	// why names the path and what about it decided; short is the same
	// in a few words, for the verdict's reason.
	why, short string
	// rule is the rule that decided, if any.
	rule *permission.Rule
}

// sensitiveProbes are file names a glob is tried against to see whether
// it could reach a sensitive file ("cat .e*", "cat ~/.ssh/*").
func sensitiveProbes() []string {
	return []string{".env", ".env.local", ".envrc", "id_rsa", "id_ed25519", "key.pem", "server.key",
		".bashrc", ".profile", ".zshrc", ".netrc", ".npmrc", ".pypirc", ".git-credentials", "environ", "shadow", "credentials", "config"}
}

// sensitiveMatch returns the sensitive pattern p matches, or "". A
// pattern starting with "~/" is relative to home.
func sensitiveMatch(patterns []string, home, p string, glob bool) string {
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
		base := shell.GlobBase(p)
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

// pathRule returns the first rule of rules for one of the tools names
// whose pattern matches p.
func pathRule(env *Env, rules []permission.Rule, names []string, p string) (*permission.Rule, error) {
	for i := range rules {
		r := &rules[i]
		if !contains(names, r.Tool) {
			continue
		}
		if r.Content == "" {
			return r, nil
		}
		ok, err := matchPath(env, r.Content, p)
		if err != nil {
			return nil, err
		}
		if ok {
			return r, nil
		}
	}
	return nil, nil
}

// checkAccess applies the path rules to one access. home is the backend
// user's home ("" when unknown).
func checkAccess(env *Env, pc *permission.Context, home string, acc shell.Access) (pathCheck, error) {
	a := describeAccess(acc)
	verb, names, where := a.verb, a.names, a.where
	if !acc.Resolved {
		return pathCheck{behavior: permission.Ask, short: fmt.Sprintf("%s of unresolved path %q", verb, acc.Path),
			why: fmt.Sprintf("cannot tell which file %q names%s, so its %s cannot be checked", acc.Path, where, verb)}, nil
	}
	p := acc.Path
	if pat := sensitiveMatch(pc.ProtectedPaths(), home, p, acc.Glob); pat != "" {
		return pathCheck{behavior: permission.Deny, short: fmt.Sprintf("%s of protected path %s", verb, p),
			why: fmt.Sprintf("%s is protected (%s)%s: it is the worker's own (keys, content, database, config) or a process environment, and no tool may %s it in any mode", p, pat, where, verb)}, nil
	}
	var deny, ask, allow []permission.Rule
	if pc != nil {
		deny, ask, allow = pc.Deny, pc.Ask, pc.Allow
	}
	if r, err := pathRule(env, deny, names, p); err != nil || r != nil {
		if err != nil {
			return pathCheck{}, err
		}
		return pathCheck{behavior: permission.Deny, rule: r,
			why: fmt.Sprintf("the deny rule %s forbids the %s of %s%s", r, verb, p, where)}, nil
	}
	if pat := sensitiveMatch(pc.Sensitive(), home, p, acc.Glob); pat != "" {
		return pathCheck{behavior: permission.Ask, short: fmt.Sprintf("%s of sensitive path %s", verb, p),
			why: fmt.Sprintf("%s is a sensitive path (%s)%s: it may hold secrets or change what runs, so its %s always asks", p, pat, where, verb)}, nil
	}
	if acc.Recursive && home != "" && (p == home || p == "/" || strings.HasPrefix(home, p+"/")) {
		return pathCheck{behavior: permission.Ask, short: fmt.Sprintf("recursive read of %s", p),
			why: fmt.Sprintf("%s%s reads everything below %s, which holds the home directory and its credentials, so it always asks", p, where, p)}, nil
	}
	if r, err := pathRule(env, ask, names, p); err != nil || r != nil {
		if err != nil {
			return pathCheck{}, err
		}
		return pathCheck{behavior: permission.Ask, rule: r, short: fmt.Sprintf("%s of %s matches the ask rule %s", verb, p, r),
			why: fmt.Sprintf("the ask rule %s matches the %s of %s%s", r, verb, p, where)}, nil
	}
	if r, err := pathRule(env, allow, names, p); err != nil || r != nil {
		return pathCheck{behavior: permission.Passthrough, rule: r}, err
	}
	return a.workingDirCheck(env, pc), nil
}

// accessView is one access together with the words checkAccess's messages
// use for it.
type accessView struct {
	acc   shell.Access
	verb  string   // "read" or "write"
	names []string // the tools whose path rules govern the access
	where string   // " (in `command`)", or "" when no command is known
}

// describeAccess returns acc with its verb, rule tool names and command
// suffix.
func describeAccess(acc shell.Access) accessView {
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
func (a accessView) workingDirCheck(env *Env, pc *permission.Context) pathCheck {
	p := a.acc.Path
	check := p
	if a.acc.Glob {
		check = shell.GlobBase(p)
	}
	dirs := workingDirs(env, pc)
	if insideDirs(check, dirs) {
		return pathCheck{behavior: permission.Passthrough}
	}
	ruleDir := path.Dir(check)
	if ruleDir == "/" {
		ruleDir = check
	}
	return pathCheck{behavior: permission.Ask, short: fmt.Sprintf("%s of %s outside the working directories", a.verb, p),
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

// checkAccesses applies the path rules to every access and returns the
// strictest outcome as a tool decision: DENY for a denied path, a
// bypass-immune ASK naming every path that asks, or Passthrough.
func checkAccesses(tool string, env *Env, pc *permission.Context, home string, accs []shell.Access) (permission.Decision, error) {
	var asks []string
	short := ""
	for _, acc := range accs {
		c, err := checkAccess(env, pc, home, acc)
		if err != nil {
			return permission.Decision{}, err
		}
		switch c.behavior {
		case permission.Deny:
			reason := "Safety check: protected path (" + c.short + ")"
			if c.rule != nil {
				reason = "Rule: " + c.rule.String()
			}
			return permission.Decision{Behavior: permission.Deny,
				Message: fmt.Sprintf("Permission denied for %s: %s", tool, c.why),
				Reason:  reason}, nil
		case permission.Ask:
			if !contains(asks, c.why) {
				asks = append(asks, c.why)
			}
			if short == "" {
				short = c.short
			}
		}
	}
	if len(asks) == 0 {
		return permission.Decision{Behavior: permission.Passthrough}, nil
	}
	return permission.Decision{Behavior: permission.Ask, BypassImmune: true,
		Message: fmt.Sprintf("Permission required for %s: %s", tool, strings.Join(asks, "; ")),
		Reason:  "Safety check: path rules (" + short + ")"}, nil
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

// checkEdit is the shared Write/Edit check (spec §1.4) of the file at
// filePath: the path rules; then a sensitive path is a safety ASK; in
// ACCEPT_EDITS and DONT_ASK a path inside a working directory is
// allowed; everything else passes through.
func checkEdit(ctx context.Context, tool string, env *Env, filePath string, pc *permission.Context) (permission.Decision, error) {
	if filePath == "" {
		return permission.Decision{Behavior: permission.Passthrough, Reason: "Tool check: no file_path"}, nil
	}
	p := absPath(env, filePath)
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

// dirSuggestion is the "parent directory/**" rule of spec §1.6.
func dirSuggestion(tool, dir string) []permission.Rule {
	dir = strings.TrimRight(dir, `/\`)
	content := "**"
	if dir != "" && dir != "." {
		content = dir + "/**"
	}
	return []permission.Rule{{Tool: tool, Content: content, Behavior: permission.Allow, Source: "suggested"}}
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
