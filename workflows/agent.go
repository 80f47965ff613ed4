package workflows

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/model"
)

// AgentMiddleware hooks into an agent turn, after Eino's
// ChatModelAgentMiddleware. Its hooks run in the turn's workflow code, so
// they must be deterministic: no I/O, no wall clock, no goroutines (use
// workflow.ExecuteActivity / ExecuteLocalActivity for side effects). What
// they change is workflow state and so survives crashes and replays.
//
// Order: the first registered middleware is the outermost. BeforeAgent
// and BeforeModelRewriteState run first to last; AfterModelRewriteState
// runs last to first; AfterAgent runs first to last and stops at the
// first error (fail-fast), which fails the turn.
//
// Wrappers of I/O run in activities instead: a middleware that also has a
// WrapModel(model.Model) model.Model method wraps the model call inside
// the model activity (retry, failover, response transforms), and one with
// a WrapTool(middleware.Handler) middleware.Handler method wraps tool
// calls inside the tool activity; warden.Register installs both, in the
// same order (warden.ModelWrapper and warden.ToolWrapper name them: assert
// them at compile time). Embed BaseAgentMiddleware to implement only what you need.
type AgentMiddleware interface {
	// BeforeAgent runs once per turn before the first model call; it may
	// change the instruction, the tools offered and return-directly tools.
	BeforeAgent(ctx workflow.Context, ac *AgentContext) error
	// BeforeModelRewriteState runs before each model call. The state it
	// leaves (messages, tools) is what the model sees and what persists.
	BeforeModelRewriteState(ctx workflow.Context, st *AgentState) error
	// AfterModelRewriteState runs after each model call; the model's
	// response is the last message of st.Messages.
	AfterModelRewriteState(ctx workflow.Context, st *AgentState) error
	// AfterAgent runs when the turn ends successfully (a final answer or a
	// return-directly tool's result), not on errors or the iteration bound.
	AfterAgent(ctx workflow.Context, st *AgentState) error
}

// AgentContext is what BeforeAgent may change.
type AgentContext struct {
	Instruction string
	// Tools offered to the model (tool names; empty means all).
	Tools []string
	// ReturnDirectly names tools whose result ends the turn as its answer.
	ReturnDirectly []string
}

// AgentState is the turn's persisted conversation state.
//
// Turns keep their conversation in the content store: Messages then holds
// the messages not yet sent to the model (the prompt, the last step's tool
// results, as previews with references), and the model's reply in
// AfterModelRewriteState. Earlier messages are stored and reach the model
// by reference; a middleware that adds a message before a model call
// appends it here. Large contents are previews (Message.Ref is set).
type AgentState struct {
	Messages []model.Message
	// Tools offered to the model for the next call (empty means all).
	Tools []string
}

// BaseAgentMiddleware implements every hook as a no-op.
type BaseAgentMiddleware struct{}

// BeforeAgent implements AgentMiddleware.
func (BaseAgentMiddleware) BeforeAgent(workflow.Context, *AgentContext) error { return nil }

// BeforeModelRewriteState implements AgentMiddleware.
func (BaseAgentMiddleware) BeforeModelRewriteState(workflow.Context, *AgentState) error { return nil }

// AfterModelRewriteState implements AgentMiddleware.
func (BaseAgentMiddleware) AfterModelRewriteState(workflow.Context, *AgentState) error { return nil }

// AfterAgent implements AgentMiddleware.
func (BaseAgentMiddleware) AfterAgent(workflow.Context, *AgentState) error { return nil }

// Workflow is the agent-turn workflow as a worker registers it (its Run
// method, under TurnWorkflow).
type Workflow struct {
	// Roles checks approvers' roles against the calls they answer
	// (roles.Checker). Without it, answers by approvers with roles are
	// refused; a worker must register the turn with the same checker as
	// the workers that recorded its history, or replays may differ.
	Roles RoleChecker
	// Middleware are the agent middlewares, first registered outermost.
	Middleware []AgentMiddleware
}

// Run is the agent-turn workflow.
func (w Workflow) Run(ctx workflow.Context, in TurnInput) (TurnResult, error) {
	return run(ctx, in, w.Middleware, w.Roles)
}

// New returns the agent-turn workflow with the role checker rc and the
// given middlewares, to be registered under TurnWorkflow: the Run method
// of Workflow{Roles: rc, Middleware: mws}.
func New(rc RoleChecker, mws ...AgentMiddleware) func(workflow.Context, TurnInput) (TurnResult, error) {
	return Workflow{Roles: rc, Middleware: mws}.Run
}

type turnKey struct{}

func current(ctx workflow.Context) (*turn, error) {
	t, ok := ctx.Value(turnKey{}).(*turn)
	if !ok {
		return nil, errors.New("not inside an agent turn")
	}
	return t, nil
}

// SetRunLocalValue stores a value for the rest of the turn: it persists in
// workflow state and across continue-as-new. The value must encode to JSON.
func SetRunLocalValue(ctx workflow.Context, key string, v any) error {
	t, err := current(ctx)
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("run-local value %q: %w", key, err)
	}
	if t.local == nil {
		t.local = map[string]json.RawMessage{}
	}
	t.local[key] = data
	return nil
}

// GetRunLocalValue decodes the value stored under key into out and reports
// whether there was one.
func GetRunLocalValue(ctx workflow.Context, key string, out any) (bool, error) {
	t, err := current(ctx)
	if err != nil {
		return false, err
	}
	data, ok := t.local[key]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return true, fmt.Errorf("run-local value %q: %w", key, err)
	}
	return true, nil
}

// DeleteRunLocalValue removes the value stored under key.
func DeleteRunLocalValue(ctx workflow.Context, key string) error {
	t, err := current(ctx)
	if err != nil {
		return err
	}
	delete(t.local, key)
	return nil
}

// SendEvent appends a custom event to the turn's event stream (what
// QueryEvents and `starter run` show).
func SendEvent(ctx workflow.Context, typ, text string) error {
	t, err := current(ctx)
	if err != nil {
		return err
	}
	if typ == "" {
		typ = EventCustom
	}
	t.emit(ctx, Event{Type: typ, Text: text})
	return nil
}
