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
// window before the model sees it (see activities/compact). It returns
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
	m, err := a.stepModel(in.Provider)
	if err != nil {
		return out, err
	}
	stop := a.heartbeat(ctx, nil)
	defer stop()
	st := &step{a: a, turn: activity.GetInfo(ctx).WorkflowExecution.ID, head: in.Conversation, pending: in.Append}
	req, err := st.request(ctx, in)
	if err != nil {
		return out, err
	}
	if c := a.Compactors[in.Provider]; c != nil {
		if req, out.Compaction, err = st.compact(ctx, c, m, req); err != nil {
			return out, err
		}
	}
	mctx, end := a.modelSpan(ctx, in.Provider, in.Model)
	start := time.Now()
	resp, err := m.Generate(mctx, req)
	resp.Usage = a.price(in.Provider, in.Model, resp.Usage)
	a.ModelMetrics.Observe(in.Provider, in.Model, time.Since(start), resp.Usage, err)
	end(resp, err)
	if err != nil {
		return out, err
	}
	if err := a.checkCallInputs(resp.ToolCalls); err != nil {
		return out, err
	}
	if out.Conversation, out.Message, err = st.store(ctx, resp); err != nil {
		return out, err
	}
	out.Usage = resp.Usage
	return out, nil
}

// stepModel is the provider's model, wrapped by the model wrappers
// (the first outermost).
func (a *Activities) stepModel(provider string) (model.Model, error) {
	m, ok := a.Models[provider]
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("unknown model provider %q", provider), workflows.ErrTypeUnknownModel, nil)
	}
	for i := len(a.ModelWrappers) - 1; i >= 0; i-- {
		m = a.ModelWrappers[i](m)
	}
	return m, nil
}

// step is one model step's conversation: the stored head, the messages
// added since (as the workflow sent them and resolved), stored together
// with the reply, in one node, once the model has answered.
type step struct {
	a        *Activities
	turn     string
	head     string
	pending  []model.Message
	resolved []model.Message
}

// request is what the model sees: the stored conversation plus the
// added messages, resolved, and the turn's tools.
func (st *step) request(ctx context.Context, in workflows.ModelStepInput) (model.Request, error) {
	msgs, err := st.a.Content.Load(ctx, st.turn, st.head)
	if err != nil {
		return model.Request{}, contentError(err)
	}
	base := len(msgs)
	for _, m := range in.Append {
		r, err := st.a.Content.Resolve(ctx, st.turn, m)
		if err != nil {
			return model.Request{}, contentError(err)
		}
		msgs = append(msgs, r)
	}
	st.resolved = msgs[base:]
	req := model.Request{Instruction: in.Instruction, Messages: msgs, Script: in.Script}
	for _, info := range st.a.Tools.Infos(in.Tools...) {
		req.Tools = append(req.Tools, model.ToolSpec{Name: info.Name, Description: info.Description, InputSchema: info.InputSchema})
	}
	return req, nil
}

// compact lets c shrink the request. A compacted conversation (the added
// messages included) is stored as a new root naming the head it
// replaced, and nothing is pending any more.
func (st *step) compact(ctx context.Context, c Compactor, m model.Model, req model.Request) (model.Request, *model.Compaction, error) {
	cm, info, err := c.Compact(ctx, m, req)
	if err != nil {
		return req, nil, fmt.Errorf("compact conversation: %w", err)
	}
	if info == nil {
		return req, nil, nil
	}
	info.From = st.head
	if st.head, err = st.a.Content.Root(ctx, st.turn, st.head, cm, info); err != nil {
		return req, nil, contentError(err)
	}
	req.Messages, st.pending, st.resolved = cm, nil, nil
	return req, info, nil
}

// store externalizes the reply and stores the added messages and the
// reply as one node; their resolved forms extend the cache without
// reading them back. It returns the new head and the reply as recorded.
func (st *step) store(ctx context.Context, resp model.Response) (string, model.Message, error) {
	reply := model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls}
	msg, err := st.a.Content.Externalize(ctx, st.turn, reply)
	if err != nil {
		return "", msg, contentError(err)
	}
	head, err := st.a.Content.AppendResolved(ctx, st.turn, st.head, append(slices.Clip(st.pending), msg),
		append(slices.Clip(st.resolved), reply))
	if err != nil {
		return "", msg, contentError(err)
	}
	return head, msg, nil
}

// checkCallInputs refuses a reply with a tool call whose input is over
// content.max_call_input_bytes: the turn could not record it.
func (a *Activities) checkCallInputs(calls []model.ToolCall) error {
	limit := a.MaxCallInputBytes
	if limit <= 0 {
		limit = DefaultMaxCallInputBytes
	}
	for _, c := range calls {
		if len(c.Input) > limit {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"the model asked for %s (call %s) with an input of %d bytes, over the limit of %d bytes for a tool call's input (content.max_call_input_bytes); the turn cannot record it",
				c.Name, c.ID, len(c.Input), limit), ErrTypeContentTooLarge, nil)
		}
	}
	return nil
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
