package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
	"github.com/wardenhq/warden/tools"
)

// Approvers is the approval policy recorded with a turn: who may answer
// its calls and which calls each may answer. The workflow checks every
// answer against it (the Update validator, and the signal handler which
// records refusals as events), so no client can skip it. A turn without
// approvers (nil or no users) accepts answers from anyone.
type Approvers struct {
	// Users maps approver names to their role names. A user without
	// roles may answer every call.
	Users map[string][]string `json:"users"`
	// Roles maps role names to the allow-rule patterns ("Bash(kubectl:*)",
	// "Write") of the calls their members may answer.
	Roles map[string][]string `json:"roles,omitempty"`
}

// Enabled reports whether answers are restricted to the listed users.
func (a *Approvers) Enabled() bool { return a != nil && len(a.Users) > 0 }

// Validate checks that every user's roles exist and their patterns parse.
func (a *Approvers) Validate() error {
	if a == nil {
		return nil
	}
	for _, name := range sortedKeys(a.Users) {
		if name == "" {
			return fmt.Errorf("approvers: empty user name")
		}
		if _, err := a.rules(name); err != nil {
			return err
		}
	}
	return nil
}

// rules returns the allow rules of a user's roles (nil: unrestricted).
func (a *Approvers) rules(user string) ([]permission.Rule, error) {
	roles := a.Users[user]
	if len(roles) == 0 {
		return nil, nil
	}
	out := []permission.Rule{}
	for _, rn := range roles {
		patterns, ok := a.Roles[rn]
		if !ok {
			return nil, fmt.Errorf("approvers: user %q has unknown role %q", user, rn)
		}
		for _, p := range patterns {
			r, err := permission.ParseRule(p, permission.Allow)
			if err != nil {
				return nil, fmt.Errorf("approvers: role %q: %w", rn, err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// MayAnswer checks that user may answer a call of tool with input (and,
// when edited is set, run it with that input instead). With no approvers
// configured everyone may.
func (a *Approvers) MayAnswer(user, tool string, input, edited json.RawMessage) error {
	if !a.Enabled() {
		return nil
	}
	if _, ok := a.Users[user]; !ok {
		return fmt.Errorf("%q is not an approver of this turn", user)
	}
	rules, err := a.rules(user)
	if err != nil {
		return err
	}
	if rules == nil {
		return nil
	}
	if !RulesCover(rules, tool, input) {
		return fmt.Errorf("%s's roles do not cover this %s call", user, tool)
	}
	if len(edited) > 0 && !RulesCover(rules, tool, edited) {
		return fmt.Errorf("%s's roles do not cover the edited %s input", user, tool)
	}
	return nil
}

// MayAddRule checks that user may add the always-allow rule (written
// "Tool" or "Tool(content)"): it must be no wider than the user's roles.
func (a *Approvers) MayAddRule(user, rule string) error {
	r, err := permission.ParseRule(rule, permission.Allow)
	if err != nil {
		return fmt.Errorf("rule %q: %w", rule, err)
	}
	if !a.Enabled() {
		return nil
	}
	if _, ok := a.Users[user]; !ok {
		return fmt.Errorf("%q is not an approver of this turn", user)
	}
	rules, err := a.rules(user)
	if err != nil {
		return err
	}
	if rules != nil && !RuleWithin(r, rules) {
		return fmt.Errorf("rule %s is wider than what %s's roles allow", r, user)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// roleRoot is the workspace a role check resolves relative paths
// against. A role check does not use the turn's workspace, so a relative
// path only matches a relative role pattern ("src/a.go" and Edit(src/**)),
// after cleaning ("src/../../etc/passwd" is /etc/passwd, which it does
// not match), and an absolute path only an absolute one.
const roleRoot = "/.warden-role-check"

// RulesCover reports whether role rules cover a call. It asks the one
// decision function (tools.Decide, which does no I/O, so workflow code
// may call it) whether the rules, as the only allow rules and with
// nothing allowed otherwise (no read-only or mode shortcut), allow the
// call: so Bash is matched per simple command, paths are matched
// cleaned, and a sensitive path or a file outside the workspace still
// needs an unrestricted approver. A tool that is not built in (an MCP
// tool) is covered only by a rule naming the whole tool.
func RulesCover(rules []permission.Rule, tool string, input json.RawMessage) bool {
	var t tools.Tool
	for _, b := range tools.Builtins() {
		if b.Info().Name == tool {
			t = b
			break
		}
	}
	if t == nil {
		return slices.ContainsFunc(rules, func(r permission.Rule) bool { return r.Tool == tool && r.Content == "" })
	}
	pc := permission.Context{Mode: permission.ModeDontAsk, Allow: rules, RulesOnly: true}
	v, err := tools.Decide(context.Background(), tools.Call{Tool: t, Input: input, Workdir: roleRoot, Policy: &pc})
	return err == nil && v.Behavior == permission.Allow
}

// RuleWithin reports whether the rule r (one an approver wants to add
// with "always allow") is no wider than one of the role rules: the same
// tool, and a content the role's content covers. A rule may never widen
// what the approver's roles allow: a user whose role allows only
// Bash(kubectl:*) cannot add Bash, Bash(*) or Bash(rm:*).
func RuleWithin(r permission.Rule, roles []permission.Rule) bool {
	for _, q := range roles {
		if q.Tool != r.Tool {
			continue
		}
		if q.Content == "" {
			return true
		}
		if r.Content == "" {
			continue
		}
		if contentWithin(r.Tool, r.Content, q.Content) {
			return true
		}
	}
	return false
}

// contentWithin reports whether every call rule content rc matches is
// also matched by role content qc.
func contentWithin(tool, rc, qc string) bool {
	if rc == qc {
		return true
	}
	switch tool {
	case "Bash":
		if strings.HasSuffix(qc, ":*") {
			qp := strings.Join(strings.Fields(qc[:len(qc)-2]), " ")
			if strings.HasSuffix(rc, ":*") {
				rp := strings.Join(strings.Fields(rc[:len(rc)-2]), " ")
				return qp != "" && (rp == qp || strings.HasPrefix(rp, qp+" "))
			}
		}
		// An exact command (no wildcard): the role must allow it as it
		// would allow the call, per simple command.
		return !strings.Contains(rc, "*") && shell.Analyze(rc, shell.Config{}).MatchRule(qc, permission.Allow)
	case "Read", "Edit", "Write", "Glob", "Grep":
		// Both are patterns: the cleaned rule pattern, read literally,
		// must be matched by the role pattern ("src/a/**" is within
		// "src/**"; "src/../**" cleans to "**", which is not).
		clean := func(p string) string {
			trail := strings.HasSuffix(p, "/")
			p = path.Clean(p)
			if trail && p != "/" {
				p += "/"
			}
			return p
		}
		rc, qc = clean(rc), clean(qc)
		if (path.IsAbs(rc)) != (path.IsAbs(qc)) || strings.HasPrefix(rc, "../") || rc == ".." {
			return false
		}
		ok, err := doublestar.Match(qc, rc)
		return err == nil && ok
	}
	return false
}
