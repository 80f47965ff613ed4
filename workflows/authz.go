package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/wardenhq/warden/permission"
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

// MayAnswer checks, with rc, that user may answer a call of tool with input (and,
// when edited is set, run it with that input instead). With no approvers
// configured everyone may.
func (a *Approvers) MayAnswer(rc RoleChecker, user, tool string, input, edited json.RawMessage, workdir string) error {
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
	if rc == nil {
		return errNoRoleChecker
	}
	if !rc.RulesCover(rules, tool, input, workdir) {
		return fmt.Errorf("%s's roles do not cover this %s call", user, tool)
	}
	if len(edited) > 0 && !rc.RulesCover(rules, tool, edited, workdir) {
		return fmt.Errorf("%s's roles do not cover the edited %s input", user, tool)
	}
	return nil
}

// MayAddRule checks, with rc, that user may add the always-allow rule (written
// "Tool" or "Tool(content)"): it must be no wider than the user's roles.
func (a *Approvers) MayAddRule(rc RoleChecker, user, rule string) error {
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
	if rules == nil {
		return nil
	}
	if rc == nil {
		return errNoRoleChecker
	}
	if !rc.RuleWithin(r, rules) {
		return fmt.Errorf("rule %s is wider than what %s's roles allow", r, user)
	}
	return nil
}

// RolesFor lists, sorted, the roles whose patterns cover a call of tool
// with input (notification routes match them). Without a RoleChecker or
// roles it lists none.
func (a *Approvers) RolesFor(rc RoleChecker, tool string, input json.RawMessage, workdir string) []string {
	if a == nil || rc == nil {
		return nil
	}
	var out []string
	for _, name := range sortedKeys(a.Roles) {
		var rules []permission.Rule
		for _, pat := range a.Roles[name] {
			if r, err := permission.ParseRule(pat, permission.Allow); err == nil {
				rules = append(rules, r)
			}
		}
		if len(rules) > 0 && rc.RulesCover(rules, tool, input, workdir) {
			out = append(out, name)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// RoleChecker checks an approver's roles against a call and against a
// rule an always-allow would add. Its methods run in workflow code (the
// Update validator and the signal handler), so they must be
// deterministic and do no I/O; roles.Checker is the permission engine's.
// It is a field of the registered Workflow rather than code workflows
// links, so workflow code does not link the tools, their backends or the
// shell parser.
type RoleChecker interface {
	// RulesCover reports whether role rules cover a call of tool with
	// input, its paths resolved against workdir (the turn's workspace;
	// "" none) as the worker's decision resolves them.
	RulesCover(rules []permission.Rule, tool string, input json.RawMessage, workdir string) bool
	// RuleWithin reports whether rule r is no wider than one of the role rules.
	RuleWithin(r permission.Rule, roles []permission.Rule) bool
}

// LinkChecker is a RoleChecker that also decides a call's paths through
// the symbolic links its verdict resolved (Pending.Links), as the
// verdict did: a role covering Write(notes/**) does not cover a write
// of notes/key when notes/key leads to ~/.ssh/authorized_keys.
// roles.Checker is one. Like RoleChecker, it runs in workflow code.
type LinkChecker interface {
	RulesCoverLinks(rules []permission.Rule, tool string, input json.RawMessage, workdir string, links permission.Links) bool
}

// WithLinks is rc checking calls whose paths lead through links: its
// RulesCover decides them through links when rc is a LinkChecker. It
// is rc itself without links or a LinkChecker (nil stays nil).
func WithLinks(rc RoleChecker, links permission.Links) RoleChecker {
	lc, ok := rc.(LinkChecker)
	if !ok || len(links) == 0 {
		return rc
	}
	return linkedChecker{RoleChecker: rc, lc: lc, links: links}
}

// linkedChecker is a RoleChecker bound to one call's links (WithLinks).
type linkedChecker struct {
	RoleChecker
	lc    LinkChecker
	links permission.Links
}

func (c linkedChecker) RulesCover(rules []permission.Rule, tool string, input json.RawMessage, workdir string) bool {
	return c.lc.RulesCoverLinks(rules, tool, input, workdir, c.links)
}

// errNoRoleChecker refuses answers a worker without a RoleChecker cannot check.
var errNoRoleChecker = errors.New("this worker has no role checker: answers by approvers with roles are refused")
