package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// classify turns a prepared call into a result, a pending entry, or a
// call ready to run.
func (t *turn) classify(ctx workflow.Context, s *slot, now time.Time, text string) {
	c, p := s.Call, s.Prep
	if p.Invalid != "" {
		s.Result = &calls.Result{CallID: c.ID, Name: c.Name, Content: p.Invalid, IsError: true, State: calls.StateError}
		return
	}
	d := p.Decision
	t.emit(ctx, Event{Type: EventDecision, CallID: c.ID, Tool: c.Name, Text: string(d.Behavior) + ": " + d.Reason})
	if len(d.UpdatedInput) > 0 {
		s.Call.Input = d.UpdatedInput
	}
	switch d.Behavior {
	case permission.Allow:
		if p.ToolFlags().External {
			t.park(ctx, Pending{Kind: PendingExternal, CallID: c.ID, Tool: c.Name, Input: s.Call.Input, Workdir: p.Workdir, Links: p.Links,
				Message: "waiting for an external result", Notify: p.Policy.Notify,
				Context: clipTo(text, ContextBytes), Prompt: clipTo(t.in.Prompt, ContextBytes)}, now, -1)
			return
		}
		s.Ready = true
	case permission.Deny:
		s.Result = denied(c, d.Message)
	default: // ask, and passthrough treated as ask
		pend := Pending{Kind: PendingApproval, CallID: c.ID, Tool: c.Name, Input: s.Call.Input,
			Message: d.Message, Reason: d.Reason, BypassImmune: d.BypassImmune, Diff: p.Preview,
			Context: clipTo(text, ContextBytes), Prompt: clipTo(t.in.Prompt, ContextBytes), LiveVersion: p.PolicyVersion,
			Workdir: p.Workdir, Links: p.Links}
		for _, r := range d.Suggestions {
			pend.Suggestions = append(pend.Suggestions, r.String())
		}
		if p.Sandbox != nil {
			pend.Sandbox = p.Sandbox.String()
		}
		timeout := t.in.ApprovalTimeout
		if timeout == 0 {
			timeout = p.Policy.ApprovalTimeout
		}
		if timeout == 0 {
			timeout = DefaultApprovalTimeout
		}
		pend.Escalation, pend.Notify, pend.RemindBefore, pend.ChatOn = p.Policy.Escalation, p.Policy.Notify, p.Policy.RemindBefore, p.Policy.Chat
		pend.Quorum, pend.ReasonRequired = p.Policy.Quorum, p.Policy.RequireReason
		t.park(ctx, pend, now, timeout)
	}
}

func denied(c model.ToolCall, msg string) *calls.Result {
	return &calls.Result{CallID: c.ID, Name: c.Name, Content: "Permission denied: " + msg, IsError: true, State: calls.StateDenied}
}
