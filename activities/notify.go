package activities

import (
	"context"

	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/workflows"
)

// Notify posts one webhook notification. A failed delivery is an error,
// so the activity's RetryPolicy retries it with backoff.
func (a *Activities) Notify(ctx context.Context, in workflows.NotifyInput) error {
	if a.Notifier == nil {
		return nil
	}
	p := in.Pending
	ev := notify.Event{Type: in.Type, WorkflowID: in.WorkflowID, CallID: p.CallID, Tool: p.Tool, Input: p.Input,
		Reason: p.Reason, RequestedAt: p.RequestedAt, Deadline: p.Deadline}
	if a.InboxURL != "" {
		ev.InboxURL = a.InboxURL + "/#" + in.WorkflowID + "/" + p.CallID
	}
	return a.Notifier.Send(ctx, ev)
}
