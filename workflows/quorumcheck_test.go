package workflows_test

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// TestCheckQuorum: a quorum rule fewer than its approvals approvers
// could ever allow is refused, naming the rule, the number and who
// could; approvers count by their roles (a role the rule is within
// counts, a role of another tool or a Bash prefix apart does not, an
// overlapping one counts with a warning), the requester never counts,
// and a turn without approvers refuses nothing.
func TestCheckQuorum(t *testing.T) {
	team := &workflows.Approvers{
		Users: map[string][]string{"operator": nil, "alice": nil, "kube": {"ops"}, "dev": {"git"}, "writer": {"docs"}, "bash": {"anybash"}},
		Roles: map[string][]string{"ops": {"Bash(kubectl:*)"}, "git": {"Bash(git:*)"}, "docs": {"Write(docs/**)"}, "anybash": {"Bash(ls:*)", "Bash"}},
	}
	restricted := &workflows.Approvers{
		Users: map[string][]string{"operator": nil, "kube": {"ops"}, "kubedel": {"del"}, "dev": {"git"}},
		Roles: map[string][]string{"ops": {"Bash(kubectl:*)"}, "del": {"Bash(kubectl delete pod:*)"}, "git": {"Bash(git:*)"}},
	}
	q := func(rule string, n int) []permission.QuorumRule {
		return []permission.QuorumRule{{Rule: rule, Approvals: n}}
	}
	for _, c := range []struct {
		name      string
		a         *workflows.Approvers
		rules     []permission.QuorumRule
		requester string
		err       []string // substrings of the error; nil: none
		warn      string   // substring of the one warning; "": none
	}{
		{name: "possible: two without roles, kube and bash cover", a: team, rules: q("Bash(kubectl delete:*)", 2)},
		{name: "possible with roles: safety-check calls warned", a: team, rules: q("Bash(kubectl delete:*)", 4),
			warn: "needs 4 distinct approvers but only 2 without roles (alice, operator) may allow a call of it a safety check asks about"},
		{name: "impossible by count", a: team, rules: q("Bash(kubectl delete:*)", 5),
			err: []string{`quorum rule "Bash(kubectl delete:*)" needs 5 distinct approvers, but only 4 could ever allow its calls (alice: no roles; operator: no roles; bash: roles cover it; kube: roles cover it)`,
				"the roles of dev, writer cover none of them", "lower its approvals"}},
		{name: "impossible by roles: four approvers, git does not reach kubectl", a: restricted, rules: q("Bash(kubectl delete:*)", 4),
			err: []string{"needs 4 distinct approvers, but only 3 could ever allow its calls (operator: no roles; kube: roles cover it; kubedel: roles cover some of its calls); the roles of dev cover none of them"}},
		{name: "a narrower role overlaps: warned, not refused", a: restricted, rules: q("Bash(kubectl:*)", 3),
			warn: `quorum rule "Bash(kubectl:*)" needs 3 distinct approvers: kubedel may allow only some of its calls`},
		{name: "role users needed: safety-check calls warned", a: restricted, rules: q("Bash(kubectl delete:*)", 2),
			warn: "needs 2 distinct approvers but only 1 without roles (operator) may allow a call of it a safety check asks about"},
		{name: "requester never counts", a: team, rules: q("Bash(kubectl delete:*)", 4), requester: "alice",
			err: []string{"only 3 could ever allow its calls (operator: no roles; bash: roles cover it; kube: roles cover it)", "alice started the turn, and the requester's allow never counts"}},
		{name: "requester counts toward a quorum of one", a: &workflows.Approvers{Users: map[string][]string{"alice": nil}}, rules: q("Write", 1), requester: "alice"},
		{name: "nobody could", a: &workflows.Approvers{Users: map[string][]string{"dev": {"git"}}, Roles: map[string][]string{"git": {"Bash(git:*)"}}}, rules: q("Write", 2),
			err: []string{`quorum rule "Write" needs 2 distinct approvers, but no approver could ever allow its calls; the roles of dev cover none of them`}},
		{name: "no approvers: anyone may answer", a: nil, rules: q("Bash(kubectl delete:*)", 9)},
		{name: "one error per rule", a: restricted, rules: append(q("Write", 2), permission.QuorumRule{Rule: "Edit", Approvals: 3}),
			err: []string{`quorum rule "Write" needs 2`, `quorum rule "Edit" needs 3`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			warnings, err := workflows.CheckQuorum(c.a, roles.Checker{}, c.rules, c.requester)
			if (err != nil) != (c.err != nil) {
				t.Fatalf("error %v, want one containing %q", err, c.err)
			}
			for _, want := range c.err {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if c.warn == "" && len(warnings) > 0 || c.warn != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], c.warn)) {
				t.Errorf("warnings %q, want %q", warnings, c.warn)
			}
		})
	}
}

// TestQuorumReachWithoutRoleChecker: without a RoleChecker, an approver
// with roles may cover the rule, so only a count that even then falls
// short is refused.
func TestQuorumReachWithoutRoleChecker(t *testing.T) {
	a := &workflows.Approvers{Users: map[string][]string{"alice": nil, "dev": {"git"}}, Roles: map[string][]string{"git": {"Bash(git:*)"}}}
	rule := permission.QuorumRule{Rule: "Bash(kubectl delete:*)", Approvals: 2}
	r, ok, err := workflows.QuorumReachOf(a, nil, rule, "")
	if err != nil || !ok || r.Reachable() != 2 || r.Err() != nil {
		t.Errorf("reach %+v ok %v err %v", r, ok, err)
	}
	rule.Approvals = 3
	if _, err := workflows.CheckQuorum(a, nil, []permission.QuorumRule{rule}, ""); err == nil {
		t.Error("3 of 2 approvers passed")
	}
	bad := &workflows.Approvers{Users: map[string][]string{"dev": {"nope"}}}
	if _, err := workflows.CheckQuorum(bad, roles.Checker{}, []permission.QuorumRule{rule}, ""); err == nil || !strings.Contains(err.Error(), `unknown role "nope"`) {
		t.Errorf("unknown role: %v", err)
	}
}
