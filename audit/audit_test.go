package audit

import (
	"os"
	"slices"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	tclient "go.temporal.io/sdk/client"
)

// load reads a history the integration tests recorded from a real turn.
func load(t *testing.T, name string) []*historypb.HistoryEvent {
	t.Helper()
	f, err := os.Open("../tests/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := tclient.HistoryFromJSON(f, tclient.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h.GetEvents()
}

func find(t *testing.T, rs []Record, call, kind string) Record {
	t.Helper()
	i := slices.IndexFunc(rs, func(r Record) bool { return r.CallID == call && r.Kind == kind })
	if i < 0 {
		t.Fatalf("no %s record for call %s in %+v", kind, call, rs)
	}
	return rs[i]
}

// TestExtractRecordedApprovals reads a recorded turn: four asks; an
// always-allow by Update (which resolves a second call), a denial by
// signal, and a Write whose deadline escalated to notify before an
// approver allowed it.
// The recorded turn ran on a server without keys: its answers name an
// approver (by) but carry no authenticated identity.
func TestExtractRecordedApprovals(t *testing.T) {
	t.Parallel()
	recs, err := Extract("approvals-record", load(t, "approvals_turn_v3.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		t.Logf("%s %-2s %-11s %-12s by=%-8s path=%-10s identity=%q effective=%s", r.Time.Format("15:04:05.000"), r.CallID, r.Kind, r.Decision, r.By, r.Path, r.Identity, r.EffectiveInput)
	}
	for _, call := range []string{"a", "b", "c", "d"} {
		if r := find(t, recs, call, KindPermission); r.Decision != "ask" || r.Path != PathRule || len(r.ProposedInput) == 0 {
			t.Errorf("%s verdict = %+v", call, r)
		}
	}
	if r := find(t, recs, "a", KindApproval); r.Decision != "always_allow" || r.By != "alice" || r.Identity != "" || r.Path != PathUpdate {
		t.Errorf("a approval = %+v", r)
	}
	if r := find(t, recs, "b", KindRecheck); r.Decision != "allow" || r.Path != PathRule {
		t.Errorf("b recheck = %+v", r)
	}
	if r := find(t, recs, "c", KindApproval); r.Decision != "deny" || r.By != "bob" || r.Identity != "" || r.Path != PathSignal {
		t.Errorf("c denial = %+v", r)
	}
	esc := find(t, recs, "d", KindEscalation)
	if esc.Decision != "notify" || esc.By != "deadline" || esc.Path != PathEscalation {
		t.Errorf("d escalation = %+v", esc)
	}
	if r := find(t, recs, "d", KindApproval); r.By != "carol" || r.Identity != "" || r.Time.Before(esc.Time) {
		t.Errorf("d approval = %+v, escalated at %s", r, esc.Time)
	}
	for _, call := range []string{"a", "b", "d"} {
		if r := find(t, recs, call, KindExecution); len(r.EffectiveInput) == 0 {
			t.Errorf("%s execution without an effective input: %+v", call, r)
		}
	}
	if slices.ContainsFunc(recs, func(r Record) bool { return r.CallID == "c" && r.Kind == KindExecution }) {
		t.Error("the denied call ran")
	}
}
