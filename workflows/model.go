package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/model"
)

// callModel runs one model call and returns the assistant message. A
// by-reference turn sends its stored conversation's head and the
// messages added since; the activity stores the reply and returns the
// new head.
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
	if t.byRef {
		in := ModelStepInput{Provider: t.in.Model.Provider, Model: t.in.Model.Name, Tools: t.Tools,
			Instruction: t.Instruction, Conversation: t.Conversation, Append: t.msgs}
		if sc := t.in.Model.Script; sc != nil && len(sc.Steps) > 0 {
			st := sc.StepAt(t.Iterations - 1)
			in.Script = &model.Script{Current: &st}
		}
		var out ModelStepOutput
		f := func() workflow.Future {
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
		}()
		if err := f.Get(ctx, &out); err != nil {
			return model.Message{}, fmt.Errorf("model call: %w", err)
		}
		t.Conversation, t.msgs = out.Conversation, nil
		if c := out.Compaction; c != nil {
			t.emit(ctx, Event{Type: EventCompacted, Text: fmt.Sprintf("context compacted (%s): %d → %d messages, ~%d → ~%d tokens; the original is kept as %s",
				c.Strategy, c.MessagesBefore, c.MessagesAfter, c.TokensBefore, c.TokensAfter, c.From)})
		}
		out.Message.Role = model.RoleAssistant
		return out.Message, nil
	}
	// The activity fills in the specs of the offered tools.
	req := model.Request{Instruction: t.Instruction, Messages: t.msgs, Script: t.in.Model.Script}
	var resp model.Response
	err := workflow.ExecuteActivity(ctx, ActivityModel, ModelInput{Provider: t.in.Model.Provider, Model: t.in.Model.Name, Request: req, Tools: t.Tools}).Get(ctx, &resp)
	if err != nil {
		return model.Message{}, fmt.Errorf("model call: %w", err)
	}
	return model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls}, nil
}
