package workflows

import (
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// notify starts a webhook notification activity (retried with backoff)
// without waiting for it; the run keeps its future, so the notification
// is waited for before the run ends (settleNotifications) and carried
// into the next run when it continues as new. Turns recorded before
// notifications existed replay without it.
func (t *turn) notify(ctx workflow.Context, typ string, p Pending) {
	if !p.Notify || workflow.GetVersion(ctx, versionNotifyWebhooks, workflow.DefaultVersion, 1) < 1 {
		return
	}
	t.sendNotification(ctx, NotifyInput{Type: typ, WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, Pending: p})
}

// resendNotifications sends again the notifications the previous run
// started but did not see delivered (same webhook id: a receiver that
// saw one already knows it).
func (t *turn) resendNotifications(ctx workflow.Context) {
	for _, n := range t.Notifying {
		t.sendNotification(ctx, n)
	}
	t.Notifying = nil
}

// notification is a webhook notification this run started.
type notification struct {
	in NotifyInput
	f  workflow.Future
}

// sendNotification starts the notification activity for in and keeps its
// future (dropping those of notifications already settled).
func (t *turn) sendNotification(ctx workflow.Context, in NotifyInput) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 5 * time.Minute, MaximumAttempts: 20},
	})
	t.notes = slices.DeleteFunc(t.notes, func(n notification) bool { return n.f.IsReady() })
	t.notes = append(t.notes, notification{in: in, f: workflow.ExecuteActivity(actx, ActivityNotify, in)})
}

// unsettled lists the notifications of this run still in flight: neither
// delivered nor failed for good.
func (t *turn) unsettled() []NotifyInput {
	var out []NotifyInput
	for _, n := range t.notes {
		if !n.f.IsReady() {
			out = append(out, n.in)
		}
	}
	return out
}

// settleNotifications lets the notifications in flight finish before the
// run ends: it waits until each is delivered or failed for good, at most
// notifyGrace. A run that ends for good then leaves the rest undelivered
// (the audit reports them); one that continues as new carries them and
// the next run sends them again. Runs recorded before
// versionNotifyDelivery ended without waiting (and abandoned them).
func (t *turn) settleNotifications(ctx workflow.Context) {
	if t.settled || len(t.unsettled()) == 0 {
		return
	}
	t.settled = true
	if workflow.GetVersion(ctx, versionNotifyDelivery, workflow.DefaultVersion, 1) < 1 {
		return
	}
	// An error is the run's cancellation: what is unsettled stays so.
	_, _ = workflow.AwaitWithTimeout(ctx, notifyGrace, func() bool { return len(t.unsettled()) == 0 })
}
