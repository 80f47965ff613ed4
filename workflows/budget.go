package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/model"
)

// Budget bounds what a turn may spend: tokens (all kinds, or input or
// output alone), cost (from the worker's price table), tool calls in all
// and per tool, and the turn's wall-clock time across its runs. A zero
// field is no bound. A turn that reaches one parks on a budget approval
// (PendingBudget) before the model call or tool calls it was about to
// make; an answer raises the budget (Approval.Raise) or ends the turn.
type Budget struct {
	Tokens       int64          `json:"tokens,omitempty"`
	InputTokens  int64          `json:"input_tokens,omitempty"`
	OutputTokens int64          `json:"output_tokens,omitempty"`
	Cost         float64        `json:"cost,omitempty"`
	ToolCalls    int            `json:"tool_calls,omitempty"`
	PerTool      map[string]int `json:"per_tool,omitempty"`
	Time         time.Duration  `json:"time,omitempty"`
	// Warn is the fraction of a bound (0.8) past which the turn says so
	// (an event and a budget_warning notification) and goes on; 0: none.
	Warn float64 `json:"warn,omitempty"`
}

// IsZero reports whether b bounds nothing.
func (b *Budget) IsZero() bool {
	return b == nil || (b.Tokens == 0 && b.InputTokens == 0 && b.OutputTokens == 0 && b.Cost == 0 &&
		b.ToolCalls == 0 && len(b.PerTool) == 0 && b.Time == 0)
}

// Plus returns b raised by r (each of r's fields added to b's).
func (b Budget) Plus(r Budget) Budget {
	out := b
	out.Tokens += r.Tokens
	out.InputTokens += r.InputTokens
	out.OutputTokens += r.OutputTokens
	out.Cost += r.Cost
	out.ToolCalls += r.ToolCalls
	out.Time += r.Time
	if len(r.PerTool) > 0 {
		out.PerTool = map[string]int{}
		for _, k := range sortedKeys(b.PerTool) {
			out.PerTool[k] = b.PerTool[k]
		}
		for _, k := range sortedKeys(r.PerTool) {
			out.PerTool[k] += r.PerTool[k]
		}
	}
	return out
}

// checkRaise refuses a raise with a negative amount.
func (b *Budget) checkRaise() error {
	neg := b.Tokens < 0 || b.InputTokens < 0 || b.OutputTokens < 0 || b.Cost < 0 || b.ToolCalls < 0 || b.Time < 0
	for _, k := range sortedKeys(b.PerTool) {
		neg = neg || b.PerTool[k] < 0
	}
	if neg {
		return errors.New("a raise adds: no amount may be negative")
	}
	return nil
}

// String reads "tokens 2000000, cost 5, tool_calls 500, Bash 200, time 8h0m0s".
func (b Budget) String() string { return b.Join(" ", ", ") }

// amounts lists the set bounds of b as name and value, in the order
// String and RaiseText write them.
func (b Budget) amounts() [][2]string {
	var out [][2]string
	add := func(name string, set bool, v string) {
		if set {
			out = append(out, [2]string{name, v})
		}
	}
	add("tokens", b.Tokens != 0, fmt.Sprint(b.Tokens))
	add("input_tokens", b.InputTokens != 0, fmt.Sprint(b.InputTokens))
	add("output_tokens", b.OutputTokens != 0, fmt.Sprint(b.OutputTokens))
	add("cost", b.Cost != 0, fmt.Sprint(b.Cost))
	add("tool_calls", b.ToolCalls != 0, fmt.Sprint(b.ToolCalls))
	for _, k := range sortedKeys(b.PerTool) {
		add(k, true, fmt.Sprint(b.PerTool[k]))
	}
	add("time", b.Time != 0, b.Time.String())
	return out
}

// Join writes b's set bounds as name+between+value, separated by sep:
// Join(" +", ", ") is "tokens +1000, cost +5".
func (b Budget) Join(between, sep string) string {
	var parts []string
	for _, a := range b.amounts() {
		parts = append(parts, a[0]+between+a[1])
	}
	return strings.Join(parts, sep)
}

// BudgetRequest is a budget approval's input: the bound reached, what
// was spent and the limit, and what the turn was about to do.
type BudgetRequest struct {
	Kind  string `json:"kind"`
	Spent string `json:"spent"`
	Limit string `json:"limit"`
	Next  string `json:"next"`
	// Agent and Window name an agent budget's bound (its store's agent,
	// WindowDaily or WindowTotal): a raise raises the agent's bound in its
	// store. Both empty: the turn's own budget.
	Agent  string `json:"agent,omitempty"`
	Window string `json:"window,omitempty"`
	// Store is the agent budget's store (its workflow id).
	Store string `json:"store,omitempty"`
}

// Bound is the bound r names, without an agent budget's "agent LABEL
// WINDOW " prefix: tokens, input_tokens, output_tokens, cost,
// tool_calls, tool_calls:TOOL or time.
func (r BudgetRequest) Bound() string {
	if r.Window == "" {
		return r.Kind
	}
	return r.Kind[strings.LastIndexByte(r.Kind, ' ')+1:]
}

// LimitAgain is the raise the inbox and Slack offer for r: its bound's
// limit once more (cost 5 reached: cost +5; tool_calls:Bash 50 reached:
// Bash +50). It reports false when r's bound or limit does not read as
// a positive amount.
func (r BudgetRequest) LimitAgain() (Budget, bool) {
	var b Budget
	bound := r.Bound()
	count := func() (int64, bool) {
		n, err := strconv.ParseInt(r.Limit, 10, 64)
		return n, err == nil && n > 0
	}
	var ok bool
	switch {
	case bound == "cost":
		c, err := strconv.ParseFloat(r.Limit, 64)
		b.Cost, ok = c, err == nil && c > 0
	case bound == "time":
		d, err := time.ParseDuration(r.Limit)
		b.Time, ok = d, err == nil && d > 0
	case bound == "tokens":
		b.Tokens, ok = count()
	case bound == "input_tokens":
		b.InputTokens, ok = count()
	case bound == "output_tokens":
		b.OutputTokens, ok = count()
	case bound == "tool_calls":
		var n int64
		n, ok = count()
		b.ToolCalls = int(n)
	case strings.HasPrefix(bound, "tool_calls:") && len(bound) > len("tool_calls:"):
		var n int64
		n, ok = count()
		b.PerTool = map[string]int{strings.TrimPrefix(bound, "tool_calls:"): int(n)}
	}
	if !ok {
		return Budget{}, false
	}
	return b, true
}

// RaiseText writes b as a raise is written (the CLI's --raise, the
// inbox's POST /api/budget): "cost=+2,tokens=+1000,Bash=+50,time=+1h0m0s".
func (b Budget) RaiseText() string { return b.Join("=+", ",") }

// BudgetTool names budget approvals (Pending.Tool): an approver whose
// roles include a "Budget" rule may answer them.
const BudgetTool = "Budget"

// budget returns the turn's budget: its input's, raised by the answers.
func (t *turn) budget() Budget {
	var b Budget
	if t.in.Budget != nil {
		b = *t.in.Budget
	}
	if t.BudgetRaised != nil {
		b = b.Plus(*t.BudgetRaised)
	}
	return b
}

// reached is the first bound the turn has reached, or would pass with
// calls (nil: a model call), as a request ("" kind: none). Bounds are
// read in a fixed order.
func (t *turn) reached(now time.Time, calls []model.ToolCall) BudgetRequest {
	b := t.budget()
	u := t.Usage
	next := "call the model"
	if calls != nil {
		names := make([]string, len(calls))
		for i, c := range calls {
			names[i] = c.Name
		}
		next = fmt.Sprintf("run %d tool call(s): %s", len(calls), strings.Join(names, ", "))
	}
	r := func(kind, spent, limit string) BudgetRequest {
		return BudgetRequest{Kind: kind, Spent: spent, Limit: limit, Next: next}
	}
	if b.Time > 0 && !t.StartedAt.IsZero() && now.Sub(t.StartedAt) >= b.Time {
		return r("time", now.Sub(t.StartedAt).Round(time.Second).String(), b.Time.String())
	}
	if b.Cost > 0 && u.CostOr0() >= b.Cost {
		return r("cost", model.FormatCost(u.CostOr0()), fmt.Sprint(b.Cost))
	}
	for _, k := range []struct {
		kind  string
		spent int64
		limit int64
	}{{"tokens", int64(u.Total()), b.Tokens}, {"input_tokens", int64(u.Input()), b.InputTokens}, {"output_tokens", int64(u.OutputTokens), b.OutputTokens}} {
		if k.limit > 0 && k.spent >= k.limit {
			return r(k.kind, fmt.Sprint(k.spent), fmt.Sprint(k.limit))
		}
	}
	if calls == nil {
		return BudgetRequest{}
	}
	if b.ToolCalls > 0 && t.ToolCalls+len(calls) > b.ToolCalls {
		return r("tool_calls", fmt.Sprint(t.ToolCalls), fmt.Sprint(b.ToolCalls))
	}
	for _, name := range sortedKeys(b.PerTool) {
		n := 0
		for _, c := range calls {
			if c.Name == name {
				n++
			}
		}
		if lim := b.PerTool[name]; n > 0 && t.ToolsRun[name]+n > lim {
			return r("tool_calls:"+name, fmt.Sprint(t.ToolsRun[name]), fmt.Sprint(lim))
		}
	}
	return BudgetRequest{}
}

// errBudgetDenied ends a turn whose budget approval was denied (or timed
// out): the turn finishes with Stopped "budget" and the reason.
type errBudgetDenied struct{ reason string }

func (e errBudgetDenied) Error() string { return e.reason }

// checkBudget holds the turn before a model call (calls nil) or the tool
// calls of a step while a bound is reached: it parks on a budget
// approval until an answer raises the budget past what it was about to
// do, and returns errBudgetDenied when one ends the turn. Turns without
// a budget never get here (no marker, no command).
func (t *turn) checkBudget(ctx workflow.Context, calls []model.ToolCall) error {
	if t.in.Budget.IsZero() || workflow.GetVersion(ctx, versionBudgets, workflow.DefaultVersion, 1) < 1 {
		return nil
	}
	if t.StartedAt.IsZero() {
		t.StartedAt = workflow.Now(ctx)
	}
	for {
		now := workflow.Now(ctx)
		req := t.reached(now, calls)
		if req.Kind == "" {
			t.warnBudget(ctx, now)
			return nil
		}
		a, err := t.parkBudget(ctx, req, now)
		if err != nil {
			return err
		}
		if a.Decision == DecisionDeny || a.Raise.IsZero() {
			return budgetDenied(req, a)
		}
		raised := Budget{}
		if t.BudgetRaised != nil {
			raised = *t.BudgetRaised
		}
		raised = raised.Plus(*a.Raise)
		t.BudgetRaised = &raised
		t.emit(ctx, Event{Type: EventBudget, Text: "budget raised by " + a.Raise.String() + ": now " + t.budget().String()})
	}
}

// parkBudget waits durably for the answer to a budget approval (its
// deadline and escalation are those of any approval, deny by default),
// and records the answer for the audit (runs since versionAuditNotes):
// the raise, by whom and via what, or the denial with its reason.
func (t *turn) parkBudget(ctx workflow.Context, req BudgetRequest, now time.Time) (Approval, error) {
	t.BudgetParks++
	in, _ := json.Marshal(req)
	p := Pending{Kind: PendingBudget, CallID: fmt.Sprintf("budget_%d", t.BudgetParks), Tool: BudgetTool, Input: in,
		Message: fmt.Sprintf("budget %s reached: %s of %s spent; the turn was about to %s. Raise the budget to go on, or deny to end the turn.",
			req.Kind, req.Spent, req.Limit, req.Next),
		Reason: "budget " + req.Kind, Notify: true}
	// A budget approval has no call whose policy says whether chat is
	// on: it is posted always, and the chat activity posts it where the
	// worker has chat configured (as the notify activity sends its
	// webhooks where webhooks are).
	p.ChatOn = workflow.GetVersion(ctx, versionChatBudget, workflow.DefaultVersion, 1) >= 1
	timeout := t.in.ApprovalTimeout
	if timeout == 0 {
		timeout = DefaultApprovalTimeout
	}
	t.park(ctx, p, now, timeout)
	t.upsertPending(ctx)
	for {
		if a, ok := t.answers[p.CallID]; ok && a.Approval != nil {
			// The wait is traced as an approval's is (no command: the
			// span is emitted outside the history).
			if q, ok := t.findPending(p.CallID); ok {
				approvalSpan(ctx, q, a, false)
				answerMetric(ctx, q, a, false)
			}
			t.pending = slices.DeleteFunc(t.pending, func(q Pending) bool { return q.CallID == p.CallID })
			delete(t.answers, p.CallID)
			t.upsertPending(ctx)
			ap := *a.Approval
			note := BudgetNote{CallID: p.CallID, Request: req, Decision: ap.Decision, By: ap.By, Via: ap.Via, Reason: ap.Reason}
			if ap.Decision != DecisionDeny && !ap.Raise.IsZero() {
				note.Raise = ap.Raise
			}
			return ap, recordNote(ctx, AuditNote{Budget: &note})
		}
		now := workflow.Now(ctx)
		next, err := t.escalateDue(ctx, t.open(), now)
		if err != nil {
			return Approval{}, err
		}
		if _, ok := t.answers[p.CallID]; ok {
			continue
		}
		if err := t.awaitChange(ctx, len(t.open()), now, next, false); err != nil {
			return Approval{}, err
		}
	}
}

// warnBudget says once per bound when the turn has spent Warn of it.
func (t *turn) warnBudget(ctx workflow.Context, now time.Time) {
	b := t.budget()
	if b.Warn <= 0 {
		return
	}
	u := t.Usage
	for _, k := range []struct {
		kind         string
		spent, limit float64
	}{
		{"time", float64(now.Sub(t.StartedAt)), float64(b.Time)},
		{"cost", u.CostOr0(), b.Cost},
		{"tokens", float64(u.Total()), float64(b.Tokens)},
		{"input_tokens", float64(u.Input()), float64(b.InputTokens)},
		{"output_tokens", float64(u.OutputTokens), float64(b.OutputTokens)},
		{"tool_calls", float64(t.ToolCalls), float64(b.ToolCalls)},
	} {
		key := fmt.Sprintf("%s@%g", k.kind, k.limit)
		if k.limit <= 0 || k.spent < b.Warn*k.limit || slices.Contains(t.BudgetWarned, key) {
			continue
		}
		t.BudgetWarned = append(t.BudgetWarned, key)
		text := fmt.Sprintf("budget %s at %.0f%% (%s)", k.kind, 100*k.spent/k.limit, t.budget().String())
		t.emit(ctx, Event{Type: EventBudget, Text: "warning: " + text})
		in, _ := json.Marshal(BudgetRequest{Kind: k.kind, Spent: fmt.Sprint(k.spent), Limit: fmt.Sprint(k.limit)})
		t.notify(ctx, NotifyBudgetWarning, Pending{Kind: PendingBudget, CallID: "budget_warning_" + key, Tool: BudgetTool,
			Input: in, Message: text, Reason: "budget warning", RequestedAt: now, Notify: true})
	}
}

// countTools adds calls to the per-tool counts the budget reads.
func (t *turn) countTools(calls []model.ToolCall) {
	if t.in.Budget == nil || len(t.in.Budget.PerTool) == 0 {
		return
	}
	if t.ToolsRun == nil {
		t.ToolsRun = map[string]int{}
	}
	for _, c := range calls {
		t.ToolsRun[c.Name]++
	}
}
