package workflows

// The inline-conversation path: runs recorded before versionContentRefs
// (turn.byRef unset) replay here. They keep the whole conversation in
// msgs and send it with every model call (ActivityModel), keep the
// model's reply in msgs (takeReply), send tools the whole tool state and
// get their results inline (toolInput), stop at legacyMaxIterations by
// default (maxIterations) and end a failed turn without its failure
// event (fail). New runs never take this path; it stays for as long as
// such runs may be in flight or in a recorded history.

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/model"
)

// callModelInline is callModel for an inline conversation: the request
// carries every message; the activity fills in the offered tools' specs.
func (t *turn) callModelInline(ctx workflow.Context) (model.Message, error) {
	req := model.Request{Instruction: t.Instruction, Messages: t.msgs, Script: t.in.Model.Script}
	var resp model.Response
	err := workflow.ExecuteActivity(ctx, ActivityModel, ModelInput{Provider: t.in.Model.Provider, Model: t.in.Model.Name, Request: req, Tools: t.Tools}).Get(ctx, &resp)
	if err != nil {
		return model.Message{}, fmt.Errorf("model call: %w", err)
	}
	t.used(ctx, resp.Usage)
	return model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls}, nil
}
