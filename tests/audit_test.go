package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// TestAuditRecordsDecisions runs two turns — one with a call allowed by a
// rule, an always-allow (which also resolves a covered call), and a
// denial with a reason; one whose ask times out — and checks that the
// audit extracted from their histories says who decided what, and when.
func TestAuditRecordsDecisions(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 90*time.Second)
	start := time.Now().Add(-time.Second)
	s := script(t, `
steps:
  - tool_calls:
      - {id: ok, name: Bash, input: {command: "touch ruled"}}
      - {id: a, name: Bash, input: {command: "touch one"}}
      - {id: b, name: Bash, input: {command: "touch two"}}
      - {id: c, name: Bash, input: {command: "curl http://example.com"}}
  - text: done
`)
	id := "audit-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: policy(t, permission.Policy{Allow: []string{"Bash(touch ruled)"}})}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 3)
	before := time.Now()
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "a", Decision: workflows.DecisionAlwaysAllow,
		Rules: []string{"Bash(touch:*)"}, By: "carol", Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 1)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "c", Decision: workflows.DecisionDeny,
		Reason: "no network from CI", By: "dave"}); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}

	late := "audit-late-" + fmt.Sprint(time.Now().UnixNano())
	s2 := script(t, "steps:\n  - tool_calls: [{id: x, name: Bash, input: {command: \"touch late\"}}]\n  - text: ok\n")
	if _, err := cl.Start(ctx, late, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s2},
		ApprovalTimeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, late); err != nil {
		t.Fatal(err)
	}

	recs, err := audit.Workflow(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		t.Logf("%s %s %-3s %-10s %-12s by=%-6s layer=%s reason=%q rules=%v", r.Time.Format(time.RFC3339Nano), r.WorkflowID, r.CallID, r.Kind, r.Decision, r.By, r.Layer, r.Reason, r.Rules)
	}
	find := func(rs []audit.Record, call, kind string) audit.Record {
		t.Helper()
		i := slices.IndexFunc(rs, func(r audit.Record) bool { return r.CallID == call && r.Kind == kind })
		if i < 0 {
			t.Fatalf("no %s record for call %s in %+v", kind, call, rs)
		}
		return rs[i]
	}
	want := []struct {
		call, kind, decision, by, layer, reason string
	}{
		{"ok", audit.KindPermission, "allow", "policy", "rule", "Bash(touch ruled)"},
		{"a", audit.KindPermission, "ask", "policy", "", ""},
		{"b", audit.KindPermission, "ask", "policy", "", ""},
		{"c", audit.KindPermission, "ask", "policy", "", ""},
		{"a", audit.KindApproval, "always_allow", "carol", "approver", ""},
		{"b", audit.KindRecheck, "allow", "policy", "rule", "Bash(touch:*)"},
		{"c", audit.KindApproval, "deny", "dave", "approver", "no network from CI"},
	}
	for _, w := range want {
		r := find(recs, w.call, w.kind)
		if r.Decision != w.decision || r.By != w.by || r.Tool != "Bash" || r.WorkflowID != id ||
			w.layer != "" && r.Layer != w.layer || !strings.Contains(r.Reason, w.reason) || r.Time.Before(start) || r.Time.After(time.Now()) {
			t.Errorf("%s/%s record = %+v, want decision %s by %s layer %q reason ~%q", w.call, w.kind, r, w.decision, w.by, w.layer, w.reason)
		}
	}
	if r := find(recs, "a", audit.KindApproval); !slices.Equal(r.Rules, []string{"Bash(touch:*)"}) || r.Via != "update" ||
		r.Time.Before(before.Add(-time.Second)) || r.Time.After(after.Add(time.Second)) {
		t.Errorf("always-allow record = %+v (answered between %s and %s)", r, before, after)
	}
	if n := len(slices.DeleteFunc(slices.Clone(recs), func(r audit.Record) bool { return r.Kind != audit.KindApproval })); n != 2 {
		t.Errorf("%d approval records, want 2", n)
	}

	lateRecs, err := audit.Workflow(ctx, env.c, late)
	if err != nil {
		t.Fatal(err)
	}
	ask := find(lateRecs, "x", audit.KindPermission)
	to := find(lateRecs, "x", audit.KindTimeout)
	if to.Decision != "deny" || to.By != "deadline" || to.Layer != "deadline" || !strings.Contains(to.Reason, "2s") {
		t.Errorf("timeout record = %+v", to)
	}
	if waited := to.Time.Sub(ask.Time); waited < 2*time.Second || waited > 10*time.Second {
		t.Errorf("timeout recorded %s after the ask, want about 2s", waited)
	}

	// --since finds both turns.
	all, err := audit.Since(ctx, env.c, start)
	if err != nil {
		t.Fatal(err)
	}
	byWF := map[string]int{}
	for _, r := range all {
		byWF[r.WorkflowID]++
	}
	if byWF[id] != len(recs) || byWF[late] != len(lateRecs) {
		t.Errorf("Since: %d and %d records for the two turns, want %d and %d", byWF[id], byWF[late], len(recs), len(lateRecs))
	}
	if !slices.IsSortedFunc(all, func(a, b audit.Record) int { return a.Time.Compare(b.Time) }) {
		t.Error("Since records are not in time order")
	}
	if none, err := audit.Since(ctx, env.c, time.Now().Add(time.Hour)); err != nil || len(none) != 0 {
		t.Errorf("Since(future) = %d records, %v", len(none), err)
	}
}
