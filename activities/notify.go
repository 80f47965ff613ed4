package activities

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/workflows"
)

// ErrTypeWebhookSecret is the (non-retryable) error type of a
// notification that cannot be signed: no secret, or a malformed one.
const ErrTypeWebhookSecret = "WebhookSecret"

// notifyProgress is the Notify activity's heartbeat detail: the URLs that
// accepted the delivery, so a retry sends only to the others.
type notifyProgress struct {
	Delivered []string `json:"delivered"`
}

// Notify posts one webhook notification to every configured URL. URLs
// that accept it are recorded as heartbeat details, which the server
// keeps across attempts: when the activity's RetryPolicy retries a
// partly failed delivery, only the URLs that have not accepted it are
// posted again, under the same webhook id.
//
// An approval_escalated notification carries the entry's escalation
// action (deny when none is set: a timed-out deny).
func (a *Activities) Notify(ctx context.Context, in workflows.NotifyInput) error {
	if a.Notifier == nil {
		return nil
	}
	p := in.Pending
	ev := notify.Event{Type: in.Type, WorkflowID: in.WorkflowID, CallID: p.CallID, Tool: p.Tool, Input: p.Input,
		Message: p.Message, Reason: p.Reason, Hash: p.Hash, RequestedAt: p.RequestedAt, Deadline: p.Deadline,
		Namespace: in.Namespace, Agent: in.Agent, Roles: in.Roles}
	if n := in.Answer; n != nil {
		ev.Answer = &notify.Answer{By: n.By, Via: n.Via, Decision: n.Decision, Reason: n.Reason, Scope: n.Scope,
			Edited: n.Edited, At: n.At, Approvers: n.Approvers, Progress: n.Progress, Partial: n.Partial}
		if n.TTL > 0 {
			ev.Answer.TTL = n.TTL.String()
		}
		if n.Raise != nil {
			ev.Answer.Raise = n.Raise.RaiseText()
		}
	}
	if n := in.Session; n != nil {
		ev.Session = &notify.Session{Seq: n.Seq, State: n.State, Turn: n.Turn, Mode: n.Mode, Text: n.Text, Reason: n.Reason,
			Answer: n.Answer, By: n.By, Via: n.Via, At: n.At}
		ev.RequestedAt = n.At
	}
	if in.Type == notify.TypeApprovalEscalated {
		ev.Action = string(p.Escalation)
		if ev.Action == "" {
			ev.Action = notify.ActionDeny
		}
	}
	if a.InboxURL != "" {
		// The page filtered to the turn, opened at the entry.
		ev.InboxURL = strings.TrimSuffix(a.InboxURL, "/") + "/?workflow=" + url.QueryEscape(in.WorkflowID) +
			"#" + url.PathEscape(in.WorkflowID) + "/" + url.PathEscape(p.CallID)
	}
	var prog notifyProgress
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &prog); err != nil {
			a.logger().Warn("notify: unreadable delivery state; sending to every URL", "error", err)
			prog = notifyProgress{}
		}
	}
	d := &notify.Delivery{ID: ev.ID(), Event: ev, Delivered: prog.Delivered,
		OnDelivered: func(urls []string) { activity.RecordHeartbeat(ctx, notifyProgress{Delivered: urls}) }}
	err := a.Notifier.Send(ctx, d)
	if err != nil {
		a.NotifyMetrics.Failed()
	}
	if errors.Is(err, notify.ErrEmptySecret) || errors.Is(err, notify.ErrBadSecret) {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("notify %s: %v", ev.CallID, err), ErrTypeWebhookSecret, err)
	}
	return err
}
