package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/workflows"
)

// TestAuditReadsRecordedNotes runs one turn on a real server with an
// escalation (a Write whose per-tool approval_timeout passes: denied), a
// re-decision (a policy store change denies a waiting curl), an edit (an
// approver allows a call with an edited input) and a budget raise and
// deny (its tool-call bound reached twice: raised by one, then denied).
// The audit reads each from what the turn recorded: the escalation and
// budget records are its notes, field for field, and the re-decision and
// edit are the verdicts whose recorded kind says so. `starter audit`
// prints the budget answers. With the notes removed from the history the
// reading fails (ErrNotRecorded) instead of guessing.
func TestAuditReadsRecordedNotes(t *testing.T) {
	const timeout = 2 * time.Second
	cl := startWorker(t, warden.Options{Client: env.c,
		ToolSettings: map[string]config.ToolSettings{"Write": {ApprovalTimeout: timeout}}})
	ctx := ctxT(t, 120*time.Second)
	dir := t.TempDir()
	store, err := cl.StartPolicyStore(ctx, "policy-notes-"+tag())
	if err != nil {
		t.Fatal(err)
	}
	s := script(t, fmt.Sprintf(`
steps:
  - tool_calls:
      - {id: ed, name: Bash, input: {command: "touch as-asked"}}
      - {id: rd, name: Bash, input: {command: "curl http://example.com"}}
      - {id: es, name: Write, input: {file_path: %q, content: "x"}}
  - tool_calls: [{id: b1, name: Bash, input: {command: "ls"}}]
  - tool_calls: [{id: b2, name: Bash, input: {command: "pwd"}}]
  - text: done
`, filepath.Join(dir, "late.txt")))
	id := "audit-notes-" + tag()
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Workdir: dir, LivePolicy: store, Budget: &workflows.Budget{ToolCalls: 3}}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 3)
	if _, err := cl.SetPolicy(ctx, store, workflows.LiveRules{Deny: []string{"Bash(curl:*)"}}, "ops"); err != nil {
		t.Fatal(err)
	}
	// Answer ed once the change re-decided it (its hash names the new
	// version) and denied rd.
	var p workflows.Pending
	waitFor(t, ctx, func() bool {
		ps, err := cl.Pending(ctx, id)
		if err != nil {
			return false
		}
		waiting := false
		for _, q := range ps {
			if q.CallID == "rd" {
				return false
			}
			if q.CallID == "ed" && q.LiveVersion >= 1 {
				p, waiting = q, true
			}
		}
		return waiting
	})
	edited := json.RawMessage(`{"command":"touch edited"}`)
	if _, err := cl.ApproveListed(ctx, id, p, workflows.Approval{CallID: "ed", Decision: workflows.DecisionAllow, By: "erin", Input: edited}); err != nil {
		t.Fatal(err)
	}
	p = waitPendingCall(t, cl, id, "budget_1")
	if _, err := cl.ApproveListed(ctx, id, p, workflows.Approval{CallID: p.CallID, Decision: workflows.DecisionAllow, By: "owner",
		Raise: &workflows.Budget{ToolCalls: 1}}); err != nil {
		t.Fatal(err)
	}
	p = waitPendingCall(t, cl, id, "budget_2")
	if _, err := cl.ApproveListed(ctx, id, p, workflows.Approval{CallID: p.CallID, Decision: workflows.DecisionDeny, By: "owner",
		Reason: "enough for today"}); err != nil {
		t.Fatal(err)
	}
	if res, err := cl.Result(ctx, id); err != nil || res.Stopped != "budget" {
		t.Fatalf("turn: %+v %v, want it stopped by its budget", res, err)
	}

	runs, err := audit.Chain(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := audit.Workflow(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	logRecords(t, recs)
	notes, kinds := notesOf(t, runs)

	// The escalation: the record is the note.
	var esc *workflows.EscalationNote
	for _, n := range notes {
		if n.Escalation != nil && n.Escalation.CallID == "es" {
			esc = n.Escalation
		}
	}
	if esc == nil {
		t.Fatalf("the turn recorded no escalation of es: %+v", notes)
	}
	if esc.Action != workflows.EscalateDeny || esc.Deadline.Sub(esc.RequestedAt) != timeout {
		t.Errorf("recorded escalation %+v, want deny after %s", esc, timeout)
	}
	if r := findRecord(t, recs, "es", audit.KindEscalation); r.Decision != string(esc.Action) || !r.Deadline.Equal(esc.Deadline) ||
		r.By != "deadline" || r.Path != audit.PathEscalation || !strings.Contains(r.Reason, timeout.String()) {
		t.Errorf("escalation record %+v, recorded %+v", r, esc)
	}

	// The re-decision: verdicts recorded as re-decisions, and the
	// store's change denied rd.
	if kinds["rd"][workflows.VerdictRedecide] == 0 {
		t.Errorf("no re-decision of rd recorded: %v", kinds["rd"])
	}
	if r := findRecord(t, recs, "rd", audit.KindLivePolicy); r.Decision != "deny" || r.PolicyVersion < 1 {
		t.Errorf("re-decision record %+v", r)
	}

	// The edit: one verdict recorded as an edit, on the edited input.
	if kinds["ed"][workflows.VerdictEdit] != 1 {
		t.Errorf("recorded kinds of ed's verdicts %v, want one edit", kinds["ed"])
	}
	if r := findRecord(t, recs, "ed", audit.KindEdit); string(r.ApprovedInput) != string(edited) {
		t.Errorf("edit record %+v, want approved input %s", r, edited)
	}
	if r := findRecord(t, recs, "ed", audit.KindApproval); !r.Edited || r.By != "erin" {
		t.Errorf("edited approval record %+v", r)
	}

	// The budget answers: the records are the notes.
	var raised, denied bool
	for _, n := range notes {
		b := n.Budget
		if b == nil {
			continue
		}
		r := findRecord(t, recs, b.CallID, audit.KindBudget)
		if r.By != b.By || r.Identity != b.Via || r.Path != audit.PathUpdate || !strings.Contains(r.Reason, b.Request.Kind) {
			t.Errorf("budget record %+v, recorded %+v", r, b)
		}
		switch b.CallID {
		case "budget_1":
			raised = true
			if b.Raise == nil || b.Raise.ToolCalls != 1 || b.By != "owner" || r.Decision != audit.BudgetRaised || r.Raise == nil || r.Raise.String() != b.Raise.String() {
				t.Errorf("raise: record %+v, recorded %+v", r, b)
			}
		case "budget_2":
			denied = true
			if b.Decision != workflows.DecisionDeny || b.Reason != "enough for today" || r.Decision != audit.BudgetDenied || !strings.Contains(r.Reason, b.Reason) {
				t.Errorf("deny: record %+v, recorded %+v", r, b)
			}
		}
	}
	if !raised || !denied {
		t.Errorf("recorded budget answers: raise %v, deny %v (notes %+v)", raised, denied, notes)
	}

	// `starter audit` prints them.
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runStarter(t, buildStarter(t), dir, "--config", cfg, "--address", env.srv.Addr(), "--namespace", "default",
		"audit", "--workflow", id)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{{"budget_1", "raise", "owner", "raised by tool_calls 1"}, {"budget_2", "deny", "owner", "enough for today"}} {
		if !lineWith(out, want...) {
			t.Errorf("starter audit prints no line with %q:\n%s", want, out)
		}
	}

	// Without the notes, the reading fails.
	stripped := make([]audit.Run, len(runs))
	for i, r := range runs {
		stripped[i] = audit.Run{ID: r.ID, Events: withoutAuditNotes(r.Events)}
	}
	if recs, err := audit.ExtractChain(id, stripped); !errors.Is(err, audit.ErrNotRecorded) {
		t.Errorf("reading without the notes: %v, records %d; want ErrNotRecorded", err, len(recs))
	}
}

// notesOf reads what a turn's runs recorded for the audit: its notes,
// and per call the kinds of its recorded verdicts.
func notesOf(t *testing.T, runs []audit.Run) ([]workflows.AuditNote, map[string]map[workflows.VerdictKind]int) {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	var notes []workflows.AuditNote
	kinds := map[string]map[workflows.VerdictKind]int{}
	for _, r := range runs {
		for _, e := range r.Events {
			a := e.GetMarkerRecordedEventAttributes()
			switch a.GetMarkerName() {
			case "SideEffect":
				var n workflows.AuditNote
				if dc.FromPayloads(a.GetDetails()["data"], &n) == nil && (n.Escalation != nil || n.Budget != nil) {
					notes = append(notes, n)
				}
			case "LocalActivity":
				var data struct{ ActivityType string }
				var p workflows.Prepared
				if dc.FromPayloads(a.GetDetails()["data"], &data) != nil || data.ActivityType != workflows.ActivityPrepare ||
					dc.FromPayloads(a.GetDetails()["result"], &p) != nil {
					continue
				}
				if kinds[p.CallID] == nil {
					kinds[p.CallID] = map[workflows.VerdictKind]int{}
				}
				kinds[p.CallID][p.Kind]++
			}
		}
	}
	return notes, kinds
}

// withoutAuditNotes is evs without the audit notes' side effects.
func withoutAuditNotes(evs []*historypb.HistoryEvent) []*historypb.HistoryEvent {
	var out []*historypb.HistoryEvent
	for _, e := range evs {
		a := e.GetMarkerRecordedEventAttributes()
		var n workflows.AuditNote
		if a.GetMarkerName() == "SideEffect" && converter.GetDefaultDataConverter().FromPayloads(a.GetDetails()["data"], &n) == nil &&
			(n.Escalation != nil || n.Budget != nil) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// lineWith reports whether a line of out contains every part.
func lineWith(out string, parts ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return true
		}
	}
	return false
}
