package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// tracer is an agent middleware that records every hook as a custom event
// and counts model calls in a run-local value.
type tracer struct {
	workflows.BaseAgentMiddleware
	name string
}

func (m tracer) BeforeAgent(ctx workflow.Context, ac *workflows.AgentContext) error {
	if m.name == "A" {
		ac.Instruction = "rewritten by A"
		ac.Tools = []string{"Bash", "TaskCreate"} // offer only these
		ac.ReturnDirectly = []string{"TaskCreate"}
	}
	return workflows.SendEvent(ctx, "trace", m.name+".before_agent")
}

func (m tracer) BeforeModelRewriteState(ctx workflow.Context, st *workflows.AgentState) error {
	var n int
	if _, err := workflows.GetRunLocalValue(ctx, m.name+".calls", &n); err != nil {
		return err
	}
	if err := workflows.SetRunLocalValue(ctx, m.name+".calls", n+1); err != nil {
		return err
	}
	return workflows.SendEvent(ctx, "trace", m.name+".before_model")
}

func (m tracer) AfterModelRewriteState(ctx workflow.Context, st *workflows.AgentState) error {
	return workflows.SendEvent(ctx, "trace", m.name+".after_model")
}

func (m tracer) AfterAgent(ctx workflow.Context, st *workflows.AgentState) error {
	var n int
	if _, err := workflows.GetRunLocalValue(ctx, m.name+".calls", &n); err != nil {
		return err
	}
	return workflows.SendEvent(ctx, "trace", fmt.Sprintf("%s.after_agent calls=%d", m.name, n))
}

// The tracer is both kinds of wrapper; a wrong signature would not compile.
var (
	_ warden.ToolWrapper  = tracer{}
	_ warden.ModelWrapper = tracer{}
)

// WrapTool wraps tool calls inside the tool activity.
func (m tracer) WrapTool(next middleware.Handler) middleware.Handler {
	return middleware.MapChunks(func(_ middleware.Call, ch tools.Chunk) tools.Chunk {
		ch.Text = m.name + "(" + strings.TrimSpace(ch.Text) + ")"
		return ch
	})(next)
}

// WrapModel wraps the model call inside the model activity.
func (m tracer) WrapModel(next model.Model) model.Model { return wrapped{next, m.name} }

type wrapped struct {
	model.Model
	name string
}

func (w wrapped) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	if req.Instruction != "rewritten by A" {
		return model.Response{}, fmt.Errorf("instruction not rewritten: %q", req.Instruction)
	}
	if len(req.Tools) != 2 {
		return model.Response{}, fmt.Errorf("tools offered = %d, want 2", len(req.Tools))
	}
	resp, err := w.Model.Generate(ctx, req)
	resp.Text = w.name + "[" + resp.Text + "]"
	return resp, err
}

func TestAgentMiddlewareOrderAndState(t *testing.T) {
	cl := startWorker(t, warden.Options{AgentMiddleware: []workflows.AgentMiddleware{tracer{name: "A"}, tracer{name: "B"}}})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, `
steps:
  - tool_calls: [{name: Bash, input: {command: "echo hi"}}]
  - tool_calls: [{name: TaskCreate, input: {subject: "ship it", description: "d"}}]
  - text: "never reached: TaskCreate returns directly"
`)
	id := "agent-mw-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// Tool wrappers: first registered is outermost.
	rs := toolResults(res)
	if len(rs) != 2 || rs[0].Content != "A(B(hi))" {
		t.Fatalf("tool results = %+v", rs)
	}
	// TaskCreate is return-directly: its result is the answer.
	if !strings.Contains(res.Answer, "ship it") || res.Iterations != 2 {
		t.Errorf("answer = %q after %d iterations", res.Answer, res.Iterations)
	}
	// Model wrappers: A outermost.
	if m := conversation(res)[0]; m.Role != model.RoleAssistant || m.Content != "A[B[]]" {
		t.Errorf("assistant message = %+v", m)
	}
	page, err := cl.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var trace []string
	for _, e := range page.Events {
		if e.Type == "trace" {
			trace = append(trace, e.Text)
		}
	}
	want := []string{
		"A.before_agent", "B.before_agent",
		"A.before_model", "B.before_model", "B.after_model", "A.after_model",
		"A.before_model", "B.before_model", "B.after_model", "A.after_model",
		"A.after_agent calls=2", "B.after_agent calls=2",
	}
	if !slices.Equal(trace, want) {
		t.Errorf("hook order:\n got %v\nwant %v", trace, want)
	}
}

// TestContinueAsNewWithPendingApproval bounds the history so the turn
// continues as new while a call waits for approval; the approval reaches
// the new run and the turn completes with the whole conversation.
func TestContinueAsNewWithPendingApproval(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, `
steps:
  - tool_calls:
      - {name: Bash, input: {command: "echo one"}}
      - {name: Bash, input: {command: "echo two"}}
      - {name: TaskCreate, input: {subject: "carried task", description: "d"}}
  - tool_calls: [{id: w1, name: Bash, input: {command: "touch after-can"}}]
  - text: done across runs
`)
	id := "can-" + fmt.Sprint(time.Now().UnixNano())
	run, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission:         permission.Context{Allow: []permission.Rule{{Tool: "TaskCreate", Behavior: permission.Allow}}},
		ContinueAsNewAfter: 15})
	if err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	desc, err := env.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	if desc.GetWorkflowExecutionInfo().GetExecution().GetRunId() == run.GetRunID() {
		t.Fatal("the turn did not continue as new")
	}
	// The signal goes to the new run; so does a cross-workflow listing.
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: ps[0].CallID, Decision: workflows.DecisionAllow, Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "done across runs" || res.Iterations != 3 || res.ToolCalls != 4 {
		t.Fatalf("result = %+v", res)
	}
	if len(res.State.Tasks) != 1 || res.State.Tasks[0].Subject != "carried task" {
		t.Errorf("task list not carried: %+v", res.State.Tasks)
	}
	var users int
	for _, m := range conversation(res) {
		if m.Role == model.RoleTool {
			users++
		}
	}
	if users != 4 {
		b, _ := json.Marshal(conversation(res))
		t.Errorf("tool messages = %d, want 4: %s", users, b)
	}
}
