package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// Error types of the by-reference model call and tool results. Neither is
// retried: retrying cannot make missing content appear or a reply smaller.
const (
	ErrTypeContentMissing  = "ContentMissing"
	ErrTypeContentTooLarge = "ContentTooLarge"
	ErrTypeNoContentStore  = "NoContentStore"
)

// Content limits (defaults of Activities' fields).
const (
	// DefaultMaxResultBytes bounds one tool result kept in the store.
	DefaultMaxResultBytes = 4 << 20
	// DefaultMaxCallInputBytes bounds one tool call's input in a model
	// reply (tool inputs enter history in full).
	DefaultMaxCallInputBytes = 256 << 10
)

// Compactor shrinks a conversation that outgrew the model's context
// window before the model sees it (see middleware/compact). It returns
// nil when nothing was done.
type Compactor interface {
	Compact(ctx context.Context, m model.Model, req model.Request) ([]model.Message, *model.Compaction, error)
}

// ModelStep is the model call of a turn that keeps its conversation in
// the content store. It stores the messages added since the turn's head,
// loads the conversation (from its cache when it can), compacts it when
// the provider has a compactor and it outgrew the window, calls the
// model, stores the reply and returns the new head. Everything it returns
// is stored before it returns.
func (a *Activities) ModelStep(ctx context.Context, in workflows.ModelStepInput) (workflows.ModelStepOutput, error) {
	var out workflows.ModelStepOutput
	if a.Content == nil {
		return out, temporal.NewNonRetryableApplicationError("this worker has no content store configured", ErrTypeNoContentStore, nil)
	}
	m, ok := a.Models[in.Provider]
	if !ok {
		return out, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("unknown model provider %q", in.Provider), workflows.ErrTypeUnknownModel, nil)
	}
	for i := len(a.ModelWrappers) - 1; i >= 0; i-- {
		m = a.ModelWrappers[i](m)
	}
	turn := activity.GetInfo(ctx).WorkflowExecution.ID
	stop := a.heartbeat(ctx, nil)
	defer stop()

	// The conversation the model sees: the stored one plus the messages
	// added since, resolved. They are stored together with the reply, in
	// one node, once the model has answered.
	head := in.Conversation
	msgs, err := a.Content.Load(ctx, turn, head)
	if err != nil {
		return out, contentError(err)
	}
	pending := in.Append
	base := len(msgs)
	for _, m := range in.Append {
		r, err := a.Content.Resolve(ctx, turn, m)
		if err != nil {
			return out, contentError(err)
		}
		msgs = append(msgs, r)
	}
	resolved := msgs[base:]
	req := model.Request{Instruction: in.Instruction, Messages: msgs, Script: in.Script}
	for _, info := range a.Tools.Infos(in.Tools...) {
		req.Tools = append(req.Tools, model.ToolSpec{Name: info.Name, Description: info.Description, InputSchema: info.InputSchema})
	}
	if c := a.Compactors[in.Provider]; c != nil {
		cm, info, err := c.Compact(ctx, m, req)
		if err != nil {
			return out, fmt.Errorf("compact conversation: %w", err)
		}
		if info != nil {
			// The compacted conversation (the added messages included) is a
			// new root naming the stored head it replaced.
			info.From = head
			if head, err = a.Content.Root(ctx, turn, head, cm, info); err != nil {
				return out, contentError(err)
			}
			req.Messages, out.Compaction, pending, resolved = cm, info, nil, nil
		}
	}
	start := time.Now()
	resp, err := m.Generate(ctx, req)
	a.ModelMetrics.Observe(in.Provider, in.Model, time.Since(start), resp.Usage.InputTokens, resp.Usage.OutputTokens, err)
	if err != nil {
		return out, err
	}
	limit := a.MaxCallInputBytes
	if limit <= 0 {
		limit = DefaultMaxCallInputBytes
	}
	for _, c := range resp.ToolCalls {
		if len(c.Input) > limit {
			return out, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"the model asked for %s (call %s) with an input of %d bytes, over the limit of %d bytes for a tool call's input (content.max_call_input_bytes); the turn cannot record it",
				c.Name, c.ID, len(c.Input), limit), ErrTypeContentTooLarge, nil)
		}
	}
	reply := model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls}
	msg, err := a.Content.Externalize(ctx, turn, reply)
	if err != nil {
		return out, contentError(err)
	}
	// The added messages and the reply are stored as one node; their
	// resolved forms extend the cache without reading them back.
	head, err = a.Content.AppendResolved(ctx, turn, head, append(slices.Clip(pending), msg),
		append(slices.Clip(resolved), reply))
	if err != nil {
		return out, contentError(err)
	}
	out.Conversation, out.Message, out.Usage = head, msg, resp.Usage
	return out, nil
}

// contentError makes missing content a non-retryable failure that says
// what is missing; other store errors are retried by the RetryPolicy.
func contentError(err error) error {
	var me *content.MissingError
	if errors.As(err, &me) {
		return temporal.NewNonRetryableApplicationError(me.Error(), ErrTypeContentMissing, err)
	}
	return err
}

// storeResult keeps a tool result's content in the content store and
// leaves a preview with a reference. A result over the limit is not kept:
// the call becomes a tool error saying so, with the output's start.
func (a *Activities) storeResult(ctx context.Context, turn string, r tools.Result) (tools.Result, error) {
	if a.Content == nil {
		return r, temporal.NewNonRetryableApplicationError("this worker has no content store configured", ErrTypeNoContentStore, nil)
	}
	limit := a.MaxResultBytes
	if limit <= 0 {
		limit = DefaultMaxResultBytes
	}
	if n := len(r.Content); n > limit {
		r.Content = fmt.Sprintf("Tool result too large: %d bytes, over the limit of %d bytes for one result (content.max_result_bytes). "+
			"The output was not kept. Narrow the command (for example with head, tail, grep or a line range). It began with:\n%s",
			n, limit, content.Preview(r.Content))
		r.IsError, r.State = true, tools.StateError
		return r, nil
	}
	m, err := a.Content.Externalize(ctx, turn, model.Message{Content: r.Content})
	if err != nil {
		return r, err
	}
	r.Content, r.Ref, r.Size = m.Content, m.Ref, m.Size
	return r, nil
}
