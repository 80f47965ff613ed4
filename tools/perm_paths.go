package tools

import (
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
)

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

// workingDirs returns the absolute, clean working directories: the
// workdir and pc.WorkingDirs (the turn's and the configuration's
// additional directories).
func workingDirs(env *Env, pc *permission.Context) []string {
	var out []string
	add := func(d string) {
		if d == "" {
			return
		}
		d = absPath(env, d)
		if path.IsAbs(d) && !contains(out, d) {
			out = append(out, d)
		}
	}
	add(workdir(env))
	if pc != nil {
		for _, d := range pc.WorkingDirs {
			add(d)
		}
	}
	return out
}

func insideDirs(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || d == "/" || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
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

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// checkAccess applies the path rules to one access. home is the backend
// user's home ("" when unknown).
func checkAccess(env *Env, pc *permission.Context, home string, acc shell.Access) (pathCheck, error) {
	verb, names := "read", []string{"Read"}
	if acc.Write {
		verb, names = "write", []string{"Edit", "Write"}
	}
	where := ""
	if acc.Command != "" {
		where = " (in `" + oneLine(acc.Command) + "`)"
	}
	if !acc.Resolved {
		return pathCheck{behavior: permission.Ask, short: fmt.Sprintf("%s of unresolved path %q", verb, acc.Path),
			why: fmt.Sprintf("cannot tell which file %q names%s, so its %s cannot be checked", acc.Path, where, verb)}, nil
	}
	p := acc.Path
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
	check := p
	if acc.Glob {
		check = shell.GlobBase(p)
	}
	dirs := workingDirs(env, pc)
	if insideDirs(check, dirs) {
		return pathCheck{behavior: permission.Passthrough}, nil
	}
	ruleDir := path.Dir(check)
	if ruleDir == "/" {
		ruleDir = check
	}
	return pathCheck{behavior: permission.Ask, short: fmt.Sprintf("%s of %s outside the working directories", verb, p),
		why: fmt.Sprintf("%s of %s%s is outside the working directories (%s); add the directory to the turn's or the config's working_dirs, or allow it with a rule such as %s(%s/**)",
			verbNoun(verb), p, where, strings.Join(dirs, ", "), names[0], strings.TrimSuffix(ruleDir, "/"))}, nil
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
			return permission.Decision{Behavior: permission.Deny,
				Message: fmt.Sprintf("Permission denied for %s: %s", tool, c.why),
				Reason:  "Rule: " + c.rule.String()}, nil
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
