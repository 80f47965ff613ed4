package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/model"
)

// An agent's budget across its turns is kept by one long-lived workflow
// per agent (BudgetStoreWorkflow, id AgentBudgetStore(agent)): its
// bounds per UTC day and in total, and what the agent's turns spent in
// today's window and in all. A turn that charges the store
// (TurnInput.AgentBudget) reports its usage and asks it, through the
// ActivityBudgetCharge activity (an Update, serialized in the store),
// before every model call and before the tool calls of a step; the
// store answers with the bound reached, if any. Two concurrent turns of
// one agent may each pass the bound by at most the step it did not
// foresee: the usage of the model call that started under it.

// Names of the budget store's workflow, handlers and activities.
const (
	// BudgetStoreWorkflow is the budget store's workflow type.
	BudgetStoreWorkflow = "WardenBudget"
	// BudgetStorePrefix prefixes a budget store's workflow id; the
	// agent's name follows it.
	BudgetStorePrefix = "warden-budget-"
	// NamespaceBudgetStore is the store of turns without an agent label
	// (the namespace's).
	NamespaceBudgetStore = "warden-budget"
	// QueryBudget returns the store's AgentBudgetState.
	QueryBudget = "budget"
	// UpdateBudgetSet sets or clears a window's bound (a BudgetSet).
	UpdateBudgetSet = "set-budget"
	// UpdateBudgetCharge charges a turn's usage and asks whether the
	// bounds cover its next step (a BudgetCharge, answered with a
	// BudgetVerdict).
	UpdateBudgetCharge = "charge"
	// UpdateBudgetRaise raises a window's bound (a BudgetRaise): an
	// approver's answer to an agent budget approval.
	UpdateBudgetRaise = "raise"
	// ActivityBudgetCharge runs UpdateBudgetCharge for a turn.
	ActivityBudgetCharge = "warden.BudgetCharge"
	// ActivityBudgetRaise runs UpdateBudgetRaise for a turn.
	ActivityBudgetRaise = "warden.BudgetRaise"
)

// The windows of an agent budget.
const (
	// WindowDaily is the UTC day (00:00 to 24:00 UTC).
	WindowDaily = "daily"
	// WindowTotal is every turn of the agent, ever.
	WindowTotal = "total"
)

// AgentBudgetStore is the workflow id of agent's budget store
// (NamespaceBudgetStore for "", the turns without an agent label).
func AgentBudgetStore(agent string) string {
	if agent == "" {
		return NamespaceBudgetStore
	}
	return BudgetStorePrefix + agent
}

// Spend is what an agent's turns spent in a window: model usage, and
// tool calls in all and per tool.
type Spend struct {
	Usage     model.Usage    `json:"usage,omitzero"`
	ToolCalls int            `json:"tool_calls,omitempty"`
	PerTool   map[string]int `json:"per_tool,omitempty"`
}

// AgentBudgetState is the budget store's state (QueryBudget) and what it
// carries across continue-as-new.
type AgentBudgetState struct {
	Agent string `json:"agent"`
	// Daily and Total are the bounds (nil: none). Time bounds nothing
	// here: an agent's turns run side by side.
	Daily *Budget `json:"daily,omitempty"`
	Total *Budget `json:"total,omitempty"`
	// DailyRaised is what answers raised today's bound by (it ends with
	// the day).
	DailyRaised *Budget `json:"daily_raised,omitempty"`
	// Day is today's window ("2026-12-02", UTC); Today its spend, All
	// the spend of every window.
	Day   string `json:"day"`
	Today Spend  `json:"today,omitzero"`
	All   Spend  `json:"all,omitzero"`
	// SetBy and SetAt say who set the bounds last, and when.
	SetBy string    `json:"set_by,omitempty"`
	SetAt time.Time `json:"set_at,omitzero"`
	// Seen is, per turn (workflow id), its last charge: a retried charge
	// returns the same verdict and charges nothing again.
	Seen map[string]SeenCharge `json:"seen,omitempty"`
	// Windows are the calls the agent's turns counted against window
	// limits of the agent scope (UpdateWindowReserve), pruned as they
	// leave their window.
	Windows []WindowUse `json:"windows,omitempty"`
	// Raises are the keys of the last raises applied (a retried raise
	// raises once).
	Raises []string `json:"raises,omitempty"`
}

// SeenCharge is a turn's last charge and its verdict.
type SeenCharge struct {
	Seq     int           `json:"seq"`
	At      time.Time     `json:"at"`
	Verdict BudgetVerdict `json:"verdict,omitzero"`
}

// BudgetSet is UpdateBudgetSet's argument: Window's bound becomes
// Budget (nil clears it).
type BudgetSet struct {
	Agent  string  `json:"agent"`
	Window string  `json:"window"`
	Budget *Budget `json:"budget,omitempty"`
	By     string  `json:"by,omitempty"`
}

// BudgetCharge is UpdateBudgetCharge's argument (and
// ActivityBudgetCharge's input): the turn's usage since its last charge,
// and its next step (Calls: the tool names of the step's calls; none: a
// model call). Seq numbers the turn's charges; Final charges the turn's
// last usage and asks nothing.
type BudgetCharge struct {
	Store string      `json:"store"`
	Turn  string      `json:"turn"`
	Seq   int         `json:"seq"`
	Usage model.Usage `json:"usage,omitzero"`
	Calls []string    `json:"calls,omitempty"`
	Final bool        `json:"final,omitempty"`
}

// BudgetVerdict is a charge's answer: the bound reached (Request.Kind
// "": none, the step may go on; its tool calls were charged).
type BudgetVerdict struct {
	Request BudgetRequest `json:"request,omitzero"`
}

// BudgetRaise is UpdateBudgetRaise's argument (and ActivityBudgetRaise's
// input): Window's bound of Store raised by Raise (today's only, for
// WindowDaily). Key (turn/call id) makes a retried raise raise once.
type BudgetRaise struct {
	Store  string `json:"store"`
	Window string `json:"window"`
	Raise  Budget `json:"raise"`
	By     string `json:"by,omitempty"`
	Key    string `json:"key"`
}

// budgetHistoryBound continues the budget store as new past this many
// events; seenKeep drops the charges of turns silent for longer.
const (
	budgetHistoryBound = 5000
	seenKeep           = 30 * 24 * time.Hour
	raisesKeep         = 200
)

// BudgetStore is the budget store's workflow: it keeps an agent's bounds
// and spend and answers the charges of its turns one at a time.
func BudgetStore(ctx workflow.Context, st AgentBudgetState) error {
	s := &st
	if err := s.registerHandlers(ctx); err != nil {
		return err
	}
	if err := workflow.Await(ctx, func() bool { return s.long(ctx) }); err != nil {
		return fmt.Errorf("budget store: %w", err)
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return fmt.Errorf("budget store: %w", err)
	}
	s.prune(workflow.Now(ctx))
	return workflow.NewContinueAsNewError(ctx, BudgetStoreWorkflow, *s)
}

func (s *AgentBudgetState) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryBudget, func() (AgentBudgetState, error) { return *s, nil }); err != nil {
		return fmt.Errorf("budget query: %w", err)
	}
	for _, h := range []struct {
		name    string
		handler any
		valid   any
	}{
		{UpdateBudgetSet, s.set, validateBudgetSet},
		{UpdateBudgetCharge, s.charge, nil},
		{UpdateBudgetRaise, s.raise, validateBudgetRaise},
		{UpdateWindowReserve, s.reserveWindow, validateWindowReserve},
	} {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, h.name, h.handler, workflow.UpdateHandlerOptions{Validator: h.valid}); err != nil {
			return fmt.Errorf("budget update %s: %w", h.name, err)
		}
	}
	return nil
}

func (s *AgentBudgetState) long(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= budgetHistoryBound
}

// validateBudgetSet accepts a known window, and a bound without time.
func validateBudgetSet(b BudgetSet) error {
	if b.Window != WindowDaily && b.Window != WindowTotal {
		return fmt.Errorf("budget window %q: want %s or %s", b.Window, WindowDaily, WindowTotal)
	}
	if b.Budget != nil && b.Budget.Time != 0 {
		return errors.New("an agent budget bounds no time (its turns run side by side): set time per turn")
	}
	return nil
}

func validateBudgetRaise(r BudgetRaise) error {
	if r.Window != WindowDaily && r.Window != WindowTotal {
		return fmt.Errorf("budget window %q: want %s or %s", r.Window, WindowDaily, WindowTotal)
	}
	if r.Raise.IsZero() {
		return errors.New("a raise raises something")
	}
	return r.Raise.checkRaise()
}

// roll starts today's window when the day (UTC) changed.
func (s *AgentBudgetState) roll(now time.Time) {
	day := now.UTC().Format(time.DateOnly)
	if s.Day != day {
		s.Day, s.Today, s.DailyRaised = day, Spend{}, nil
	}
}

// set is UpdateBudgetSet.
func (s *AgentBudgetState) set(ctx workflow.Context, b BudgetSet) (AgentBudgetState, error) {
	now := workflow.Now(ctx)
	s.roll(now)
	if b.Agent != "" {
		s.Agent = b.Agent
	}
	var nb *Budget
	if !b.Budget.IsZero() {
		c := *b.Budget
		nb = &c
	}
	if b.Window == WindowDaily {
		s.Daily, s.DailyRaised = nb, nil
	} else {
		s.Total = nb
	}
	s.SetBy, s.SetAt = b.By, now
	return *s, nil
}

// raise is UpdateBudgetRaise.
func (s *AgentBudgetState) raise(ctx workflow.Context, r BudgetRaise) (AgentBudgetState, error) {
	s.roll(workflow.Now(ctx))
	for _, k := range s.Raises {
		if k == r.Key && r.Key != "" {
			return *s, nil
		}
	}
	if s.Raises = append(s.Raises, r.Key); len(s.Raises) > raisesKeep {
		s.Raises = s.Raises[len(s.Raises)-raisesKeep:]
	}
	if r.Window == WindowDaily {
		raised := Budget{}
		if s.DailyRaised != nil {
			raised = *s.DailyRaised
		}
		raised = raised.Plus(r.Raise)
		s.DailyRaised = &raised
		return *s, nil
	}
	total := Budget{}
	if s.Total != nil {
		total = *s.Total
	}
	total = total.Plus(r.Raise)
	s.Total = &total
	return *s, nil
}

// DailyBound is today's bound: Daily raised by today's answers (nil:
// none).
func (s AgentBudgetState) DailyBound() *Budget {
	if s.Daily == nil {
		return nil
	}
	b := *s.Daily
	if s.DailyRaised != nil {
		b = b.Plus(*s.DailyRaised)
	}
	return &b
}

// charge is UpdateBudgetCharge: the usage is added to both windows once
// per turn and sequence; then the bounds are read against the next step,
// whose tool calls are charged when they fit.
func (s *AgentBudgetState) charge(ctx workflow.Context, c BudgetCharge) (BudgetVerdict, error) {
	now := workflow.Now(ctx)
	s.roll(now)
	if s.Seen == nil {
		s.Seen = map[string]SeenCharge{}
	}
	if seen, ok := s.Seen[c.Turn]; ok && c.Seq <= seen.Seq {
		return seen.Verdict, nil
	}
	s.Today.Usage, s.All.Usage = s.Today.Usage.Add(c.Usage), s.All.Usage.Add(c.Usage)
	var v BudgetVerdict
	if !c.Final {
		v = s.verdict(c.Calls)
	}
	if v.Request.Kind == "" && len(c.Calls) > 0 {
		s.Today.addCalls(c.Calls)
		s.All.addCalls(c.Calls)
	}
	s.Seen[c.Turn] = SeenCharge{Seq: c.Seq, At: now, Verdict: v}
	if c.Final {
		delete(s.Seen, c.Turn)
	}
	return v, nil
}

// verdict is the first bound (daily, then total) the next step would
// reach.
func (s *AgentBudgetState) verdict(calls []string) BudgetVerdict {
	for _, w := range []struct {
		name  string
		bound *Budget
		spent Spend
	}{{WindowDaily, s.DailyBound(), s.Today}, {WindowTotal, s.Total, s.All}} {
		if w.bound == nil {
			continue
		}
		if kind, spent, limit := w.spent.reached(*w.bound, calls); kind != "" {
			return BudgetVerdict{Request: BudgetRequest{Kind: kind, Spent: spent, Limit: limit, Next: nextStep(calls),
				Agent: s.Agent, Window: w.name}}
		}
	}
	return BudgetVerdict{}
}

// nextStep says what a step is about to do (calls nil: a model call).
func nextStep(calls []string) string {
	if len(calls) == 0 {
		return "call the model"
	}
	return fmt.Sprintf("run %d tool call(s): %s", len(calls), strings.Join(calls, ", "))
}

// reached is the first bound of b that sp has reached, or that calls
// would pass ("" kind: none).
func (sp Spend) reached(b Budget, calls []string) (kind, spent, limit string) {
	u := sp.Usage
	if b.Cost > 0 && u.CostOr0() >= b.Cost {
		return "cost", model.FormatCost(u.CostOr0()), fmt.Sprint(b.Cost)
	}
	for _, k := range []struct {
		kind         string
		spent, limit int64
	}{{"tokens", int64(u.Total()), b.Tokens}, {"input_tokens", int64(u.Input()), b.InputTokens}, {"output_tokens", int64(u.OutputTokens), b.OutputTokens}} {
		if k.limit > 0 && k.spent >= k.limit {
			return k.kind, fmt.Sprint(k.spent), fmt.Sprint(k.limit)
		}
	}
	if len(calls) == 0 {
		return "", "", ""
	}
	if b.ToolCalls > 0 && sp.ToolCalls+len(calls) > b.ToolCalls {
		return "tool_calls", fmt.Sprint(sp.ToolCalls), fmt.Sprint(b.ToolCalls)
	}
	for _, name := range sortedKeys(b.PerTool) {
		n := 0
		for _, c := range calls {
			if c == name {
				n++
			}
		}
		if lim := b.PerTool[name]; n > 0 && sp.PerTool[name]+n > lim {
			return "tool_calls:" + name, fmt.Sprint(sp.PerTool[name]), fmt.Sprint(lim)
		}
	}
	return "", "", ""
}

func (sp *Spend) addCalls(calls []string) {
	sp.ToolCalls += len(calls)
	if sp.PerTool == nil {
		sp.PerTool = map[string]int{}
	}
	for _, c := range calls {
		sp.PerTool[c]++
	}
}

// prune drops the charges of turns silent for seenKeep.
func (s *AgentBudgetState) prune(now time.Time) {
	for _, k := range sortedKeys(s.Seen) {
		if now.Sub(s.Seen[k].At) > seenKeep {
			delete(s.Seen, k)
		}
	}
}

// At is the state as it reads at now: today's window empty when the day
// (UTC) changed since the last charge.
func (s AgentBudgetState) At(now time.Time) AgentBudgetState {
	s.roll(now)
	return s
}

// Used is the largest share (0.5: half) of b's bounds that sp spent; 0
// without bounds.
func (sp Spend) Used(b *Budget) float64 {
	if b == nil {
		return 0
	}
	u := sp.Usage
	used := 0.0
	share := func(spent, limit float64) {
		if limit > 0 && spent/limit > used {
			used = spent / limit
		}
	}
	share(u.CostOr0(), b.Cost)
	share(float64(u.Total()), float64(b.Tokens))
	share(float64(u.Input()), float64(b.InputTokens))
	share(float64(u.OutputTokens), float64(b.OutputTokens))
	share(float64(sp.ToolCalls), float64(b.ToolCalls))
	for _, k := range sortedKeys(b.PerTool) {
		share(float64(sp.PerTool[k]), float64(b.PerTool[k]))
	}
	return used
}

// String reads "cost 0.42, 12000 tokens, 30 tool calls".
func (sp Spend) String() string {
	parts := []string{}
	if sp.Usage.Cost != nil {
		parts = append(parts, "cost "+model.FormatCost(sp.Usage.CostOr0()))
	}
	parts = append(parts, fmt.Sprintf("%d tokens (%d in, %d out)", sp.Usage.Total(), sp.Usage.Input(), sp.Usage.OutputTokens))
	parts = append(parts, fmt.Sprintf("%d tool calls", sp.ToolCalls))
	return strings.Join(parts, ", ")
}
