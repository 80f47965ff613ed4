package permission

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestSessionPolicyYAML: the session section, window limits and rules
// marked enforce: false read from YAML as a user writes them; the
// log-only rules leave their list for LogOnly, and bad entries are
// refused with the entry named.
func TestSessionPolicyYAML(t *testing.T) {
	t.Parallel()
	doc := `
session:
  trifecta: ask
  rule_of_two: deny
  labels:
    - {rule: "mcp__web__fetch", legs: [untrusted]}
limits:
  - {rule: "Bash(git push:*)", max: 5, per: 1h, scope: agent}
allow: ["Bash(ls)", {rule: "Bash(curl:*)", enforce: false}]
deny:
  - {rule: "Bash(rm:*)", enforce: false, match: ["rm x"]}
  - Bash(dd:*)
`
	var p Policy
	if err := yaml.Unmarshal([]byte(doc), &p); err != nil {
		t.Fatal(err)
	}
	c, err := p.Context()
	if err != nil {
		t.Fatal(err)
	}
	if c.Session == nil || c.Session.Trifecta != Ask || c.Session.RuleOfTwo != Deny || !c.Session.Enforced() || len(c.Session.Labels) != 1 {
		t.Errorf("session: %+v", c.Session)
	}
	if len(c.Limits) != 1 || c.Limits[0].Per != time.Hour || c.Limits[0].Max != 5 || c.Limits[0].Scope != ScopeAgent {
		t.Errorf("limits: %+v", c.Limits)
	}
	if len(c.Allow) != 1 || len(c.Deny) != 1 || c.Deny[0].String() != "Bash(dd:*)" {
		t.Errorf("enforced rules: allow %v deny %v", c.Allow, c.Deny)
	}
	if len(c.LogOnly) != 2 || c.LogOnly[0].String() != "Bash(curl:*)" || c.LogOnly[0].Behavior != Allow || c.LogOnly[1].Behavior != Deny {
		t.Errorf("log-only: %+v", c.LogOnly)
	}
	for _, bad := range []struct{ doc, want string }{
		{"session: {trifecta: allow}", `session.trifecta: "allow" is not ask or deny`},
		{"session: {trifecta: ask, labels: [{rule: Bash, legs: [secret]}]}", `unknown leg "secret"`},
		{"limits: [{rule: Bash(x), max: 0, per: 1h}]", "max must be at least 1"},
		{"limits: [{rule: Bash(x), max: 1, per: 1h, scope: world}]", `scope "world" is not turn or agent`},
		{"dangerous_commands: [{rule: terraform destroy, enforce: false}]", "cannot be log-only"},
	} {
		var p Policy
		err := yaml.Unmarshal([]byte(bad.doc), &p)
		if err == nil {
			_, err = p.Context()
		}
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.doc, err, bad.want)
		}
	}
}

// TestTouched: touches are kept per leg up to MaxTouches, counted, and
// a clear drops the leg's touches and records who cleared it.
func TestTouched(t *testing.T) {
	t.Parallel()
	var tc Touched
	for i := range 6 {
		tc.Add(Touch{Leg: LegUntrusted, CallID: "c" + string(rune('1'+i)), What: "response"})
	}
	tc.Add(Touch{Leg: LegPrivate, CallID: "c9", What: "read of /w/.env"})
	if len(tc.Of(LegUntrusted)) != MaxTouches || tc.Counts[0] != 6 || !tc.Holds(LegPrivate) {
		t.Fatalf("%+v", tc)
	}
	tc.Clear(LegUntrusted, "c10", "alice")
	if tc.Holds(LegUntrusted) || !tc.Holds(LegPrivate) || tc.Counts[0] != 0 || len(tc.Cleared) != 1 || tc.Cleared[0].By != "alice" {
		t.Errorf("after clear: %+v", tc)
	}
}
