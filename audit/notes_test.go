package audit

import (
	"errors"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/wardenhq/warden/workflows"
)

// recordedNotes are the audit notes a history recorded, in order.
func recordedNotes(t *testing.T, evs []*historypb.HistoryEvent) []workflows.AuditNote {
	t.Helper()
	var out []workflows.AuditNote
	for _, e := range evs {
		a := e.GetMarkerRecordedEventAttributes()
		if a.GetMarkerName() != "SideEffect" {
			continue
		}
		var n workflows.AuditNote
		if converter.GetDefaultDataConverter().FromPayloads(a.GetDetails()["data"], &n) == nil && (n.Escalation != nil || n.Budget != nil) {
			out = append(out, n)
		}
	}
	return out
}

// recordedVerdicts are the Prepare results a history recorded as
// local-activity markers, in order.
func recordedVerdicts(t *testing.T, evs []*historypb.HistoryEvent) []workflows.Prepared {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	var out []workflows.Prepared
	for _, e := range evs {
		a := e.GetMarkerRecordedEventAttributes()
		if a.GetMarkerName() != "LocalActivity" || a.GetDetails()["result"] == nil {
			continue
		}
		var data struct{ ActivityType string }
		if dc.FromPayloads(a.GetDetails()["data"], &data) != nil || data.ActivityType != workflows.ActivityPrepare {
			continue
		}
		var p workflows.Prepared
		if err := dc.FromPayloads(a.GetDetails()["result"], &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// withoutNotes is evs without the audit notes drop selects.
func withoutNotes(evs []*historypb.HistoryEvent, drop func(workflows.AuditNote) bool) []*historypb.HistoryEvent {
	var out []*historypb.HistoryEvent
	for _, e := range evs {
		a := e.GetMarkerRecordedEventAttributes()
		var n workflows.AuditNote
		if a.GetMarkerName() == "SideEffect" && converter.GetDefaultDataConverter().FromPayloads(a.GetDetails()["data"], &n) == nil && drop(n) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// withoutKinds is evs with the kind removed from every recorded verdict
// (the verdicts of a worker that did not echo it).
func withoutKinds(t *testing.T, evs []*historypb.HistoryEvent) []*historypb.HistoryEvent {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	out := make([]*historypb.HistoryEvent, len(evs))
	for i, e := range evs {
		out[i] = e
		a := e.GetMarkerRecordedEventAttributes()
		if e.GetEventType() != enumspb.EVENT_TYPE_MARKER_RECORDED || a.GetMarkerName() != "LocalActivity" || a.GetDetails()["result"] == nil {
			continue
		}
		var data struct{ ActivityType string }
		if dc.FromPayloads(a.GetDetails()["data"], &data) != nil || data.ActivityType != workflows.ActivityPrepare {
			continue
		}
		var v map[string]any
		if err := dc.FromPayloads(a.GetDetails()["result"], &v); err != nil {
			t.Fatal(err)
		}
		delete(v, "kind")
		p, err := dc.ToPayloads(v)
		if err != nil {
			t.Fatal(err)
		}
		c := proto.Clone(e).(*historypb.HistoryEvent)
		c.GetMarkerRecordedEventAttributes().GetDetails()["result"] = p
		out[i] = c
	}
	return out
}

// TestNotesRead reads recorded turns of the audit-notes generation: the
// escalation, the edit and the budget raise and denial are the records
// the turns wrote (their notes and verdict kinds), field for field.
func TestNotesRead(t *testing.T) {
	evs := load(t, "notify_turn_v12.json")
	vs := recordedVerdicts(t, evs)
	if len(vs) == 0 {
		t.Fatal("notify_turn_v12.json records no verdicts")
	}
	edits := 0
	for _, p := range vs {
		if p.Kind == "" {
			t.Fatalf("verdict on %s recorded without its kind: the history is not of the audit-notes generation", p.CallID)
		}
		if p.Kind == workflows.VerdictEdit {
			edits++
		}
	}
	recs, err := Extract("notify", evs)
	if err != nil {
		t.Fatal(err)
	}
	if n := countKind(recs, KindEdit); n != edits || edits == 0 {
		t.Errorf("%d edit records, %d edit verdicts recorded (want as many, and one at least)", n, edits)
	}
	var escalations int
	for _, n := range recordedNotes(t, evs) {
		if n.Escalation == nil {
			continue
		}
		escalations++
		e := *n.Escalation
		r := find(t, recs, e.CallID, KindEscalation)
		if r.Decision != string(e.Action) || !r.Deadline.Equal(e.Deadline) || r.By != "deadline" || r.Path != PathEscalation ||
			!strings.Contains(r.Reason, e.Deadline.Sub(e.RequestedAt).String()) {
			t.Errorf("escalation record %+v, recorded %+v", r, e)
		}
	}
	if escalations == 0 || countKind(recs, KindEscalation) != escalations {
		t.Errorf("%d escalation records, %d recorded", countKind(recs, KindEscalation), escalations)
	}

	evs = load(t, "budget_turn_v12.json")
	recs, err = Extract("budget", evs)
	if err != nil {
		t.Fatal(err)
	}
	var raises, denials int
	for _, n := range recordedNotes(t, evs) {
		b := n.Budget
		if b == nil {
			continue
		}
		r := find(t, recs, b.CallID, KindBudget)
		if r.By != b.By || r.Identity != b.Via || r.Tool != workflows.BudgetTool {
			t.Errorf("budget record %+v, recorded %+v", r, b)
		}
		switch {
		case b.Raise != nil:
			raises++
			if r.Decision != BudgetRaised || r.Raise == nil || r.Raise.String() != b.Raise.String() || r.Path != PathUpdate {
				t.Errorf("raise record %+v, recorded %+v", r, b)
			}
		default:
			denials++
			if r.Decision != BudgetDenied || r.Raise != nil || b.Reason == "" || !containsAll(r.Reason, b.Reason, b.Request.Kind) {
				t.Errorf("denial record %+v, recorded %+v", r, b)
			}
		}
	}
	if raises == 0 || denials == 0 || countKind(recs, KindBudget) != raises+denials {
		t.Errorf("%d budget records; recorded %d raises and %d denials (want one of each at least)", countKind(recs, KindBudget), raises, denials)
	}
}

// TestNotesStripped removes what the turns recorded for the audit from
// their histories, which keep the marker that says they record it: the
// reading fails with ErrNotRecorded instead of re-simulating deadlines,
// passing over budget answers or guessing verdict kinds. The histories
// read whole (TestNotesRead) and histories recorded before the marker
// keep their legacy reading (TestRecordedHistoriesUnchanged).
func TestNotesStripped(t *testing.T) {
	escalation := func(n workflows.AuditNote) bool { return n.Escalation != nil }
	budget := func(n workflows.AuditNote) bool { return n.Budget != nil }
	for _, c := range []struct {
		name, file string
		strip      func([]*historypb.HistoryEvent) []*historypb.HistoryEvent
	}{
		{"escalation notes", "notify_turn_v12.json", func(e []*historypb.HistoryEvent) []*historypb.HistoryEvent { return withoutNotes(e, escalation) }},
		{"escalation notes", "approvals_turn_v12.json", func(e []*historypb.HistoryEvent) []*historypb.HistoryEvent { return withoutNotes(e, escalation) }},
		{"budget notes", "budget_turn_v12.json", func(e []*historypb.HistoryEvent) []*historypb.HistoryEvent { return withoutNotes(e, budget) }},
		{"budget notes", "agent_budget_turn_v12.json", func(e []*historypb.HistoryEvent) []*historypb.HistoryEvent { return withoutNotes(e, budget) }},
		{"verdict kinds", "notify_turn_v12.json", func(e []*historypb.HistoryEvent) []*historypb.HistoryEvent { return withoutKinds(t, e) }},
		{"verdict kinds", "live_turn_v12.json", func(e []*historypb.HistoryEvent) []*historypb.HistoryEvent { return withoutKinds(t, e) }},
	} {
		t.Run(c.name+"/"+c.file, func(t *testing.T) {
			evs := load(t, c.file)
			if _, err := Extract(c.file, evs); err != nil {
				t.Fatalf("whole history: %v", err)
			}
			stripped := c.strip(evs)
			same := len(stripped) == len(evs)
			for i := 0; same && i < len(evs); i++ {
				same = stripped[i] == evs[i]
			}
			if same {
				t.Fatalf("%s records no %s: nothing to strip", c.file, c.name)
			}
			recs, err := Extract(c.file, stripped)
			if !errors.Is(err, ErrNotRecorded) {
				t.Fatalf("reading without the %s: %v (records %+v), want ErrNotRecorded", c.name, err, recs)
			}
			t.Log(err)
		})
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
