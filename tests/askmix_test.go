package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// TestAskUserAndApprovalInOneStep: an AskUser question and a permission
// ASK wait in the same step; answering one leaves the other waiting, and
// the turn goes on once both are answered.
func TestAskUserAndApprovalInOneStep(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, `
steps:
  - tool_calls:
      - id: q1
        name: AskUser
        input:
          questions:
            - question: "Which environment?"
              header: "Env"
              options: [{label: staging, description: "safe"}, {label: prod, description: "careful"}]
      - {id: x1, name: Bash, input: {command: "touch mixed"}}
  - text: both answered
`)
	id := "askmix-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 2)
	if _, err := cl.AnswerAskUser(ctx, id, "q1", tools.AskUserAnswer{Answers: []tools.AskUserQuestionAnswer{{Question: "Which environment?", Selected: []string{"staging"}}}}, "carol"); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	if ps[0].CallID != "x1" {
		t.Fatalf("still pending = %+v", ps)
	}
	if _, err := cl.AnswerAskUser(ctx, id, "q1", tools.AskUserAnswer{Answers: []tools.AskUserQuestionAnswer{{Question: "Which environment?", Selected: []string{"prod"}}}}, "carol"); err == nil {
		t.Error("a second answer to the same question was accepted")
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "x1", Decision: workflows.DecisionAllow, Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != 2 || rs[0].IsError || rs[1].IsError {
		t.Fatalf("results = %+v", rs)
	}
}
