package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// park adds a pending entry; a negative timeout waits without a bound.
func (t *turn) park(ctx workflow.Context, p Pending, now time.Time, timeout time.Duration) {
	p.RequestedAt = now
	if timeout > 0 {
		p.Deadline = now.Add(timeout)
	}
	p.Hash = CallHash(p.Tool, p.Input, p.CallID, t.PolicyVersion)
	t.pending = append(t.pending, p)
	t.emit(ctx, Event{Type: EventWaiting, CallID: p.CallID, Tool: p.Tool, Text: string(p.Kind) + ": " + p.Message})
	typ := NotifyApprovalRequested
	if p.Kind == PendingExternal {
		typ = NotifyExternalRequested
	}
	t.notify(ctx, typ, p)
	if p.Kind == PendingApproval || p.Kind == PendingBudget {
		t.chatPost(ctx, p)
	}
}

// wait blocks durably until every pending entry of this step is answered
// or its deadline passes, then applies the answers to the slots.
func (t *turn) wait(ctx workflow.Context, slots []*slot) error {
	t.upsertPending(ctx)
	// Since versionWaitContinueAsNew the wait itself watches the history
	// bound: every workflow task re-evaluates it, so answers that change
	// nothing (rejected signals, stale hashes) cannot grow a waiting
	// turn's history past it. Runs recorded before it checked the bound
	// only when an answer or a deadline ended the wait.
	watch := workflow.GetVersion(ctx, versionWaitContinueAsNew, workflow.DefaultVersion, 1) >= 1
	for {
		if t.shouldContinueAsNew(ctx) {
			t.inFlight = slots
			return errContinueAsNew
		}
		open := t.open()
		if len(open) == 0 {
			break
		}
		now := workflow.Now(ctx)
		next, err := t.escalateDue(ctx, open, now)
		if err != nil {
			return err
		}
		if r := t.remindDue(ctx, now); !r.IsZero() && (next.IsZero() || r.Before(next)) {
			next = r
		}
		n := len(t.open())
		if n == len(open) {
			// An escalation that keeps waiting changed its entry.
			t.upsertIndex(ctx, t.open())
		}
		if n < len(open) {
			t.upsertPending(ctx)
			continue
		}
		if err := t.awaitChange(ctx, n, now, next, watch); err != nil {
			return err
		}
		t.upsertPending(ctx)
	}
	return t.applyAnswers(ctx, slots)
}

// escalateDue escalates the open entries whose deadline passed by now
// and returns the earliest deadline still ahead (zero: none).
func (t *turn) escalateDue(ctx workflow.Context, open []Pending, now time.Time) (time.Time, error) {
	var next time.Time
	for _, p := range open {
		if p.Deadline.IsZero() {
			continue
		}
		if !p.Deadline.After(now) {
			if err := t.escalate(ctx, p); err != nil {
				return time.Time{}, err
			}
			continue
		}
		if next.IsZero() || p.Deadline.Before(next) {
			next = p.Deadline
		}
	}
	return next, nil
}

// awaitChange blocks until fewer than n entries are open, a policy
// change asks to decide the waiting calls again (then it does), the
// deadline next passes (zero: no deadline), or, with watch, the history
// passed its bound.
func (t *turn) awaitChange(ctx workflow.Context, n int, now, next time.Time, watch bool) error {
	cond := func() bool {
		return t.recheck || t.indexDirty || len(t.open()) < n || (watch && t.shouldContinueAsNew(ctx))
	}
	if next.IsZero() {
		if err := workflow.Await(ctx, cond); err != nil {
			return fmt.Errorf("waiting for approvals: %w", err)
		}
	} else if _, err := workflow.AwaitWithTimeout(ctx, next.Sub(now), cond); err != nil {
		return fmt.Errorf("waiting for approvals: %w", err)
	}
	if t.recheck {
		t.recheck = false
		if err := t.recheckPending(ctx); err != nil {
			return err
		}
		t.refreshWaiting(ctx)
	}
	return nil
}

// applyAnswers applies the answers of the step's pending entries to its
// slots (in the entries' order) and clears the entries.
func (t *turn) applyAnswers(ctx workflow.Context, slots []*slot) error {
	bySlot := map[string]*slot{}
	for _, s := range slots {
		bySlot[s.Call.ID] = s
	}
	for _, p := range t.pending {
		s := bySlot[p.CallID]
		if s == nil {
			continue
		}
		if err := t.apply(ctx, s, p, t.answers[p.CallID]); err != nil {
			return err
		}
	}
	t.pending = nil
	t.upsertPending(ctx)
	return nil
}

// escalate applies a pending entry's escalation once its deadline
// passed, and records it for the audit (runs since versionAuditNotes):
// the deadline reached, the action, and whom it notified.
func (t *turn) escalate(ctx workflow.Context, p Pending) error {
	action := p.Escalation
	if action == "" {
		action = EscalateDeny
	}
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"action": string(action)}).Counter(MetricApprovalEscalation).Inc(1)
	note := EscalationNote{CallID: p.CallID, Tool: p.Tool, RequestedAt: p.RequestedAt, Deadline: p.Deadline, Action: action}
	switch p.Escalation {
	case EscalateAllow:
		t.answers[p.CallID] = AnswerState{CallID: p.CallID, Approval: &Approval{CallID: p.CallID, Decision: DecisionAllow, By: "deadline", Reason: "approval deadline passed"}}
		t.emit(ctx, Event{Type: EventEscalated, CallID: p.CallID, Tool: p.Tool, Text: "deadline passed: allowed"})
		note.Notified = t.notifyEscalation(ctx, p)
		t.notifyAnswered(ctx, p, AnswerNote{By: "deadline", Decision: string(DecisionAllow), Reason: "approval deadline passed"})
	case EscalateNotify:
		for i := range t.pending {
			if t.pending[i].CallID == p.CallID {
				t.pending[i].Escalated = true
				t.pending[i].Deadline = time.Time{}
				p = t.pending[i]
			}
		}
		t.emit(ctx, Event{Type: EventEscalated, CallID: p.CallID, Tool: p.Tool, Text: "deadline passed: escalated, still waiting"})
		note.Notified = t.notify(ctx, NotifyApprovalEscalated, p)
	default:
		t.answers[p.CallID] = AnswerState{CallID: p.CallID, Approval: &Approval{CallID: p.CallID, Decision: DecisionDeny, By: "deadline", Reason: "approval timed out"}}
		t.emit(ctx, Event{Type: EventEscalated, CallID: p.CallID, Tool: p.Tool, Text: "deadline passed: denied"})
		note.Notified = t.notifyEscalation(ctx, p)
		t.notifyAnswered(ctx, p, AnswerNote{By: "deadline", Decision: string(DecisionDeny), Reason: "approval timed out"})
	}
	if r, ok := t.routes[p.CallID]; ok && note.Notified {
		note.Roles = r.roles
	}
	return recordNote(ctx, AuditNote{Escalation: &note})
}

// notifyEscalation sends the webhook of an escalation that ends the wait
// (allow, or deny on a timed-out approval) and reports whether it sent
// one. Turns that escalated before these notifications existed replay
// without them.
func (t *turn) notifyEscalation(ctx workflow.Context, p Pending) bool {
	if workflow.GetVersion(ctx, versionNotifyEscalations, workflow.DefaultVersion, 1) >= 1 {
		return t.notify(ctx, NotifyApprovalEscalated, p)
	}
	return false
}

// open lists the pending entries without an answer, in order.
func (t *turn) open() []Pending {
	var out []Pending
	for _, p := range t.pending {
		if _, ok := t.answers[p.CallID]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// recheckPending re-evaluates unanswered approvals after a rule was added;
// calls the new policy allows resolve without an approver.
func (t *turn) recheckPending(ctx workflow.Context) error {
	var calls []model.ToolCall
	for _, p := range t.open() {
		if p.Kind == PendingApproval {
			calls = append(calls, model.ToolCall{ID: p.CallID, Name: p.Tool, Input: p.Input})
		}
	}
	if len(calls) == 0 {
		return nil
	}
	preps, err := t.prepare(ctx, VerdictRedecide, calls)
	if err != nil {
		return err
	}
	if t.in.LivePolicy != "" && workflow.GetVersion(ctx, versionLivePolicy, workflow.DefaultVersion, 1) >= 1 {
		return t.redecide(ctx, calls, preps)
	}
	for i, p := range preps {
		if p.Invalid == "" && p.Decision.Behavior == permission.Allow {
			t.answers[calls[i].ID] = AnswerState{CallID: calls[i].ID, Auto: p.Decision.Reason}
			t.emit(ctx, Event{Type: EventAnswered, CallID: calls[i].ID, Tool: calls[i].Name, Text: "allowed by added rule: " + p.Decision.Reason})
			if e, ok := t.findPending(calls[i].ID); ok {
				t.notifyAnswered(ctx, e, AnswerNote{By: "rule", Decision: string(DecisionAllow), Reason: p.Decision.Reason})
			}
		}
	}
	return nil
}

// apply turns an answer into a ready call or a result.
func (t *turn) apply(ctx workflow.Context, s *slot, p Pending, a AnswerState) error {
	if p.Kind == PendingApproval {
		workflow.GetMetricsHandler(ctx).Timer(MetricApprovalWait).Record(workflow.Now(ctx).Sub(p.RequestedAt))
	}
	approvalSpan(ctx, p, a, t.in.LivePolicy != "")
	answerMetric(ctx, p, a, t.in.LivePolicy != "")
	switch {
	case a.External != nil:
		r := a.External
		s.Result = &calls.Result{CallID: p.CallID, Name: p.Tool, Content: r.Content, IsError: r.IsError, Metadata: r.Metadata, State: calls.StateSuccess}
		if r.IsError {
			s.Result.State = calls.StateError
		}
	case a.Denied != "":
		s.Result = denied(s.Call, a.Denied)
	case a.Interrupted != "":
		s.Result = interrupted(s.Call, a.Interrupted, false, "")
	case a.Auto != "":
		if err := t.countApproved(ctx, s); err != nil {
			return err
		}
		s.Ready = true
	case a.Approval != nil && a.Approval.Decision == DecisionDeny:
		reason := a.Approval.Reason
		if reason == "" {
			reason = "no reason given"
		}
		by := ""
		if a.Approval.By != "" {
			by = " by " + a.Approval.By
		}
		s.Result = &calls.Result{CallID: p.CallID, Name: p.Tool, IsError: true, State: calls.StateDenied,
			Content: fmt.Sprintf("The user denied this %s call%s: %s", p.Tool, by, reason)}
	case a.Approval != nil:
		t.clearLeg(s, a.Approval.By)
		if err := t.countApproved(ctx, s); err != nil {
			return err
		}
		if len(a.Approval.Input) > 0 && string(a.Approval.Input) != string(p.Input) {
			return t.applyEdit(ctx, s, p, a.Approval)
		}
		s.Ready = true
	default:
		return errors.New("pending call without answer")
	}
	return nil
}

// applyEdit runs an approved call with its edited input. The edit is a
// new call: it is validated against the tool's schema and decided again
// by the one decision function (Prepare). The rule:
//   - invalid input or a deny: the edit is refused (an error result the
//     model reads); nothing runs;
//   - ask (or passthrough): the approver named this exact input in the
//     answer (and the validator checked their roles cover it), so the
//     approval stands as the approval of the new call;
//   - allow: the policy allows the new call anyway.
//
// Either way the call runs with the new verdict: its own read-only flag,
// policy, fast path and retries, never the original's (a read-only call
// edited into a side-effecting command runs at most once).
func (t *turn) applyEdit(ctx workflow.Context, s *slot, p Pending, a *Approval) error {
	preps, err := t.prepare(ctx, VerdictEdit, []model.ToolCall{{ID: p.CallID, Name: p.Tool, Input: a.Input}})
	if err != nil {
		return err
	}
	np := preps[0]
	if np.Invalid != "" {
		s.Result = &calls.Result{CallID: p.CallID, Name: p.Tool, Content: np.Invalid, IsError: true, State: calls.StateError}
		return nil
	}
	if np.Decision.Behavior == permission.Deny {
		s.Result = denied(s.Call, np.Decision.Message)
		return nil
	}
	s.Call.Input = a.Input
	if workflow.GetVersion(ctx, versionEditedNewCall, workflow.DefaultVersion, 1) >= 1 {
		if len(np.Decision.UpdatedInput) > 0 {
			s.Call.Input = np.Decision.UpdatedInput
		}
		s.Prep = np
		t.emit(ctx, Event{Type: EventDecision, CallID: p.CallID, Tool: p.Tool,
			Text: "edited input decided as a new call: " + string(np.Decision.Behavior) + ": " + np.Decision.Reason})
	}
	s.Ready = true
	return nil
}
