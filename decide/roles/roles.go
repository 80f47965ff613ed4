// Package roles checks approvers' roles: whether a role's allow rules
// cover a call, and whether a rule an approver adds is no wider than
// their roles. Checker hands both to the agent-turn workflow
// (workflows.RoleChecker), which runs them in its Update validator and
// signal handler; the inbox runs the same check. It sits above package
// tools, not inside package permission: Cover binds the built-in tool
// the call names and asks decide.Verdict, so permission stays free of the
// tools that use it.
package roles

import (
	"cmp"
	"context"
	"encoding/json"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
	"github.com/wardenhq/warden/tools"
)

// Checker is the role check (workflows.RoleChecker): Cover and Within. It does no I/O and is deterministic, so workflow code may call it.
type Checker struct{}

// RulesCover is Cover.
func (Checker) RulesCover(rules []permission.Rule, tool string, input json.RawMessage, workdir string) bool {
	return Cover(rules, tool, input, workdir)
}

// RulesCoverLinks is CoverLinks (workflows.LinkChecker).
func (Checker) RulesCoverLinks(rules []permission.Rule, tool string, input json.RawMessage, workdir string, links permission.Links) bool {
	return CoverLinks(rules, tool, input, workdir, links)
}

// RuleWithin is Within.
func (Checker) RuleWithin(r permission.Rule, roles []permission.Rule) bool {
	return Within(r, roles)
}

// roleRoot is the workspace a role check resolves relative patterns
// against when it is given none (a check outside any turn): then a
// relative role pattern (Edit(src/**)) covers no real path, and an
// absolute path only an absolute pattern.
const roleRoot = "/.warden-role-check"

// Cover reports whether role rules cover a call. It asks the one
// decision function (decide.Verdict, which does no I/O, so workflow code
// may call it) whether the rules, as the only allow rules and with
// nothing allowed otherwise (no read-only or mode shortcut), allow the
// call: so Bash is matched per simple command, paths are matched
// cleaned, and a sensitive path or a file outside the workspace still
// needs an unrestricted approver. A tool that is not built in (an MCP
// tool) is covered only by a rule naming the whole tool. Paths and
// patterns resolve against workdir, the turn's workspace, as the worker's
// decision resolves them ("" resolves against none, see roleRoot).
func Cover(rules []permission.Rule, tool string, input json.RawMessage, workdir string) bool {
	return CoverLinks(rules, tool, input, workdir, nil)
}

// CoverLinks is Cover of a call whose paths lead through links, as its
// verdict resolved them (decide.Call.Links, workflows.Pending.Links):
// those paths are decided as their targets too, so a role's rules
// cover a path that is a link only when they cover where it leads.
func CoverLinks(rules []permission.Rule, tool string, input json.RawMessage, workdir string, links permission.Links) bool {
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
	v, err := decide.Verdict(context.Background(), decide.Call{Tool: t, Input: input, Workdir: cmp.Or(workdir, roleRoot), Policy: &pc, Links: links})
	return err == nil && v.Behavior == permission.Allow
}

// Within reports whether the rule r (one an approver wants to add
// with "always allow") is no wider than one of the role rules: the same
// tool, and a content the role's content covers. A rule may never widen
// what the approver's roles allow: a user whose role allows only
// Bash(kubectl:*) cannot add Bash, Bash(*) or Bash(rm:*).
func Within(r permission.Rule, roles []permission.Rule) bool {
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
