package workflows

import (
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/model"
)

func cost(c float64) model.Usage { return model.Usage{InputTokens: 1000, Cost: &c} }

type storeResult struct {
	Kinds []string         `json:"kinds"`
	State AgentBudgetState `json:"state"`
}

// storeSteps drives a budget store's handlers in a workflow (they read
// the workflow clock) and returns the verdicts' kinds and the state.
func storeSteps(ctx workflow.Context) (storeResult, error) {
	s := &AgentBudgetState{}
	var kinds []string
	ask := func(c BudgetCharge) {
		v, _ := s.charge(ctx, c)
		kinds = append(kinds, v.Request.Kind+"/"+v.Request.Window)
	}
	_, _ = s.set(ctx, BudgetSet{Agent: "ops", Window: WindowDaily, Budget: &Budget{Cost: 3, ToolCalls: 2}})
	ask(BudgetCharge{Turn: "a", Seq: 1, Usage: cost(2)})                  // 2 of 3: go on
	ask(BudgetCharge{Turn: "a", Seq: 1, Usage: cost(2)})                  // a retry: charged once
	ask(BudgetCharge{Turn: "b", Seq: 1, Calls: []string{"Bash", "Bash"}}) // 2 tool calls fit
	ask(BudgetCharge{Turn: "b", Seq: 2, Calls: []string{"Bash"}})         // a third does not
	ask(BudgetCharge{Turn: "b", Seq: 3, Usage: cost(1.5)})                // 3.5 of 3: reached
	_, _ = s.raise(ctx, BudgetRaise{Window: WindowDaily, Raise: Budget{Cost: 1}, Key: "b/1"})
	_, _ = s.raise(ctx, BudgetRaise{Window: WindowDaily, Raise: Budget{Cost: 1}, Key: "b/1"}) // raised once
	ask(BudgetCharge{Turn: "b", Seq: 4})                                                      // 3.5 of 4: go on
	ask(BudgetCharge{Turn: "a", Seq: 2, Usage: cost(1), Final: true})                         // charged, nothing asked
	if err := workflow.Sleep(ctx, 25*time.Hour); err != nil {
		return storeResult{}, err
	}
	ask(BudgetCharge{Turn: "c", Seq: 1, Calls: []string{"Bash"}}) // a new day
	return storeResult{kinds, *s}, nil
}

// TestBudgetStoreCharges: the store charges each turn and sequence once,
// lets tool calls through while they fit, answers with the bound reached,
// applies a raise once per key to today's bound, and starts a new window
// each UTC day while the total keeps counting.
func TestBudgetStoreCharges(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.SetStartTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	env.ExecuteWorkflow(storeSteps)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res storeResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	kinds, st := res.Kinds, res.State
	want := []string{"/", "/", "/", "tool_calls/daily", "cost/daily", "/", "/", "/"}
	if len(kinds) != len(want) {
		t.Fatalf("verdicts %q, want %q", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("verdict %d: %q, want %q (all: %q)", i, kinds[i], want[i], kinds)
		}
	}
	if st.Day != "2026-12-03" || st.Today.ToolCalls != 1 || st.Today.Usage.CostOr0() != 0 || st.DailyRaised != nil {
		t.Errorf("the new day's window: %+v", st)
	}
	if st.All.Usage.CostOr0() != 4.5 || st.All.ToolCalls != 3 || st.All.PerTool["Bash"] != 3 {
		t.Errorf("the total: %+v", st.All)
	}
	if _, ok := st.Seen["a"]; ok {
		t.Error("a finished turn's charges are still kept")
	}
}
