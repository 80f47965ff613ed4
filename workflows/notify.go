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
// notifications existed replay without it. It reports whether it sent
// one.
func (t *turn) notify(ctx workflow.Context, typ string, p Pending) bool {
	if !p.Notify || workflow.GetVersion(ctx, versionNotifyWebhooks, workflow.DefaultVersion, 1) < 1 {
		return false
	}
	t.sendNotification(ctx, t.notifyInput(ctx, typ, p))
	return true
}

// notifyInput is the notification of typ about p, with what routes match:
// the namespace, the turn's agent label and the approver roles that cover
// the call.
func (t *turn) notifyInput(ctx workflow.Context, typ string, p Pending) NotifyInput {
	info := workflow.GetInfo(ctx)
	return NotifyInput{Type: typ, WorkflowID: info.WorkflowExecution.ID, Pending: p,
		Namespace: info.Namespace, Agent: t.in.Agent, Roles: t.routeRoles(ctx, p)}
}

// routed is the approver roles computed for an entry's call (routeRoles).
type routed struct {
	tool, input string
	roles       []string
}

// routeRoles lists the approver roles whose rules cover p's call
// (Approvers.RolesFor). A turn whose approvers have no roles asks no
// checker. Runs since versionRouteRoles compute them once per entry and
// run, in a side effect, so a replay reads them from the history instead
// of asking the roles checker again; older runs ask it every time.
func (t *turn) routeRoles(ctx workflow.Context, p Pending) []string {
	a := t.approvers()
	if a == nil || len(a.Roles) == 0 {
		return nil
	}
	if workflow.GetVersion(ctx, versionRouteRoles, workflow.DefaultVersion, 1) < 1 {
		return a.RolesFor(t.roles, p.Tool, p.Input, "")
	}
	if r, ok := t.routes[p.CallID]; ok && r.tool == p.Tool && r.input == string(p.Input) {
		return r.roles
	}
	var roles []string
	if err := workflow.SideEffect(ctx, func(workflow.Context) any {
		return a.RolesFor(WithLinks(t.roles, p.Links), p.Tool, p.Input, p.Workdir)
	}).Get(&roles); err != nil {
		// A recorded value that does not decode: route by the rest, and say so.
		workflow.GetLogger(ctx).Warn("approver roles for routing unreadable; routing without them", "call", p.CallID, "error", err)
		roles = nil
	}
	if t.routes == nil {
		t.routes = map[string]routed{}
	}
	t.routes[p.CallID] = routed{tool: p.Tool, input: string(p.Input), roles: roles}
	return roles
}

// notifyAnswered sends the approval_answered notification of p's answer
// a. It is called wherever an entry gets its final answer, once per
// entry. Runs recorded before versionNotifyAnswered send none.
func (t *turn) notifyAnswered(ctx workflow.Context, p Pending, a AnswerNote) {
	if a.At.IsZero() {
		a.At = workflow.Now(ctx)
	}
	t.chatAnswered(ctx, p, a)
	if !p.Notify || workflow.GetVersion(ctx, versionNotifyAnswered, workflow.DefaultVersion, 1) < 1 {
		return
	}
	in := t.notifyInput(ctx, NotifyApprovalAnswered, p)
	in.Answer = &a
	t.sendNotification(ctx, in)
}

// noteOf is the answer note of an approver's answer to p. An allow of a
// call that needs several approvers names them all, those of p.Approvals
// first.
func noteOf(p Pending, a Approval) AnswerNote {
	n := AnswerNote{By: a.By, Via: a.Via, Decision: string(a.Decision), Reason: a.Reason, Scope: string(a.Scope),
		TTL: a.TTL, Edited: len(a.Input) > 0 && string(a.Input) != string(p.Input)}
	if p.Quorum > 1 && a.Decision != DecisionDeny {
		for _, b := range p.Approvals {
			n.Approvers = append(n.Approvers, ApproverID(b))
		}
		n.Approvers = append(n.Approvers, ApproverID(a))
		n.Progress = QuorumText(p, len(n.Approvers))
	}
	if p.Kind == PendingBudget && a.Decision != DecisionDeny && !a.Raise.IsZero() {
		r := *a.Raise
		n.Raise = &r
	}
	return n
}

// notifyProgress tells the channels of an allow short of p's quorum (p
// holds it in Approvals): an approval_progress notification and the chat
// message's progress, its buttons still live. Runs recorded before
// versionQuorumProgress told nobody.
func (t *turn) notifyProgress(ctx workflow.Context, p Pending) {
	if workflow.GetVersion(ctx, versionQuorumProgress, workflow.DefaultVersion, 1) < 1 {
		return
	}
	a := p.Approvals[len(p.Approvals)-1]
	n := noteOf(Pending{Quorum: p.Quorum, Approvals: p.Approvals[:len(p.Approvals)-1], Input: p.Input}, a)
	n.Partial, n.At = true, workflow.Now(ctx)
	if p.ChatOn && len(p.Chat) > 0 {
		t.chatUpdate(ctx, p, n)
	}
	if p.Notify {
		in := t.notifyInput(ctx, NotifyApprovalProgress, p)
		in.Answer = &n
		t.sendNotification(ctx, in)
	}
}

// refreshWaiting tells the channels of every entry still open after a
// recheck (policyBumped gave each a new hash): its chat message is drawn
// again, its buttons carrying the new hash, and an approval_updated
// notification carries the hash and the verdict's reason now. Runs
// recorded before versionChatRefresh told nobody.
func (t *turn) refreshWaiting(ctx workflow.Context) {
	open := t.open()
	if len(open) == 0 || workflow.GetVersion(ctx, versionChatRefresh, workflow.DefaultVersion, 1) < 1 {
		return
	}
	for _, p := range open {
		if p.ChatOn && len(p.Chat) > 0 {
			// Partial: the message keeps its buttons (Slack.Progress).
			t.chatUpdate(ctx, p, AnswerNote{Partial: true, At: workflow.Now(ctx)})
		}
		if p.Notify {
			t.sendNotification(ctx, t.notifyInput(ctx, NotifyApprovalUpdated, p))
		}
	}
}

// remindDue sends the reminders of the open entries whose reminder time
// (RemindBefore their deadline) passed by now, and returns the earliest
// reminder time still ahead (zero: none). Entries without RemindBefore
// (every entry of runs recorded before reminders) emit nothing.
func (t *turn) remindDue(ctx workflow.Context, now time.Time) time.Time {
	var next time.Time
	for i := range t.pending {
		p := t.pending[i]
		if p.RemindBefore <= 0 || p.Reminded || p.Deadline.IsZero() || !p.Notify {
			continue
		}
		if _, answered := t.answers[p.CallID]; answered {
			continue
		}
		if workflow.GetVersion(ctx, versionNotifyReminders, workflow.DefaultVersion, 1) < 1 {
			return time.Time{}
		}
		at := p.Deadline.Add(-p.RemindBefore)
		if at.After(now) {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		t.pending[i].Reminded = true
		t.emit(ctx, Event{Type: EventCustom, CallID: p.CallID, Tool: p.Tool, Text: "reminder sent: deadline " + p.Deadline.UTC().Format(time.RFC3339)})
		t.sendNotification(ctx, t.notifyInput(ctx, NotifyApprovalReminder, t.pending[i]))
	}
	return next
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
	if t.settled || (len(t.unsettled()) == 0 && t.chatsSettled()) {
		return
	}
	t.settled = true
	if workflow.GetVersion(ctx, versionNotifyDelivery, workflow.DefaultVersion, 1) < 1 {
		return
	}
	// An error is the run's cancellation: what is unsettled stays so.
	_, _ = workflow.AwaitWithTimeout(ctx, notifyGrace, func() bool { return len(t.unsettled()) == 0 && t.chatsSettled() })
}
