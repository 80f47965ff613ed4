package workflows_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/workflows"
)

// usageStep is a scripted step that reports input and output tokens.
func usageStep(text string, in, out int, calls ...model.ScriptedCall) model.Step {
	s := step(text, calls...)
	s.Usage = &model.Usage{InputTokens: in, OutputTokens: out}
	return s
}

// TestTurnBudgetCost: a priced model call that spends the cost bound
// parks the turn before the calls it asked for; a deny by signal ends
// the turn with the reason and the calls never run.
func TestTurnBudgetCost(t *testing.T) {
	h := newHarness(t)
	h.prepare = allowAll
	h.prices = map[string]model.Price{"scripted": {Input: 1, Output: 10}}
	in := turnInput(usageStep("", 1000, 0, call("Bash", map[string]any{"command": "ls"})), step("done"))
	in.Budget = &workflows.Budget{Cost: 0.001}
	h.env.RegisterDelayedCallback(func() {
		ps := h.pending()
		if len(ps) != 1 || ps[0].Kind != workflows.PendingBudget || !strings.Contains(ps[0].Message, "budget cost reached: 0.001000 of 0.001") {
			t.Errorf("pending %+v", ps)
			return
		}
		h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{CallID: ps[0].CallID, Hash: ps[0].Hash,
			Decision: workflows.DecisionDeny, Reason: "over the month's money", By: "owner"})
	}, time.Minute)
	res := h.run(in)
	if res.Stopped != "budget" || !strings.Contains(res.StopReason, "over the month's money") || !strings.Contains(res.StopReason, "cost") {
		t.Errorf("result: stopped %q, %q", res.Stopped, res.StopReason)
	}
	if n := len(h.toolCalls()); n != 0 {
		t.Errorf("%d tool calls ran past the budget", n)
	}
}

// TestTurnBudgetTime: the time bound counts the turn's wall-clock time,
// waits included: after a two-hour approval, the next model call parks;
// a raise by signal lets the turn answer. Control: the same turn with a
// day's budget never parks.
func TestTurnBudgetTime(t *testing.T) {
	for _, limit := range []time.Duration{time.Hour, 24 * time.Hour} {
		h := newHarness(t)
		h.prepare = askAll
		in := turnInput(step("", call("Bash", map[string]any{"command": "make"})), step("done"))
		in.Budget = &workflows.Budget{Time: limit}
		h.env.RegisterDelayedCallback(func() {
			h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionAllow, By: "bob"})
		}, 2*time.Hour)
		parked := false
		h.env.RegisterDelayedCallback(func() {
			for _, p := range h.pending() {
				if p.Kind == workflows.PendingBudget {
					parked = true
					h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{CallID: p.CallID, Hash: p.Hash,
						Decision: workflows.DecisionAllow, By: "owner", Raise: &workflows.Budget{Time: 24 * time.Hour}})
				}
			}
		}, 3*time.Hour)
		res := h.run(in)
		if res.Answer != "done" || parked != (limit == time.Hour) {
			t.Errorf("limit %v: answer %q, parked %v", limit, res.Answer, parked)
		}
		if limit == time.Hour && len(eventsOfType(h.events(), workflows.EventBudget)) == 0 {
			t.Errorf("no budget event for the raise")
		}
	}
}

// TestTurnBudgetPerToolAndWarning: a per-tool bound parks a step whose
// calls would pass it; half the tool-call bound warns (an event and a
// budget_warning notification) without stopping.
func TestTurnBudgetPerToolAndWarning(t *testing.T) {
	h := newHarness(t)
	h.prepare = allowAll
	in := turnInput(step("", call("Read", map[string]any{"file_path": "/a"}), call("Read", map[string]any{"file_path": "/b"})),
		step("", call("Bash", map[string]any{"command": "one"}), call("Bash", map[string]any{"command": "two"})), step("done"))
	in.Budget = &workflows.Budget{ToolCalls: 4, PerTool: map[string]int{"Bash": 1}, Warn: 0.5}
	h.env.RegisterDelayedCallback(func() {
		ps := h.pending()
		if len(ps) != 1 || !strings.Contains(ps[0].Message, "budget tool_calls:Bash reached: 0 of 1") {
			t.Errorf("pending %+v", ps)
			return
		}
		h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{CallID: ps[0].CallID, Hash: ps[0].Hash,
			Decision: workflows.DecisionDeny, Reason: "no shell today", By: "owner"})
	}, time.Minute)
	res := h.run(in)
	if res.Stopped != "budget" || len(h.toolCalls()) != 2 {
		t.Errorf("stopped %q after %d tool calls", res.Stopped, len(h.toolCalls()))
	}
	warned := false
	for _, e := range eventsOfType(h.events(), workflows.EventBudget) {
		warned = warned || strings.HasPrefix(e.Text, "warning: budget tool_calls at 50%")
	}
	notified := false
	for _, n := range h.notifyCalls() {
		notified = notified || n.Type == workflows.NotifyBudgetWarning
	}
	if !warned || !notified {
		t.Errorf("warning event %v, notification %v", warned, notified)
	}
}

// BenchmarkTurnBudget runs a 20-step turn (one tool call a step) on the
// test environment without a budget and with one that bounds every kind
// but is never reached: the difference is the budget's accounting per
// step (ns/step is reported; compare the two in the same run).
func BenchmarkTurnBudget(b *testing.B) {
	steps := make([]model.Step, 0, 21)
	for range 20 {
		steps = append(steps, usageStep("", 100, 10, call("Read", map[string]any{"file_path": "/a"})))
	}
	steps = append(steps, step("done"))
	for _, c := range []struct {
		name   string
		budget *workflows.Budget
	}{
		{"off", nil},
		{"on", &workflows.Budget{Tokens: 1 << 40, InputTokens: 1 << 40, OutputTokens: 1 << 40, Cost: 1e9, ToolCalls: 1 << 30,
			PerTool: map[string]int{"Read": 1 << 30, "Bash": 1 << 30, "Write": 1 << 30}, Time: 1000 * time.Hour, Warn: 0.99}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				h := newHarness(b)
				h.prepare = allowAll
				in := turnInput(steps...)
				in.Budget = c.budget
				if res := h.run(in); res.Answer != "done" {
					b.Fatalf("answer %q", res.Answer)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/21, "ns/step")
		})
	}
}

// TestTurnBudgetAcrossContinueAsNew: a turn's budget keeps counting in
// its next run: the tokens of the first run (200 of 250) and the time
// since its first check are carried, so the next run's model call that
// brings the tokens to 300 parks on tokens, and a next run started four
// hours later (past the 3-hour bound) parks on time before any model
// call.
func TestTurnBudgetAcrossContinueAsNew(t *testing.T) {
	start := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	h := newHarness(t)
	h.env.SetStartTime(start)
	h.prepare = askAll
	in := turnInput(usageStep("", 200, 0, call("Bash", map[string]any{"command": "a"})),
		usageStep("", 100, 0, call("Bash", map[string]any{"command": "b"})), step("done"))
	in.Budget = &workflows.Budget{Tokens: 250, Time: 3 * time.Hour}
	in.ContinueAsNewAfter = 100
	h.env.RegisterDelayedCallback(func() {
		atNextTask(h, 150)
		h.update("a", workflows.Approval{CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionAllow, By: "alice"})
	}, time.Minute)
	h.env.ExecuteWorkflow(workflows.TurnWorkflow, in)
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	var next workflows.TurnInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Resume == nil || next.Resume.Usage.Total() != 200 || !next.Resume.StartedAt.Equal(start) {
		t.Fatalf("carried %+v", next.Resume)
	}
	for _, c := range []struct {
		after time.Duration
		want  string
	}{{2 * time.Minute, "budget tokens reached: 300 of 250"}, {4 * time.Hour, "budget time reached: 4h0m0s of 3h0m0s"}} {
		h2 := newHarness(t)
		h2.content = h.content
		h2.prepare = allowAll
		h2.env.SetStartTime(start.Add(c.after))
		var parked string
		h2.env.RegisterDelayedCallback(func() {
			for _, p := range h2.pending() {
				if p.Kind == workflows.PendingBudget {
					parked = p.Message
					h2.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{CallID: p.CallID, Hash: p.Hash,
						Decision: workflows.DecisionDeny, Reason: "stop", By: "owner"})
				}
			}
		}, time.Minute)
		res := h2.run(next)
		if !strings.Contains(parked, c.want) || res.Stopped != "budget" {
			t.Errorf("next run %v later: parked %q, stopped %q", c.after, parked, res.Stopped)
		}
	}
}

// TestTurnBudgetPostedToChatAndWebhooks: a budget approval is posted to
// chat like any approval (the entry, chat on) and announced by an
// approval_requested webhook; a raise by signal updates that message
// with who answered and the raise, and the approval_answered webhook
// carries the raise too.
func TestTurnBudgetPostedToChatAndWebhooks(t *testing.T) {
	h := newHarness(t)
	h.prepare = allowAll
	h.chatRefs = []workflows.ChatRef{{Channel: "C0OPS", TS: "1.000001"}}
	in := turnInput(usageStep("", 1000, 200, call("Bash", map[string]any{"command": "ls"})), step("done"))
	in.Budget = &workflows.Budget{Tokens: 1000}
	h.env.RegisterDelayedCallback(func() {
		ps := h.pending()
		if len(ps) != 1 || ps[0].Kind != workflows.PendingBudget {
			t.Errorf("pending %+v", ps)
			return
		}
		h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{CallID: ps[0].CallID, Hash: ps[0].Hash,
			Decision: workflows.DecisionAllow, By: "bob", Raise: &workflows.Budget{Tokens: 1000}})
	}, time.Minute)
	if res := h.run(in); res.Answer != "done" {
		t.Fatalf("answer %q, stopped %q %s", res.Answer, res.Stopped, res.StopReason)
	}
	posts, updates := h.chatCalls()
	if len(posts) != 1 || posts[0].Pending.CallID != "budget_1" || posts[0].Pending.Kind != workflows.PendingBudget || !posts[0].Pending.ChatOn {
		t.Fatalf("chat posts %+v, want the budget entry", posts)
	}
	if len(updates) != 1 || updates[0].Answer == nil || updates[0].Answer.By != "bob" || updates[0].Answer.Raise == nil ||
		updates[0].Answer.Raise.Tokens != 1000 || len(updates[0].Refs) != 1 || updates[0].Refs[0].Channel != "C0OPS" {
		t.Fatalf("chat updates %+v, want the message updated with bob's raise", updates)
	}
	var requested, answered bool
	for _, n := range h.notifyCalls() {
		if n.Pending.CallID != "budget_1" {
			continue
		}
		switch n.Type {
		case workflows.NotifyApprovalRequested:
			requested = n.Pending.Kind == workflows.PendingBudget
		case workflows.NotifyApprovalAnswered:
			answered = n.Answer != nil && n.Answer.Raise != nil && n.Answer.Raise.Tokens == 1000 && n.Answer.Decision == "allow"
		}
	}
	if !requested || !answered {
		t.Errorf("webhooks: requested %v, answered with the raise %v: %+v", requested, answered, h.notifyCalls())
	}
}

// TestBudgetLimitAgain: the raise offered for a budget approval is its
// bound's limit once more, for the turn's bounds and an agent's; a
// limit that does not read offers none. RaiseText writes a raise as
// --raise reads it.
func TestBudgetLimitAgain(t *testing.T) {
	cases := []struct {
		req  workflows.BudgetRequest
		want string
	}{
		{workflows.BudgetRequest{Kind: "cost", Spent: "5.01", Limit: "5"}, "cost=+5"},
		{workflows.BudgetRequest{Kind: "tokens", Spent: "1200", Limit: "1000"}, "tokens=+1000"},
		{workflows.BudgetRequest{Kind: "input_tokens", Limit: "10"}, "input_tokens=+10"},
		{workflows.BudgetRequest{Kind: "output_tokens", Limit: "20"}, "output_tokens=+20"},
		{workflows.BudgetRequest{Kind: "tool_calls", Limit: "3"}, "tool_calls=+3"},
		{workflows.BudgetRequest{Kind: "tool_calls:Bash", Limit: "50"}, "Bash=+50"},
		{workflows.BudgetRequest{Kind: "time", Limit: "8h0m0s"}, "time=+8h0m0s"},
		{workflows.BudgetRequest{Kind: "agent ops daily cost", Limit: "2.5", Agent: "ops", Window: workflows.WindowDaily}, "cost=+2.5"},
		{workflows.BudgetRequest{Kind: "cost", Limit: "lots"}, ""},
		{workflows.BudgetRequest{Kind: "tokens", Limit: "0"}, ""},
		{workflows.BudgetRequest{Kind: "weather", Limit: "1"}, ""},
	}
	for _, c := range cases {
		b, ok := c.req.LimitAgain()
		if got := b.RaiseText(); got != c.want || ok != (c.want != "") {
			t.Errorf("LimitAgain(%+v) = %q, %v; want %q", c.req, got, ok, c.want)
		}
	}
}
