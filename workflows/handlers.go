package workflows

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/permission"
)

// registerHandlers installs the queries, updates and signals of a turn.
func (t *turn) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryPending, func() ([]Pending, error) {
		return t.open(), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryEvents, func(cursor int) (EventsPage, error) {
		page := EventsPage{Next: cursor, Done: t.done}
		for _, e := range t.events {
			if e.Seq >= cursor {
				page.Events = append(page.Events, e)
				page.Next = e.Seq + 1
			}
		}
		return page, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (Summary, error) {
		return Summary{Iterations: t.iterations, ToolCalls: t.toolCalls, Pending: t.open(),
			Permission: t.perm, Tasks: t.state.Tasks, Done: t.done}, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateApprove,
		func(ctx workflow.Context, a Approval) (Ack, error) {
			t.acceptApproval(ctx, a)
			return Ack{CallID: a.CallID, Status: string(a.Decision)}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(a Approval) error { return t.validateApproval(a) }},
	); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateExternalResult,
		func(ctx workflow.Context, r ExternalResult) (Ack, error) {
			t.acceptExternal(ctx, r)
			return Ack{CallID: r.CallID, Status: "completed"}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(r ExternalResult) error { return t.validateExternal(r) }},
	); err != nil {
		return err
	}
	// Signals are accepted by the server even while no worker runs; the
	// workflow validates them here and records rejections as events.
	approvals := workflow.GetSignalChannel(ctx, SignalApprove)
	externals := workflow.GetSignalChannel(ctx, SignalExternalResult)
	t.approvalsCh, t.externalsCh = approvals, externals
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(approvals, func(c workflow.ReceiveChannel, _ bool) {
				var a Approval
				c.Receive(ctx, &a)
				t.signalApproval(ctx, a)
			})
			sel.AddReceive(externals, func(c workflow.ReceiveChannel, _ bool) {
				var r ExternalResult
				c.Receive(ctx, &r)
				t.signalExternal(ctx, r)
			})
			sel.Select(ctx)
		}
	})
	return nil
}

// findOpen returns the unanswered pending entry for a call id.
func (t *turn) findOpen(callID string) (Pending, error) {
	for _, p := range t.pending {
		if p.CallID != callID {
			continue
		}
		if _, done := t.answers[callID]; done {
			return p, fmt.Errorf("call %s was already answered", callID)
		}
		return p, nil
	}
	return Pending{}, fmt.Errorf("no pending call %q", callID)
}

func (t *turn) validateApproval(a Approval) error {
	p, err := t.findOpen(a.CallID)
	if err != nil {
		return err
	}
	if p.Kind != PendingApproval {
		return fmt.Errorf("call %s waits for an external result, not an approval", a.CallID)
	}
	if a.Hash != "" && a.Hash != p.Hash {
		return fmt.Errorf("hash mismatch for call %s: the call or policy changed since it was shown (want %s)", a.CallID, p.Hash)
	}
	switch a.Decision {
	case DecisionAllow, DecisionDeny:
	case DecisionAlwaysAllow:
		if len(a.Rules) == 0 && len(p.Suggestions) == 0 {
			return errors.New("always_allow needs a rule: the call has no suggested rules")
		}
		for _, r := range a.Rules {
			if _, err := permission.ParseRule(r, permission.Allow); err != nil {
				return fmt.Errorf("rule %q: %w", r, err)
			}
		}
	default:
		return fmt.Errorf("unknown decision %q (want allow, always_allow or deny)", a.Decision)
	}
	if len(a.Input) > 0 && !json.Valid(a.Input) {
		return errors.New("edited input is not valid JSON")
	}
	return nil
}

func (t *turn) acceptApproval(ctx workflow.Context, a Approval) {
	t.answers[a.CallID] = answer{approval: &a}
	text := string(a.Decision)
	if a.By != "" {
		text += " by " + a.By
	}
	if a.Reason != "" {
		text += ": " + a.Reason
	}
	t.emit(ctx, Event{Type: EventAnswered, CallID: a.CallID, Text: text})
	if a.Decision != DecisionAlwaysAllow {
		return
	}
	rules := a.Rules
	if len(rules) == 0 {
		p, _ := t.findPending(a.CallID)
		rules = p.Suggestions
	}
	for _, s := range rules {
		r, err := permission.ParseRule(s, permission.Allow)
		if err != nil {
			continue // validated already; suggestions come from the engine
		}
		r.Source = "session"
		t.perm.AddRule(r)
	}
	t.policyVersion++
	t.recheck = true
}

func (t *turn) findPending(callID string) (Pending, bool) {
	for _, p := range t.pending {
		if p.CallID == callID {
			return p, true
		}
	}
	return Pending{}, false
}

func (t *turn) validateExternal(r ExternalResult) error {
	p, err := t.findOpen(r.CallID)
	if err != nil {
		return err
	}
	if p.Kind != PendingExternal {
		return fmt.Errorf("call %s waits for an approval, not an external result", r.CallID)
	}
	return nil
}

func (t *turn) acceptExternal(ctx workflow.Context, r ExternalResult) {
	t.answers[r.CallID] = answer{external: &r}
	t.emit(ctx, Event{Type: EventAnswered, CallID: r.CallID, Text: "external result received"})
}

// signalApproval applies an approval that came as a signal, or records
// why it was rejected.
func (t *turn) signalApproval(ctx workflow.Context, a Approval) {
	if err := t.validateApproval(a); err != nil {
		t.emit(ctx, Event{Type: EventRejected, CallID: a.CallID, Text: err.Error()})
		return
	}
	t.acceptApproval(ctx, a)
}

// signalExternal applies an external result that came as a signal.
func (t *turn) signalExternal(ctx workflow.Context, r ExternalResult) {
	if err := t.validateExternal(r); err != nil {
		t.emit(ctx, Event{Type: EventRejected, CallID: r.CallID, Text: err.Error()})
		return
	}
	t.acceptExternal(ctx, r)
}

// drainSignals applies signals already delivered but not yet read.
func (t *turn) drainSignals(ctx workflow.Context) {
	for {
		var a Approval
		if !t.approvalsCh.ReceiveAsync(&a) {
			break
		}
		t.signalApproval(ctx, a)
	}
	for {
		var r ExternalResult
		if !t.externalsCh.ReceiveAsync(&r) {
			break
		}
		t.signalExternal(ctx, r)
	}
}
