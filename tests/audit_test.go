package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// TestAuditRecordsDecisions runs two turns — one with a call allowed by a
// rule, an always-allow (which also resolves a covered call), and a
// denial with a reason; one whose ask times out — and checks that the
// audit extracted from their histories says who decided what, and when,
// with the layer the engine recorded ("allow rule", "mode").
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
	left := waitPending(t, cl, id, 1) // c, listed again after the always-allow
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "c", Decision: workflows.DecisionDeny,
		Reason: "no network from CI", By: "dave", Hash: left[0].Hash}); err != nil {
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
	logRecords(t, recs)
	find := func(rs []audit.Record, call, kind string) audit.Record {
		t.Helper()
		return findRecord(t, rs, call, kind)
	}
	want := []struct {
		call, kind, decision, by, layer, reason string
	}{
		{"ok", audit.KindPermission, "allow", "policy", "allow rule", "Bash(touch ruled)"},
		{"a", audit.KindPermission, "ask", "policy", "mode", ""},
		{"b", audit.KindPermission, "ask", "policy", "", ""},
		{"c", audit.KindPermission, "ask", "policy", "", ""},
		{"a", audit.KindApproval, "always_allow", "carol", "approver", ""},
		{"b", audit.KindRecheck, "allow", "policy", "allow rule", "Bash(touch:*)"},
		{"c", audit.KindApproval, "deny", "dave", "approver", "no network from CI"},
	}
	for _, w := range want {
		r := find(recs, w.call, w.kind)
		if r.Decision != w.decision || r.By != w.by || r.Tool != "Bash" || r.WorkflowID != id ||
			w.layer != "" && r.Layer != w.layer || !strings.Contains(r.Reason, w.reason) || r.Time.Before(start) || r.Time.After(time.Now()) {
			t.Errorf("%s/%s record = %+v, want decision %s by %s layer %q reason ~%q", w.call, w.kind, r, w.decision, w.by, w.layer, w.reason)
		}
	}
	if r := find(recs, "a", audit.KindApproval); !slices.Equal(r.Rules, []string{"Bash(touch:*)"}) || r.Path != audit.PathUpdate ||
		r.By != "carol" || string(r.ProposedInput) != `{"command":"touch one"}` || string(r.ApprovedInput) != `{"command":"touch one"}` ||
		r.Time.Before(before.Add(-time.Second)) || r.Time.After(after.Add(time.Second)) {
		t.Errorf("always-allow record = %+v (answered between %s and %s)", r, before, after)
	}
	if r := find(recs, "c", audit.KindApproval); r.Path != audit.PathUpdate || r.By != "dave" || r.ApprovedInput != nil {
		t.Errorf("denial record = %+v", r)
	}
	// Each verdict carries the sandbox the call runs in.
	for _, call := range []string{"ok", "a", "b", "c"} {
		if r := find(recs, call, audit.KindPermission); !strings.HasPrefix(r.Sandbox, "write ") || !strings.Contains(r.Sandbox, "network off") {
			t.Errorf("%s: permission record sandbox %q", call, r.Sandbox)
		}
	}
	for call, input := range map[string]string{"ok": "touch ruled", "a": "touch one", "b": "touch two"} {
		r := find(recs, call, audit.KindExecution)
		if want := `{"command":"` + input + `"}`; string(r.EffectiveInput) != want || string(r.ProposedInput) != want {
			t.Errorf("execution of %s = %+v, want effective input %s", call, r, want)
		}
	}
	if slices.ContainsFunc(recs, func(r audit.Record) bool { return r.CallID == "c" && r.Kind == audit.KindExecution }) {
		t.Error("the denied call has an execution record")
	}
	for _, r := range recs {
		if r.Kind == audit.KindPermission && (r.Path != audit.PathRule || r.By != "policy") {
			t.Errorf("permission record without the rule path: %+v", r)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(recs), func(r audit.Record) bool { return r.Kind != audit.KindApproval })); n != 2 {
		t.Errorf("%d approval records, want 2", n)
	}

	lateRecs, err := audit.Workflow(ctx, env.c, late)
	if err != nil {
		t.Fatal(err)
	}
	logRecords(t, lateRecs)
	ask := find(lateRecs, "x", audit.KindPermission)
	to := find(lateRecs, "x", audit.KindEscalation)
	if to.Decision != "deny" || to.By != "deadline" || to.Path != audit.PathEscalation || to.Layer != "deadline" || !strings.Contains(to.Reason, "2s") {
		t.Errorf("timeout record = %+v", to)
	}
	if !to.Time.After(ask.Time) {
		t.Errorf("timeout recorded at %s, not after the ask at %s", to.Time, ask.Time)
	}
	if slices.ContainsFunc(lateRecs, func(r audit.Record) bool { return r.Kind == audit.KindExecution }) {
		t.Error("the timed-out call has an execution record")
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

// findRecord returns the first record of a call and kind.
func findRecord(t *testing.T, rs []audit.Record, call, kind string) audit.Record {
	t.Helper()
	i := slices.IndexFunc(rs, func(r audit.Record) bool { return r.CallID == call && r.Kind == kind })
	if i < 0 {
		t.Fatalf("no %s record for call %s in %+v", kind, call, rs)
	}
	return rs[i]
}

func logRecords(t *testing.T, recs []audit.Record) {
	t.Helper()
	for _, r := range recs {
		t.Logf("%s run=%.8s %-3s %-11s %-12s by=%-8s path=%-10s layer=%s reason=%q in=%s approved=%s effective=%s",
			r.Time.Format(time.RFC3339Nano), r.RunID, r.CallID, r.Kind, r.Decision, r.By, r.Path, r.Layer, r.Reason,
			r.ProposedInput, r.ApprovedInput, r.EffectiveInput)
	}
}

// TestAuditAcrossContinueAsNew: a turn bounded to a short history asks
// twice; the first call is approved by Update, then the turn continues as
// new, and the second call is approved by signal in a later run. The
// audit of the workflow id holds both decisions with their runs.
func TestAuditAcrossContinueAsNew(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 90*time.Second)
	s := script(t, `
steps:
  - tool_calls: [{id: before, name: Bash, input: {command: "touch before-can"}}]
  - tool_calls:
      - {id: r1, name: Bash, input: {command: "echo one"}}
      - {id: r2, name: Bash, input: {command: "echo two"}}
  - tool_calls: [{id: after, name: Bash, input: {command: "touch after-can"}}]
  - text: done across runs
`)
	id := "audit-can-" + fmt.Sprint(time.Now().UnixNano())
	first, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		ContinueAsNewAfter: 25})
	if err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	if ps[0].CallID != "before" {
		t.Fatalf("pending = %+v", ps)
	}
	if run := currentRun(t, id); run != first.GetRunID() {
		t.Fatal("the turn continued as new before the first approval: raise ContinueAsNewAfter")
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "before", Decision: workflows.DecisionAllow, By: "alice", Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	var after []workflows.Pending
	waitFor(t, ctx, func() bool {
		after, err = cl.Pending(ctx, id)
		return err == nil && len(after) == 1 && after[0].CallID == "after"
	})
	if run := currentRun(t, id); run == first.GetRunID() {
		t.Fatal("the turn did not continue as new between the approvals: lower ContinueAsNewAfter")
	}
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "after", Decision: workflows.DecisionAllow, By: "bob", Hash: after[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if res, err := cl.Result(ctx, id); err != nil || res.Answer != "done across runs" {
		t.Fatalf("result = %+v, %v", res, err)
	}

	recs, err := audit.Workflow(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	logRecords(t, recs)
	b := findRecord(t, recs, "before", audit.KindApproval)
	a := findRecord(t, recs, "after", audit.KindApproval)
	if b.By != "alice" || b.Path != audit.PathUpdate || b.Decision != "allow" || b.RunID != first.GetRunID() {
		t.Errorf("approval before continue-as-new = %+v (first run %s)", b, first.GetRunID())
	}
	if a.By != "bob" || a.Path != audit.PathSignal || a.Decision != "allow" || a.RunID == "" || a.RunID == first.GetRunID() {
		t.Errorf("approval after continue-as-new = %+v", a)
	}
	for _, call := range []string{"before", "r1", "r2", "after"} {
		findRecord(t, recs, call, audit.KindPermission)
		findRecord(t, recs, call, audit.KindExecution)
	}
	if r := findRecord(t, recs, "after", audit.KindExecution); string(r.EffectiveInput) != `{"command":"touch after-can"}` {
		t.Errorf("execution after continue-as-new = %+v", r)
	}
	runs := map[string]bool{}
	for _, r := range recs {
		runs[r.RunID] = true
	}
	if len(runs) < 2 {
		t.Errorf("records come from %d run(s), want the whole chain", len(runs))
	}
	if !slices.IsSortedFunc(recs, func(x, y audit.Record) int { return x.Time.Compare(y.Time) }) {
		t.Error("records of the chain are not in time order")
	}

	// `starter audit --jsonl` exports the same records, one JSON object a
	// line.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runStarter(t, buildStarter(t), dir, "--config", cfg, "--address", env.srv.Addr(), "--namespace", "default",
		"audit", "--workflow", id, "--jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(recs) {
		t.Fatalf("--jsonl printed %d lines, want %d records:\n%s", len(lines), len(recs), out)
	}
	for i, line := range lines {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %d is not a JSON record: %v: %s", i+1, err, line)
		}
		if r.CallID != recs[i].CallID || r.Kind != recs[i].Kind || r.RunID != recs[i].RunID || r.Identity != recs[i].Identity ||
			r.Path != recs[i].Path || string(r.EffectiveInput) != string(recs[i].EffectiveInput) {
			t.Errorf("line %d = %+v, want %+v", i+1, r, recs[i])
		}
	}
}

func currentRun(t *testing.T, id string) string {
	t.Helper()
	d, err := env.c.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	return d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}

// TestAuditToolQueueTurn: a turn whose permission checks and tools run on
// another task queue (regular warden.Prepare activities, no markers). The
// approver edits the input; the audit has the verdicts, the approval with
// the proposed and approved inputs, the verdict on the edit, and the
// executions with their effective inputs.
func TestAuditToolQueueTurn(t *testing.T) {
	toolQueue := "tq-audit-tools-" + fmt.Sprint(time.Now().UnixNano())
	dir := t.TempDir()
	tw := worker.New(env.c, toolQueue, worker.Options{})
	if _, err := warden.Register(tw, warden.Options{Workdir: dir}); err != nil {
		t.Fatal(err)
	}
	if err := tw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tw.Stop)
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, `
steps:
  - tool_calls:
      - {id: q1, name: Bash, input: {command: "touch proposed"}}
      - {id: q2, name: Bash, input: {command: "echo hi"}}
  - text: ok
`)
	id := "audit-queue-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		ToolQueue: toolQueue, Workdir: dir}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	edited := json.RawMessage(`{"command":"touch edited"}`)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "q1", Decision: workflows.DecisionAllow, By: "carol",
		Input: edited, Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "edited")); err != nil {
		t.Fatalf("the edited command did not run on the tool queue: %v", err)
	}
	// The turn's own history has no local-activity markers: the verdicts
	// are completed activities.
	for _, e := range history(t, id) {
		if e.GetEventType() == enumspb.EVENT_TYPE_MARKER_RECORDED && e.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
			t.Fatalf("tool-queue turn recorded a local activity: %v", e)
		}
	}
	recs, err := audit.Workflow(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	logRecords(t, recs)
	if r := findRecord(t, recs, "q1", audit.KindPermission); r.Decision != "ask" || r.Path != audit.PathRule ||
		string(r.ProposedInput) != `{"command":"touch proposed"}` {
		t.Errorf("q1 verdict = %+v", r)
	}
	if r := findRecord(t, recs, "q2", audit.KindPermission); r.Decision != "allow" || r.Path != audit.PathRule {
		t.Errorf("q2 verdict = %+v", r)
	}
	if r := findRecord(t, recs, "q1", audit.KindApproval); r.By != "carol" || r.Path != audit.PathUpdate ||
		string(r.ProposedInput) != `{"command":"touch proposed"}` || string(r.ApprovedInput) != string(edited) {
		t.Errorf("q1 approval = %+v", r)
	}
	if r := findRecord(t, recs, "q1", audit.KindEdit); r.Decision == "deny" || string(r.ApprovedInput) != string(edited) {
		t.Errorf("verdict on the edit = %+v", r)
	}
	if r := findRecord(t, recs, "q1", audit.KindExecution); string(r.EffectiveInput) != string(edited) ||
		string(r.ProposedInput) != `{"command":"touch proposed"}` {
		t.Errorf("q1 execution = %+v", r)
	}
	if r := findRecord(t, recs, "q2", audit.KindExecution); string(r.EffectiveInput) != `{"command":"echo hi"}` {
		t.Errorf("q2 execution = %+v", r)
	}
}

// TestAuditEscalations: deadlines pass on two asks; Bash escalates to
// allow (it runs without an approver), Write to notify (it keeps waiting
// until an approver answers). Both escalations are in the audit.
func TestAuditEscalations(t *testing.T) {
	cl := startWorker(t, warden.Options{ToolSettings: map[string]config.ToolSettings{
		"Bash":  {Escalation: string(workflows.EscalateAllow)},
		"Write": {Escalation: string(workflows.EscalateNotify)},
	}})
	ctx := ctxT(t, 60*time.Second)
	dir := t.TempDir()
	s := script(t, fmt.Sprintf(`
steps:
  - tool_calls:
      - {id: e1, name: Bash, input: {command: "touch escalated"}}
      - {id: e2, name: Write, input: {file_path: %q, content: "x"}}
  - text: ok
`, filepath.Join(dir, "notified.txt")))
	id := "audit-esc-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Workdir: dir, ApprovalTimeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	var ps []workflows.Pending
	waitFor(t, ctx, func() bool {
		var err error
		ps, err = cl.Pending(ctx, id)
		return err == nil && len(ps) == 1 && ps[0].CallID == "e2" && ps[0].Escalated
	})
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "e2", Decision: workflows.DecisionAllow, By: "erin", Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	recs, err := audit.Workflow(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	logRecords(t, recs)
	e1 := findRecord(t, recs, "e1", audit.KindEscalation)
	if e1.Decision != "allow" || e1.By != "deadline" || e1.Path != audit.PathEscalation {
		t.Errorf("e1 escalation = %+v", e1)
	}
	findRecord(t, recs, "e1", audit.KindExecution)
	e2 := findRecord(t, recs, "e2", audit.KindEscalation)
	if e2.Decision != "notify" || e2.Path != audit.PathEscalation {
		t.Errorf("e2 escalation = %+v", e2)
	}
	if r := findRecord(t, recs, "e2", audit.KindApproval); r.By != "erin" || r.Time.Before(e2.Time) {
		t.Errorf("e2 approval = %+v (escalated at %s)", r, e2.Time)
	}
	findRecord(t, recs, "e2", audit.KindExecution)
	if n := len(slices.DeleteFunc(slices.Clone(recs), func(r audit.Record) bool { return r.Kind != audit.KindEscalation })); n != 2 {
		t.Errorf("%d escalation records, want 2", n)
	}
}
