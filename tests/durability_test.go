package tests

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/workflows"
)

// runHistoryLength is the number of events of one run and whether it
// closed by continuing as new.
func runHistoryLength(t *testing.T, id, runID string) (int, bool) {
	t.Helper()
	n, continued := 0, false
	it := env.c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		n++
		continued = e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
	}
	return n, continued
}

// TestWaitingTurnFloodedContinuesAsNew: a waiting turn flooded with 500
// rejected answers (signals with a stale hash, external results for a
// call that waits for an approval, and rejected Updates) continues as
// new when its history passes its bound, while it still waits, and stays
// answerable: the next run lists the same call with the same hash and
// takes the real answer.
func TestWaitingTurnFloodedContinuesAsNew(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 120*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: f1, name: Bash, input: {command: \"touch flooded\"}}]\n  - text: answered after the flood\n")
	id := "flood-" + fmt.Sprint(time.Now().UnixNano())
	const bound = 200
	first, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}, ContinueAsNewAfter: bound})
	if err != nil {
		t.Fatal(err)
	}
	listed := waitPending(t, cl, id, 1)
	for i := range 500 {
		switch i % 10 {
		case 9:
			if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "f1", Hash: "stale", Decision: workflows.DecisionAllow}); !errors.Is(err, client.ErrRejected) {
				t.Fatalf("update %d with a stale hash: %v, want rejected", i, err)
			}
		case 1, 3, 5:
			if err := env.c.SignalWorkflow(ctx, id, "", workflows.SignalExternalResult, workflows.ExternalResult{CallID: "f1", Hash: "stale", Content: "bogus"}); err != nil {
				t.Fatal(err)
			}
		default:
			if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "f1", Hash: "stale", Decision: workflows.DecisionAllow}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The first run continues as new once its history passes the bound.
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := env.c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if d.GetWorkflowExecutionInfo().GetExecution().GetRunId() != first.GetRunID() {
			break
		}
		if time.Now().After(deadline) {
			n, _ := runHistoryLength(t, id, first.GetRunID())
			t.Fatalf("the waiting turn did not continue as new: its run has %d events, its bound is %d", n, bound)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n, continued := runHistoryLength(t, id, first.GetRunID()); !continued {
		t.Fatalf("first run (%d events) did not close by continuing as new", n)
	} else {
		t.Logf("first run: %d events against a bound of %d", n, bound)
	}
	// Rejected answers still arriving go to the latest run; once they
	// are handled the turn still waits for the same call.
	ps := waitPending(t, cl, id, 1)
	if ps[0].CallID != "f1" || ps[0].Hash != listed[0].Hash {
		t.Fatalf("pending after continuing as new = %+v, want f1 with hash %s", ps, listed[0].Hash)
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "f1", Hash: ps[0].Hash, Decision: workflows.DecisionAllow, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "answered after the flood" {
		t.Fatalf("answer = %q", res.Answer)
	}
	if _, err := os.Stat(filepath.Join(workdir, "flooded")); err != nil {
		t.Fatalf("the approved call did not run: %v", err)
	}
}

// runIDs lists the runs of a turn's continue-as-new chain, oldest first.
func runIDs(t *testing.T, id string) []string {
	t.Helper()
	d, err := env.c.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for run := d.GetWorkflowExecutionInfo().GetExecution().GetRunId(); run != ""; {
		runs = append(runs, run)
		it := env.c.GetWorkflowHistory(context.Background(), id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		run = e.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
	}
	slices.Reverse(runs)
	return runs
}

// TestWebhookParkedBeforeContinueAsNewNotifiedOnce: a call parks in the
// workflow task that finds the history past its bound, so the run
// continues as new right away. Its approval_requested notification is
// delivered exactly once: the run waits for it before continuing (it was
// abandoned with the run), and the next run does not send it again.
func TestWebhookParkedBeforeContinueAsNewNotifiedOnce(t *testing.T) {
	hook := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}}
	hs := httptest.NewServer(hook)
	defer hs.Close()
	cl := startWorker(t, warden.Options{Notifier: &notify.Sender{URLs: []string{hs.URL}, Secret: hookSecret}})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: p1, name: Bash, input: {command: \"touch parked\"}}]\n  - text: done\n")
	id := "park-can-" + fmt.Sprint(time.Now().UnixNano())
	// The first workflow task runs at 3 events; the one after the model
	// step, where the call parks, at about 10.
	first, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}, ContinueAsNewAfter: 8})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool { return len(runIDs(t, id)) > 1 })
	// The call parked in the workflow task that continued as new (the
	// notification's completion aside, nothing happened in between).
	var parked, notified bool
	it := env.c.GetWorkflowHistory(ctx, id, first.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	tasks := 0
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && parked:
			tasks++
		case e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == workflows.ActivityNotify:
			parked = true
		case e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED && parked:
			notified = true
		}
	}
	if !parked || !notified || tasks != 1 {
		t.Fatalf("first run: notification scheduled %v, completed %v, %d workflow tasks after the park; want the run to continue as new in the task after its delivery", parked, notified, tasks)
	}
	ps := waitPending(t, cl, id, 1)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "p1", Hash: ps[0].Hash, Decision: workflows.DecisionAllow}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	// The answer's approval_answered follows, from the next run.
	n, _, evs, errs := hook.snapshot()
	if n != 2 || len(evs) != 2 || len(errs) != 0 || evs[0].CallID != "p1" || evs[0].Type != notify.TypeApprovalRequested ||
		evs[1].Type != notify.TypeApprovalAnswered {
		t.Fatalf("receiver: %d requests, events %+v, errors %v; want one approval_requested for p1, then its approval_answered", n, evs, errs)
	}
	recs, err := audit.Workflow(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	var notes []audit.Record
	for _, r := range recs {
		if r.Kind == audit.KindNotification && r.Notification == notify.TypeApprovalRequested {
			notes = append(notes, r)
		}
	}
	if len(notes) != 1 || notes[0].Decision != audit.NotificationDelivered || notes[0].RunID != first.GetRunID() {
		t.Fatalf("notification records = %+v, want one delivered by the first run", notes)
	}
}

// notificationRecords are a turn's notification records by type.
func notificationRecords(t *testing.T, ctx context.Context, id string) map[string]audit.Record {
	t.Helper()
	recs, err := audit.Workflow(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]audit.Record{}
	for _, r := range recs {
		if r.Kind == audit.KindNotification {
			if _, dup := out[r.Notification]; dup {
				t.Fatalf("two records of the %s notification: %+v", r.Notification, recs)
			}
			out[r.Notification] = r
		}
	}
	return out
}

// TestWebhookInFlightAtTurnEndDelivered: the receiver refuses the first
// attempt of every notification. The approval times out and the turn's
// last step follows at once, while the escalation's notification waits
// for its retry; the turn ends only after that retry delivered it.
func TestWebhookInFlightAtTurnEndDelivered(t *testing.T) {
	hook := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}, failEach: true}
	hs := httptest.NewServer(hook)
	defer hs.Close()
	cl := startWorker(t, warden.Options{Notifier: &notify.Sender{URLs: []string{hs.URL}, Secret: hookSecret}})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: e1, name: Bash, input: {command: \"touch late\"}}]\n  - text: over\n")
	id := "notify-end-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		ApprovalTimeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, _, evs, errs := hook.snapshot()
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	// The escalation's approval_answered runs beside approval_escalated:
	// compared sorted.
	slices.Sort(types)
	if !slices.Equal(types, []string{notify.TypeApprovalAnswered, notify.TypeApprovalEscalated, notify.TypeApprovalRequested}) || len(errs) != 0 {
		t.Fatalf("receiver accepted %v (errors %v), want approval_requested, approval_escalated and approval_answered", types, errs)
	}
	recs := notificationRecords(t, ctx, id)
	for _, typ := range types {
		if r := recs[typ]; r.Decision != audit.NotificationDelivered || r.CallID != "e1" {
			t.Errorf("%s record = %+v, want delivered", typ, r)
		}
	}
}

// TestWebhookUndeliveredAtTurnEndInAudit: the receiver is down. The turn
// waits for its notification the grace period, then ends, and the audit
// reports the notification as undelivered.
func TestWebhookUndeliveredAtTurnEndInAudit(t *testing.T) {
	hook := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}, down: true}
	hs := httptest.NewServer(hook)
	defer hs.Close()
	cl := startWorker(t, warden.Options{Notifier: &notify.Sender{URLs: []string{hs.URL}, Secret: hookSecret}})
	ctx := ctxT(t, 90*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: u1, name: Bash, input: {command: \"touch never\"}}]\n  - text: over\n")
	id := "notify-down-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "u1", Hash: ps[0].Hash, Decision: workflows.DecisionDeny, Reason: "not now"}); err != nil {
		t.Fatal(err)
	}
	answered := time.Now()
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	t.Logf("answer to turn end: %s", time.Since(answered).Round(time.Millisecond))
	if n, _, evs, _ := hook.snapshot(); n < 2 || len(evs) != 0 {
		t.Fatalf("receiver: %d requests, %d accepted; want retries and none accepted", n, len(evs))
	}
	r, ok := notificationRecords(t, ctx, id)[notify.TypeApprovalRequested]
	if !ok || r.Decision != audit.NotificationUndelivered || r.CallID != "u1" || r.Reason != "the turn ended before it was delivered" {
		t.Fatalf("approval_requested record = %+v, want undelivered because the turn ended", r)
	}
}
