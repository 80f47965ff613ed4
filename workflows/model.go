package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/model"
)

// modelStep calls the model between the middlewares' hooks and returns
// its reply (the last message AfterModelRewriteState leaves). A failed
// model call fails the turn (see fail); an error ends the run as it is.
func (t *turn) modelStep(ctx workflow.Context, mws []AgentMiddleware) (model.Message, error) {
	st := AgentState{Messages: t.msgs, Tools: t.Tools}
	for _, m := range mws {
		if err := m.BeforeModelRewriteState(ctx, &st); err != nil {
			return model.Message{}, fmt.Errorf("before model: %w", err)
		}
	}
	t.msgs, t.Tools = st.Messages, st.Tools
	asst, err := t.callModel(ctx)
	if err != nil {
		return model.Message{}, t.fail(ctx, err)
	}
	st = AgentState{Messages: append(t.msgs, asst), Tools: t.Tools}
	for i := len(mws) - 1; i >= 0; i-- {
		if err := mws[i].AfterModelRewriteState(ctx, &st); err != nil {
			return model.Message{}, fmt.Errorf("after model: %w", err)
		}
	}
	t.msgs, t.Tools = st.Messages, st.Tools
	return t.takeReply(), nil
}

// takeReply returns the model's reply, the conversation's last message,
// and takes it off msgs: the content store holds it with the
// conversation already (an inline conversation keeps it, see legacy.go).
func (t *turn) takeReply() model.Message {
	n := len(t.msgs)
	if n == 0 {
		return model.Message{}
	}
	last := t.msgs[n-1]
	if t.byRef {
		t.msgs = t.msgs[:n-1]
	}
	return last
}

// callModel runs one model call and returns the assistant message. The
// turn sends its stored conversation's head and the messages added
// since; the activity stores the reply and returns the new head.
func (t *turn) callModel(ctx workflow.Context) (model.Message, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		// The model activity heartbeats, so a call lost with its worker is
		// retried after seconds, not after the 5-minute timeout.
		HeartbeatTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 5,
			NonRetryableErrorTypes: []string{ErrTypeUnknownModel},
		},
	})
	if !t.byRef {
		return t.callModelInline(ctx)
	}
	var out ModelStepOutput
	if err := t.startModelStep(ctx, t.modelStepInput()).Get(ctx, &out); err != nil {
		return model.Message{}, fmt.Errorf("model call: %w", err)
	}
	t.Conversation, t.msgs = out.Conversation, nil
	t.used(ctx, out.Usage)
	if c := out.Compaction; c != nil {
		t.emit(ctx, Event{Type: EventCompacted, Text: fmt.Sprintf("context compacted (%s): %d → %d messages, ~%d → ~%d tokens; the original is kept as %s",
			c.Strategy, c.MessagesBefore, c.MessagesAfter, c.TokensBefore, c.TokensAfter, c.From)})
	}
	out.Message.Role = model.RoleAssistant
	return out.Message, nil
}

// modelStepInput is the model step's input: the stored conversation's
// head, the messages added since, and a scripted model's current step.
func (t *turn) modelStepInput() ModelStepInput {
	in := ModelStepInput{Provider: t.in.Model.Provider, Model: t.in.Model.Name, Tools: t.Tools,
		Instruction: t.Instruction, Conversation: t.Conversation, Append: t.msgs}
	if sc := t.in.Model.Script; sc != nil && len(sc.Steps) > 0 {
		st := sc.StepAt(t.Iterations - 1)
		in.Script = &model.Script{Current: &st}
	}
	return in
}

// startModelStep schedules the model step: a regular activity, or for
// ModelConfig.Local a local activity, except every localModelRun-th step
// (and in runs recorded before versionLocalScriptedModel).
func (t *turn) startModelStep(ctx workflow.Context, in ModelStepInput) workflow.Future {
	if !t.in.Model.Local || t.Iterations%localModelRun == 0 ||
		workflow.GetVersion(ctx, versionLocalScriptedModel, workflow.DefaultVersion, 1) < 1 {
		return workflow.ExecuteActivity(ctx, ActivityModelStep, in)
	}
	// ModelConfig.Local: an instant model (scripted) answers from
	// the worker's memory; a local activity saves the step two
	// history transactions (the activity's schedule and
	// completion) and a workflow task.
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 5,
			NonRetryableErrorTypes: []string{ErrTypeUnknownModel}},
	}), ActivityModelStep, in)
}

// used adds one model call's usage to the turn's, with an event that
// says what the call and the turn used (a provider that reports nothing
// adds none).
func (t *turn) used(ctx workflow.Context, u model.Usage) {
	if u.Total() == 0 && u.Cost == nil {
		return
	}
	t.Usage = t.Usage.Add(u)
	t.emit(ctx, Event{Type: EventUsage, Text: "model call: " + u.String() + "; turn: " + t.Usage.String()})
}
