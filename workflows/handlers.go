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
	if err := t.registerQueries(ctx); err != nil {
		return err
	}
	if err := t.registerUpdates(ctx); err != nil {
		return err
	}
	if err := t.registerSession(ctx); err != nil {
		return err
	}
	t.receiveSignals(ctx)
	return nil
}

// registerQueries installs the turn's queries: its open entries, its
// events from a cursor on, and a summary of its state.
func (t *turn) registerQueries(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryPending, func() ([]Pending, error) {
		return t.open(), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryEvents, func(cursor int) (EventsPage, error) {
		return t.eventsPage(cursor), nil
	}); err != nil {
		return err
	}
	return workflow.SetQueryHandler(ctx, QueryState, func() (Summary, error) {
		return Summary{Iterations: t.Iterations, ToolCalls: t.ToolCalls, Pending: t.open(),
			Permission: t.perm, Tasks: t.state.Tasks, Done: t.done, Usage: t.Usage, LivePolicy: t.in.LivePolicy, Session: t.sessionSummary()}, nil
	})
}

// registerUpdates installs the updates that answer a pending call, each
// with its validator.
func (t *turn) registerUpdates(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateApprove,
		func(ctx workflow.Context, a Approval) (Ack, error) {
			t.acceptApproval(ctx, a)
			status := string(a.Decision)
			if _, answered := t.answers[a.CallID]; !answered {
				// An allow short of the call's quorum.
				if p, ok := t.findPending(a.CallID); ok {
					status += " (" + QuorumText(p, len(p.Approvals)) + " approvals)"
				}
			}
			ack := Ack{CallID: a.CallID, Status: status, NotRemembered: t.unremembered[a.CallID]}
			delete(t.unremembered, a.CallID)
			return ack, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(a Approval) error { return t.validateApproval(a) }},
	); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateExternalResult,
		func(ctx workflow.Context, r ExternalResult) (Ack, error) {
			t.acceptExternal(ctx, r)
			return Ack{CallID: r.CallID, Status: "completed"}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(r ExternalResult) error { return t.validateExternal(r) }},
	)
}

// receiveSignals starts the coroutine that handles the turn's signals.
// Signals are accepted by the server even while no worker runs; the
// workflow validates them here and records rejections as events.
func (t *turn) receiveSignals(ctx workflow.Context) {
	approvals := workflow.GetSignalChannel(ctx, SignalApprove)
	externals := workflow.GetSignalChannel(ctx, SignalExternalResult)
	notices := workflow.GetSignalChannel(ctx, SignalPolicyChanged)
	t.approvalsCh, t.externalsCh, t.policyCh = approvals, externals, notices
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
			sel.AddReceive(notices, func(c workflow.ReceiveChannel, _ bool) {
				var n PolicyNotice
				c.Receive(ctx, &n)
				t.policyChanged(ctx, n)
			})
			sel.Select(ctx)
		}
	})
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

// errListAgain ends every refusal of a missing or stale hash.
const errListAgain = "list the pending calls again and answer with the hash shown"

// validateApproval checks an answer to a pending ASK: the call is open,
// the hash binds the answer to the exact call and policy version, the
// decision and rules are well formed, and the approver may answer this
// call (and its edit, and the rules it adds) under the turn's approvers.
func (t *turn) validateApproval(a Approval) error {
	return t.checkApproval(a, true)
}

// checkApproval is validateApproval; strict=false is the check of runs
// recorded before versionBoundAnswers (an optional hash, of either form).
func (t *turn) checkApproval(a Approval, strict bool) error {
	p, err := t.findOpen(a.CallID)
	if err != nil {
		return err
	}
	if p.Kind == PendingBudget {
		return t.checkBudgetAnswer(p, a, strict)
	}
	if p.Kind != PendingApproval {
		return fmt.Errorf("call %s waits for an external result, not an approval", a.CallID)
	}
	if a.Raise != nil {
		return fmt.Errorf("call %s is not a budget approval: an answer to it raises no budget", a.CallID)
	}
	if err := t.checkApprovalHash(p, a, strict); err != nil {
		return err
	}
	if err := checkDecision(p, a); err != nil {
		return err
	}
	if len(a.Input) > 0 && !json.Valid(a.Input) {
		return errors.New("edited input is not valid JSON")
	}
	if !strict {
		return nil
	}
	if err := t.checkApprover(p, a); err != nil {
		return err
	}
	if err := checkReason(p, a); err != nil {
		return err
	}
	if err := checkAlways(p, a); err != nil {
		return err
	}
	return t.checkQuorum(p, a)
}

// checkApprovalHash checks the hash an approval carries against its
// entry's; the lax check (strict=false) takes none, or an older worker's.
func (t *turn) checkApprovalHash(p Pending, a Approval, strict bool) error {
	switch {
	case !strict:
		if a.Hash != "" && a.Hash != p.Hash && !t.legacyHash(p, a.Hash) {
			return fmt.Errorf("hash mismatch for call %s: the call or policy changed since it was shown (want %s)", a.CallID, p.Hash)
		}
	case a.Hash == "":
		return fmt.Errorf("answer to call %s carries no hash: %s", a.CallID, errListAgain)
	case a.Hash != p.Hash:
		return fmt.Errorf("stale hash for call %s: the call or the policy changed since it was listed; %s", a.CallID, errListAgain)
	}
	return nil
}

// checkDecision checks an approval's decision, and the rules an
// always_allow adds (its own, else the entry's suggestions).
func checkDecision(p Pending, a Approval) error {
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
	return nil
}

// checkApprover checks that the approver may answer the call under the
// turn's approvers: the call and its edit, what a scope remembers, and
// the rules an always_allow adds.
func (t *turn) checkApprover(p Pending, a Approval) error {
	var edited json.RawMessage
	if a.Decision != DecisionDeny {
		edited = a.Input
	}
	if err := t.approvers().MayAnswer(WithLinks(t.roles, p.Links), a.By, p.Tool, p.Input, edited, p.Workdir); err != nil {
		return fmt.Errorf("approver refused for call %s: %w", a.CallID, err)
	}
	if a.Scope != "" {
		if err := t.checkRemember(p, a); err != nil {
			return fmt.Errorf("remembered approval refused for call %s: %w", a.CallID, err)
		}
	}
	// The input scope adds no rule: the exact call, which the approver's
	// roles cover (MayAnswer).
	if a.Decision == DecisionAlwaysAllow && a.Scope != ScopeInput {
		rules := a.Rules
		if len(rules) == 0 {
			rules = p.Suggestions
		}
		for _, r := range rules {
			if err := t.approvers().MayAddRule(t.roles, a.By, r); err != nil {
				return fmt.Errorf("approver refused for call %s: %w", a.CallID, err)
			}
		}
	}
	return nil
}

// checkBudgetAnswer checks an answer to a budget approval: the hash, a
// deny, or an allow with a raise of positive amounts only; approvers with
// roles need one whose rules cover the Budget tool.
func (t *turn) checkBudgetAnswer(p Pending, a Approval, strict bool) error {
	if err := t.checkApprovalHash(p, a, strict); err != nil {
		return err
	}
	switch a.Decision {
	case DecisionDeny:
		if a.Raise != nil {
			return fmt.Errorf("budget approval %s: a deny raises nothing", a.CallID)
		}
	case DecisionAllow:
		if a.Raise.IsZero() {
			return fmt.Errorf("budget approval %s: an allow must raise the budget (starter approvals approve ... --raise cost=+2)", a.CallID)
		}
		if err := a.Raise.checkRaise(); err != nil {
			return fmt.Errorf("budget approval %s: %w", a.CallID, err)
		}
	default:
		return fmt.Errorf("budget approval %s: decision %q (want allow with a raise, or deny)", a.CallID, a.Decision)
	}
	if len(a.Input) > 0 || len(a.Rules) > 0 || a.Scope != "" {
		return fmt.Errorf("budget approval %s: an answer carries a raise or a deny, no edited input, rules or scope", a.CallID)
	}
	if !strict {
		return nil
	}
	if err := t.approvers().MayAnswer(t.roles, a.By, BudgetTool, p.Input, nil, ""); err != nil {
		return fmt.Errorf("approver refused for budget approval %s: %w", a.CallID, err)
	}
	return nil
}

func (t *turn) acceptApproval(ctx workflow.Context, a Approval) {
	if t.partialAllow(ctx, a) {
		return
	}
	t.answers[a.CallID] = AnswerState{CallID: a.CallID, Approval: &a}
	text := answerText(a)
	if p, ok := t.findPending(a.CallID); ok && p.Quorum > 1 && a.Decision != DecisionDeny {
		text += " (" + QuorumText(p, len(p.Approvals)+1) + " approvals)"
	}
	if a.Raise != nil {
		text += ", raising the budget by " + a.Raise.String()
	}
	text += reasonText(a)
	t.emit(ctx, Event{Type: EventAnswered, CallID: a.CallID, Text: text})
	if p, ok := t.findPending(a.CallID); ok {
		t.notifyAnswered(ctx, p, noteOf(p, a))
	}
	if a.Decision != DecisionAlwaysAllow {
		return
	}
	if a.Scope != "" && t.in.LivePolicy != "" && workflow.GetVersion(ctx, versionRememberedApprovals, workflow.DefaultVersion, 1) >= 1 {
		t.remember(ctx, a)
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
	t.policyBumped()
}

// policyBumped records that the turn's policy changed: every waiting
// call gets a new hash, so answers given against the old policy are
// refused (list again), and the waiting calls are decided again.
func (t *turn) policyBumped() {
	t.PolicyVersion++
	for i := range t.pending {
		t.pending[i].Hash = CallHash(t.pending[i].Tool, t.pending[i].Input, t.pending[i].CallID, t.PolicyVersion)
	}
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

// validateExternal checks an external result (an AskUser answer
// included): the call is open and waits for one, and the sender may
// answer it under the turn's approvers.
func (t *turn) validateExternal(r ExternalResult) error {
	return t.checkExternal(r, true)
}

func (t *turn) checkExternal(r ExternalResult, strict bool) error {
	p, err := t.findOpen(r.CallID)
	if err != nil {
		return err
	}
	if p.Kind != PendingExternal {
		return fmt.Errorf("call %s waits for an approval, not an external result", r.CallID)
	}
	if !strict {
		return nil
	}
	switch {
	case r.Hash == "":
		return fmt.Errorf("result for call %s carries no hash: %s", r.CallID, errListAgain)
	case r.Hash != p.Hash:
		return fmt.Errorf("stale hash for call %s: the call or the policy changed since it was listed; %s", r.CallID, errListAgain)
	}
	if err := t.approvers().MayAnswer(WithLinks(t.roles, p.Links), r.By, p.Tool, p.Input, nil, p.Workdir); err != nil {
		return fmt.Errorf("answer refused for call %s: %w", r.CallID, err)
	}
	return nil
}

func (t *turn) acceptExternal(ctx workflow.Context, r ExternalResult) {
	t.answers[r.CallID] = AnswerState{CallID: r.CallID, External: &r}
	t.emit(ctx, Event{Type: EventAnswered, CallID: r.CallID, Text: "external result received"})
	if p, ok := t.findPending(r.CallID); ok {
		t.notifyAnswered(ctx, p, AnswerNote{By: r.By, Via: r.Via, Decision: "result"})
	}
}

// signalApproval applies an approval that came as a signal, or records
// why it was rejected.
func (t *turn) signalApproval(ctx workflow.Context, a Approval) {
	if msg := t.signalCheck(ctx, func(strict bool) error { return t.checkApproval(a, strict) }); msg != "" {
		t.emit(ctx, Event{Type: EventRejected, CallID: a.CallID, Text: msg})
		return
	}
	t.acceptApproval(ctx, a)
}

// signalExternal applies an external result that came as a signal.
func (t *turn) signalExternal(ctx workflow.Context, r ExternalResult) {
	if msg := t.signalCheck(ctx, func(strict bool) error { return t.checkExternal(r, strict) }); msg != "" {
		t.emit(ctx, Event{Type: EventRejected, CallID: r.CallID, Text: msg})
		return
	}
	t.acceptExternal(ctx, r)
}

// signalCheck runs a signal's check and returns why it is refused ("":
// accepted). Runs recorded since versionBoundAnswers get the Update
// validator's full check, and its outcome is recorded (a side effect):
// the role check asks the decision function, whose code may change
// between a run and its replay, and a replay must keep the outcome.
// Older runs replay with the old, lax check.
func (t *turn) signalCheck(ctx workflow.Context, check func(strict bool) error) string {
	if workflow.GetVersion(ctx, versionBoundAnswers, workflow.DefaultVersion, 1) < 1 {
		if err := check(false); err != nil {
			return err.Error()
		}
		return ""
	}
	var msg string
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		if err := check(true); err != nil {
			return err.Error()
		}
		return ""
	}).Get(&msg)
	if err != nil {
		return "answer check: " + err.Error()
	}
	return msg
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
	for {
		var n PolicyNotice
		if !t.policyCh.ReceiveAsync(&n) {
			break
		}
		t.policyChanged(ctx, n)
	}
}
