package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/model"
)

// chargeOptions are the budget activities' options: local activities
// (the store's Update is one round trip; no activity task to dispatch),
// short attempts, retried until the store answers (a charge is
// idempotent per turn and sequence, a raise per key).
func chargeOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
}

// agentBudgetOn reports whether the turn charges an agent budget store.
// Turns without one never get past the first test (no marker, no
// command).
func (t *turn) agentBudgetOn(ctx workflow.Context) bool {
	return t.in.AgentBudget != "" && workflow.GetVersion(ctx, versionAgentBudgets, workflow.DefaultVersion, 1) >= 1
}

// charge reports the usage since the turn's last charge to its agent
// budget store and asks about the next step (calls; nil: a model call;
// final: the turn ends, nothing to ask).
func (t *turn) charge(ctx workflow.Context, calls []model.ToolCall, final bool) (BudgetVerdict, error) {
	in := BudgetCharge{Store: t.in.AgentBudget, Turn: t.wfid, Seq: t.AgentSeq + 1,
		Usage: usageSince(t.Usage, t.AgentCharged), Final: final}
	for _, c := range calls {
		in.Calls = append(in.Calls, c.Name)
	}
	var v BudgetVerdict
	if err := workflow.ExecuteLocalActivity(chargeOptions(ctx), ActivityBudgetCharge, in).Get(ctx, &v); err != nil {
		return v, fmt.Errorf("agent budget %s: %w", t.in.AgentBudget, err)
	}
	t.AgentSeq, t.AgentCharged = in.Seq, t.Usage
	return v, nil
}

// checkAgentBudget holds the turn before a model call (calls nil) or a
// step's tool calls while its agent's budget is reached: it parks on a
// budget approval until an answer raises the agent's bound (in the
// store) past the step, and returns errBudgetDenied when one ends the
// turn.
func (t *turn) checkAgentBudget(ctx workflow.Context, calls []model.ToolCall) error {
	if !t.agentBudgetOn(ctx) {
		return nil
	}
	if calls == nil && t.AgentSeq > 0 && t.unchargedNone() {
		// The step's tool calls were charged and nothing was spent
		// since: the store answered just now, and the model call
		// that follows is the one step a turn may not foresee.
		return nil
	}
	for {
		v, err := t.charge(ctx, calls, false)
		if err != nil {
			return err
		}
		req := v.Request
		if req.Kind == "" {
			return nil
		}
		req.Store = t.in.AgentBudget
		label := req.Agent
		if label == "" {
			label = "(namespace)"
		}
		req.Kind = fmt.Sprintf("agent %s %s %s", label, req.Window, req.Kind)
		a, err := t.parkBudget(ctx, req, workflow.Now(ctx))
		if err != nil {
			return err
		}
		if a.Decision == DecisionDeny || a.Raise.IsZero() {
			return budgetDenied(req, a)
		}
		r := BudgetRaise{Store: req.Store, Window: req.Window, Raise: *a.Raise, By: a.By,
			Key: fmt.Sprintf("%s/budget_%d", t.wfid, t.BudgetParks)}
		if err := workflow.ExecuteLocalActivity(chargeOptions(ctx), ActivityBudgetRaise, r).Get(ctx, nil); err != nil {
			return fmt.Errorf("raise agent budget %s: %w", req.Store, err)
		}
		t.emit(ctx, Event{Type: EventBudget, Text: fmt.Sprintf("agent %s %s budget raised by %s", label, req.Window, a.Raise.String())})
	}
}

// budgetDenied is the error that ends a turn whose budget approval req
// was denied (or answered with no raise).
func budgetDenied(req BudgetRequest, a Approval) error {
	if a.Decision != DecisionDeny {
		return errBudgetDenied{fmt.Sprintf("budget %s reached (%s of %s), and the answer raised nothing", req.Kind, req.Spent, req.Limit)}
	}
	reason := a.Reason
	if reason == "" {
		reason = "no reason given"
	}
	by := ""
	if a.By != "" {
		by = " by " + a.By
	}
	return errBudgetDenied{fmt.Sprintf("budget %s reached (%s of %s), and the request to raise it was denied%s: %s", req.Kind, req.Spent, req.Limit, by, reason)}
}

// chargeLast charges the usage of a turn's last model calls when it
// ends: it asks nothing, and a failure is logged (the turn's answer
// stands).
func (t *turn) chargeLast(ctx workflow.Context) {
	if !t.agentBudgetOn(ctx) || t.unchargedNone() {
		return
	}
	if _, err := t.charge(ctx, nil, true); err != nil {
		workflow.GetLogger(ctx).Error("last agent budget charge failed", "store", t.in.AgentBudget, "error", err)
	}
}

// unchargedNone reports whether the turn spent nothing since its last
// charge.
func (t *turn) unchargedNone() bool {
	return t.Usage.Total() == t.AgentCharged.Total() && t.Usage.CostOr0() == t.AgentCharged.CostOr0()
}

// usageSince is u minus before (the cost too, when u has one).
func usageSince(u, before model.Usage) model.Usage {
	d := model.Usage{InputTokens: u.InputTokens - before.InputTokens, CacheReadTokens: u.CacheReadTokens - before.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens - before.CacheWriteTokens, OutputTokens: u.OutputTokens - before.OutputTokens}
	if u.Cost != nil {
		c := u.CostOr0() - before.CostOr0()
		d.Cost = &c
	}
	return d
}
