package workflows

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wardenhq/warden/permission"
)

// QuorumReach is who, among a turn's approvers, could allow the calls
// of one quorum rule (CheckQuorum). Each approver is in one list.
type QuorumReach struct {
	Rule permission.QuorumRule
	// Anyone are the approvers without roles: they may allow every call
	// of the rule, one a safety check asks about too.
	Anyone []string
	// Covering are the approvers whose roles cover the rule (a role
	// pattern it is within, RoleChecker.RuleWithin: Bash(kubectl:*)
	// covers Bash(kubectl delete:*)): they may allow its calls, but not
	// one a safety check asks about (roles never cover those).
	Covering []string
	// Some are the approvers whose roles may cover some of its calls
	// but not the rule (Bash(kubectl:*) for a rule Bash, or patterns that
	// overlap), and, without a RoleChecker, every approver with roles.
	Some []string
	// None are the approvers whose roles cover none of its calls (roles
	// of other tools, Bash prefixes that do not meet).
	None []string
	// Requester is the turn's requester when it is an approver and the
	// rule needs more than one: its allow never counts (checkQuorum).
	Requester string
}

// Reachable is how many distinct approvers could allow some call of
// the rule: fewer than Rule.Approvals makes it impossible.
func (q QuorumReach) Reachable() int { return len(q.Anyone) + len(q.Covering) + len(q.Some) }

// QuorumReachOf works out who of approvers a could allow the calls of
// quorum rule q, with rc, on a turn requester started ("" when no turn
// is known: the worker's config, a policy file). The requester never
// counts toward a quorum of two or more, as the workflow counts
// (checkQuorum); an approver counts once. With approvers not enabled
// (nobody listed: anyone may answer, and any two names are two
// approvers) every rule is reachable, and it reports ok false.
func QuorumReachOf(a *Approvers, rc RoleChecker, q permission.QuorumRule, requester string) (QuorumReach, bool, error) {
	r := QuorumReach{Rule: q}
	if !a.Enabled() {
		return r, false, nil
	}
	rule, err := permission.ParseRule(q.Rule, permission.Deny)
	if err != nil {
		return r, false, fmt.Errorf("quorum rule %q: %w", q.Rule, err)
	}
	for _, user := range sortedKeys(a.Users) {
		if q.Approvals >= 2 && requester != "" && user == requester {
			r.Requester = user
			continue
		}
		rules, err := a.rules(user)
		if err != nil {
			return r, false, err
		}
		switch {
		case rules == nil:
			r.Anyone = append(r.Anyone, user)
		case rc == nil:
			r.Some = append(r.Some, user)
		case rc.RuleWithin(rule, rules):
			r.Covering = append(r.Covering, user)
		case mayMeet(rc, rule, rules):
			r.Some = append(r.Some, user)
		default:
			r.None = append(r.None, user)
		}
	}
	return r, true, nil
}

// mayMeet reports whether a role rule could allow some call the quorum
// rule q matches, without covering q. It is true unless that is
// certainly impossible: a role rule of another tool never allows a call
// of q's tool, and a Bash prefix rule never allows a command that starts
// with a prefix neither of it nor within it (Bash(git:*) and
// Bash(kubectl delete:*)). Roles that allow a wrapper (Bash(xargs:*),
// Bash(env:*)) cover the wrapped command: they are counted for a rule
// only when it names the wrapper.
func mayMeet(rc RoleChecker, q permission.Rule, roles []permission.Rule) bool {
	for _, r := range roles {
		if r.Tool != q.Tool {
			continue
		}
		if q.Content == "" || r.Content == "" || rc.RuleWithin(r, []permission.Rule{q}) {
			return true
		}
		if q.Tool == "Bash" && bashPrefixesApart(q.Content, r.Content) {
			continue
		}
		return true // patterns that may overlap: not certainly apart
	}
	return false
}

// bashPrefixesApart reports whether two Bash prefix rules ("git:*",
// "kubectl delete:*") cannot match one command: neither prefix starts
// the other (compared as characters, so "kubectl del" and "kubectl
// delete" are not apart).
func bashPrefixesApart(a, b string) bool {
	pa, okA := strings.CutSuffix(a, ":*")
	pb, okB := strings.CutSuffix(b, ":*")
	if !okA || !okB || strings.Contains(pa, "*") || strings.Contains(pb, "*") {
		return false
	}
	pa, pb = strings.Join(strings.Fields(pa), " "), strings.Join(strings.Fields(pb), " ")
	return pa != "" && pb != "" && !strings.HasPrefix(pa, pb) && !strings.HasPrefix(pb, pa)
}

// CheckQuorum checks that approvers a can meet every quorum rule of
// rules on a turn requester started ("" for none known), with rc (the
// role check, roles.Checker; nil counts every approver with roles as
// one who may). A rule fewer than its approvals distinct approvers could
// ever allow is refused: the error names it, the number and who could
// answer, one error per rule (errors.Join). A rule some of whose calls
// cannot be met (roles that cover only part of it; a call a safety
// check asks about, which only approvers without roles may allow) gets
// a warning. Without approvers (anyone may answer) nothing is refused.
// The worker's start (node.Check), client.Start and `starter policy
// apply` all call it, through client.CheckQuorum.
func CheckQuorum(a *Approvers, rc RoleChecker, rules []permission.QuorumRule, requester string) (warnings []string, err error) {
	var errs []error
	for _, q := range rules {
		r, ok, err := QuorumReachOf(a, rc, q, requester)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue
		}
		if err := r.Err(); err != nil {
			errs = append(errs, err)
			continue
		}
		if w := r.Warning(); w != "" {
			warnings = append(warnings, w)
		}
	}
	return warnings, errors.Join(errs...)
}

// Err refuses a rule fewer than its approvals approvers could ever
// allow, naming the rule, the number, who could and who cannot.
func (q QuorumReach) Err() error {
	n := q.Reachable()
	if n >= q.Rule.Approvals {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "quorum rule %q needs %d distinct %s, but ", q.Rule.Rule, q.Rule.Approvals, plural(q.Rule.Approvals, "approver", "approvers"))
	if n == 0 {
		b.WriteString("no approver could ever allow its calls")
	} else {
		fmt.Fprintf(&b, "only %d could ever allow its calls (%s)", n, q.could())
	}
	if len(q.None) > 0 {
		fmt.Fprintf(&b, "; the roles of %s cover none of them", strings.Join(q.None, ", "))
	}
	if q.Requester != "" {
		fmt.Fprintf(&b, "; %s started the turn, and the requester's allow never counts", q.Requester)
	}
	b.WriteString(": give more approvers roles that cover the rule (inbox.users, inbox.roles) or lower its approvals")
	return errors.New(b.String())
}

// Warning is what may keep some calls of a reachable rule waiting: roles
// that cover only part of it, or a call a safety check asks about,
// which only approvers without roles may allow; "" when neither.
func (q QuorumReach) Warning() string {
	need := q.Rule.Approvals
	if q.Reachable() < need {
		return ""
	}
	if len(q.Anyone)+len(q.Covering) < need {
		return fmt.Sprintf("quorum rule %q needs %d distinct approvers: %s may allow only some of its calls (their roles do not cover the rule), so a call outside their roles waits until its deadline", q.Rule.Rule, need, strings.Join(q.Some, ", "))
	}
	if len(q.Anyone) < need {
		who := "no approver without roles"
		if len(q.Anyone) > 0 {
			who = fmt.Sprintf("only %d without roles (%s)", len(q.Anyone), strings.Join(q.Anyone, ", "))
		}
		return fmt.Sprintf("quorum rule %q needs %d distinct approvers but %s may allow a call of it a safety check asks about (a dangerous command, a sensitive path, a file outside the workspace): roles never cover such a call, so it waits until its deadline", q.Rule.Rule, need, who)
	}
	return ""
}

// could lists who could allow the rule's calls and why.
func (q QuorumReach) could() string {
	var parts []string
	for _, u := range q.Anyone {
		parts = append(parts, u+": no roles")
	}
	for _, u := range q.Covering {
		parts = append(parts, u+": roles cover it")
	}
	for _, u := range q.Some {
		parts = append(parts, u+": roles cover some of its calls")
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
