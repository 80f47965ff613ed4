package audit

import (
	"os"
	"slices"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/wardenhq/warden/workflows"
)

// load reads a history the integration tests recorded from a real turn.
func load(t testing.TB, name string) []*historypb.HistoryEvent {
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

// notifyChain builds a two-run chain: the first run sends a notification
// and continues as new while it is in flight; the second starts with
// carried (its Resume.Notifying) and, when resend, sends it again and
// sees it delivered.
func notifyChain(t *testing.T, carried []workflows.NotifyInput, resend bool) []Run {
	t.Helper()
	payloads := func(v any) *commonpb.Payloads { return toPayloads(t, v) }
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(id int64, typ enumspb.EventType) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{EventId: id, EventType: typ, EventTime: timestamppb.New(at.Add(time.Duration(id) * time.Second))}
	}
	started := func(in workflows.TurnInput) *historypb.HistoryEvent {
		e := ev(1, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{Input: payloads(in)}}
		return e
	}
	scheduled := func(id int64, in workflows.NotifyInput) *historypb.HistoryEvent {
		e := ev(id, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
		e.Attributes = &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
			ActivityType: &commonpb.ActivityType{Name: workflows.ActivityNotify}, Input: payloads(in)}}
		return e
	}
	n := workflows.NotifyInput{Type: workflows.NotifyApprovalRequested, WorkflowID: "turn", Pending: workflows.Pending{CallID: "c1", Tool: "Bash", RequestedAt: at}}
	run1 := []*historypb.HistoryEvent{started(workflows.TurnInput{}), scheduled(2, n), ev(3, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW)}
	run2 := []*historypb.HistoryEvent{started(workflows.TurnInput{Resume: &workflows.Resume{Notifying: carried}})}
	if resend {
		done := ev(3, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
		done.Attributes = &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{ScheduledEventId: 2}}
		run2 = append(run2, scheduled(2, n), done)
	}
	return []Run{{ID: "run1", Events: run1}, {ID: "run2", Events: run2}}
}

// TestExtractNotificationsAcrossContinueAsNew: a notification in flight
// when a run continues as new is reported by the run that delivers it
// when the next run carries it, and as undelivered when it does not (a
// run recorded before notifications were carried).
func TestExtractNotificationsAcrossContinueAsNew(t *testing.T) {
	t.Parallel()
	n := workflows.NotifyInput{Type: workflows.NotifyApprovalRequested, WorkflowID: "turn", Pending: workflows.Pending{CallID: "c1", Tool: "Bash",
		RequestedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}}
	recs, err := ExtractChain("turn", notifyChain(t, []workflows.NotifyInput{n}, true))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Kind != KindNotification || recs[0].Decision != NotificationDelivered || recs[0].RunID != "run2" ||
		recs[0].Notification != workflows.NotifyApprovalRequested || recs[0].CallID != "c1" {
		t.Fatalf("carried: records = %+v, want one delivered by run2", recs)
	}
	recs, err = ExtractChain("turn", notifyChain(t, nil, false))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Decision != NotificationUndelivered || recs[0].RunID != "run1" ||
		recs[0].Reason != "the run continued as new before it was delivered" {
		t.Fatalf("not carried: records = %+v, want one undelivered by run1", recs)
	}
}

// TestExtractRecordedNotifyTurn reads a recorded turn whose verdicts
// carry only the tool's flags (no tool name): an approval with an edited
// input (whose verdict is matched to its call all the same), a deadline
// denial, and its three webhook notifications, the last delivered while
// the turn waited for it before ending.
func TestExtractRecordedNotifyTurn(t *testing.T) {
	t.Parallel()
	recs, err := Extract("notify-record", load(t, "notify_turn_v7.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		t.Logf("%s %-2s %-12s %-12s by=%-8s %s %s", r.Time.Format("15:04:05.000"), r.CallID, r.Kind, r.Decision, r.By, r.Notification, r.Reason)
	}
	if r := find(t, recs, "e1", KindEdit); string(r.ApprovedInput) != `{"command":"touch as-edited"}` {
		t.Errorf("e1 edit verdict = %+v", r)
	}
	if r := find(t, recs, "e2", KindEscalation); r.Decision != "deny" {
		t.Errorf("e2 escalation = %+v", r)
	}
	var got []string
	for _, r := range recs {
		if r.Kind == KindNotification {
			got = append(got, r.CallID+" "+r.Notification+" "+r.Decision)
		}
	}
	want := []string{"e1 approval_requested delivered", "e2 approval_escalated delivered", "e2 approval_requested delivered"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("notification records = %q, want %q", got, want)
	}
}

// toPayloads encodes v as a history event's payloads, as the SDK does.
func toPayloads(t *testing.T, v any) *commonpb.Payloads {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayloads(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
