package workflows

// The agent-turn workflow, by concern:
//
//   - turn.go: the turn's state, run and its loop (model step, tool
//     calls, until an answer or the iteration bound).
//   - model.go: calling the model (the middlewares' hooks around it).
//   - step.go: the tool calls of one model step: prepare (validation and
//     permission check), then wait and execute.
//   - classify.go: a prepared call becomes a result, a pending entry or a
//     call ready to run.
//   - wait.go: parking calls, the durable wait for answers, deadlines and
//     escalation, rechecking waiting calls, applying answers and edits.
//   - execute.go: running ready calls as (local) activities, retries,
//     merging the tool state they return.
//   - notify.go: webhook notifications and waiting for their delivery.
//   - hash.go: the hashes that bind an answer to the call it answers.
//   - events.go: the turn's bounded event stream.
//   - handlers.go: queries, updates and signals, and checking answers.
//   - live.go: following a policy store; remembered approvals.
//   - pending.go: the pending index (memo) and search attributes.
//   - continue.go: continue-as-new and the carried state.
//   - agent.go: the workflow as registered, agent middlewares, run-local
//     values.
//   - authz.go: who may answer which call (Approvers).
//   - policy.go: the policy store workflow (live rules, remembered
//     approvals).
//   - types.go: the names and wire types clients use.
//   - versions.go: the change IDs and bounds replay depends on.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// turn is the workflow's state. Everything in it is deterministic: the
// slices keep call order and maps are only used for lookups.
//
// What a turn carries into its next run at continue-as-new is its
// carried state: the embedded Resume (counters, agent context, events,
// the conversation's head; Resume.Step is built from pending, answers and
// inFlight only when continuing), and msgs, state, perm and local, which
// travel in TurnInput. carry and restore are the only copy code, and
// the TestCarriedState tests fail when a field of turn is neither carried nor
// listed as run-local.
type turn struct {
	// Resume is the carried state that travels in TurnInput.Resume; a
	// field added to Resume is carried with no further code.
	Resume
	in      TurnInput
	msgs    []model.Message
	state   calls.State
	perm    permission.Context
	pending []Pending
	answers map[string]AnswerState
	recheck bool
	done    bool
	// local holds run-local values (JSON), carried across continue-as-new.
	local map[string]json.RawMessage
	// inFlight is the model step in flight, kept for continue-as-new.
	inFlight []*slot
	// approvalsCh and externalsCh are the signal channels, drained before
	// continuing as new so no answer is lost.
	approvalsCh, externalsCh workflow.ReceiveChannel
	// byRef is set for runs that keep the conversation in the content
	// store: Conversation names the stored conversation and msgs holds
	// only the messages added since (sent with the next model call).
	byRef bool
	// index is the pending index last written to the memo (JSON).
	index string
	// roles checks approvers' roles (the registered Workflow's).
	roles RoleChecker
	// notes are the notifications this run started; those in flight
	// when it continues as new are carried as Resume.Notifying.
	notes []notification
	// settled is set once the run waited for its notifications.
	settled bool
	// policyCh is the policy store's signal channel (SignalPolicyChanged).
	policyCh workflow.ReceiveChannel
	// wfid is the turn's workflow id (the validator has no context).
	wfid string
}

// run is the agent-turn workflow: model → permission check → tools →
// model, until the model answers without tool calls, a return-directly
// tool answers, or MaxIterations. Long turns continue as new, carrying
// their whole state (pending approvals included).
func run(ctx workflow.Context, in TurnInput, mws []AgentMiddleware, rc RoleChecker) (TurnResult, error) {
	t := restore(in)
	t.roles = rc
	t.wfid = workflow.GetInfo(ctx).WorkflowExecution.ID
	ctx = workflow.WithValue(ctx, turnKey{}, t)
	res, err := t.loop(ctx, mws)
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		// However the turn ends, its notifications in flight get their
		// chance to be delivered (a continue-as-new carries them instead).
		t.settleNotifications(ctx)
	}
	return res, err
}

// loop is the turn's body (see run).
func (t *turn) loop(ctx workflow.Context, mws []AgentMiddleware) (TurnResult, error) {
	in := t.in
	t.byRef = workflow.GetVersion(ctx, versionContentRefs, workflow.DefaultVersion, 1) >= 1
	if err := t.registerHandlers(ctx); err != nil {
		return TurnResult{}, err
	}
	// Notifications the previous run started but did not see delivered
	// are sent again (same webhook id: a receiver that saw one already
	// knows it).
	for _, n := range t.Notifying {
		t.sendNotification(ctx, n)
	}
	t.Notifying = nil
	if in.Resume == nil {
		if in.Prompt != "" {
			t.msgs = append(t.msgs, model.Message{Role: model.RoleUser, Content: in.Prompt})
		}
		ac := AgentContext{Instruction: in.Instruction, Tools: in.Tools, ReturnDirectly: in.ReturnDirectly}
		for _, m := range mws {
			if err := m.BeforeAgent(ctx, &ac); err != nil {
				return TurnResult{}, fmt.Errorf("before agent: %w", err)
			}
		}
		t.Instruction, t.Tools, t.ReturnDirectly = ac.Instruction, ac.Tools, ac.ReturnDirectly
	}
	max := in.MaxIterations
	if max <= 0 {
		max = DefaultMaxIterations
		if !t.byRef {
			max = legacyMaxIterations
		}
	}
	res := TurnResult{}
	finished := false
	if t.inFlight != nil {
		results, err := t.resumeStep(ctx)
		if err != nil {
			return t.endOrContinue(ctx, err)
		}
		if answer, ok := t.appendResults(results); ok {
			res.Answer, res.AnswerRef, finished = answer.Content, answer.Ref, true
		}
	}
	for !finished && t.Iterations < max {
		if t.shouldContinueAsNew(ctx) {
			return t.endOrContinue(ctx, errContinueAsNew)
		}
		t.Iterations++
		st := AgentState{Messages: t.msgs, Tools: t.Tools}
		for _, m := range mws {
			if err := m.BeforeModelRewriteState(ctx, &st); err != nil {
				return TurnResult{}, fmt.Errorf("before model: %w", err)
			}
		}
		t.msgs, t.Tools = st.Messages, st.Tools
		asst, err := t.callModel(ctx)
		if err != nil {
			return t.fail(ctx, err)
		}
		st = AgentState{Messages: append(t.msgs, asst), Tools: t.Tools}
		for i := len(mws) - 1; i >= 0; i-- {
			if err := mws[i].AfterModelRewriteState(ctx, &st); err != nil {
				return TurnResult{}, fmt.Errorf("after model: %w", err)
			}
		}
		t.msgs, t.Tools = st.Messages, st.Tools
		var last model.Message
		if n := len(t.msgs); n > 0 {
			last = t.msgs[n-1]
			if t.byRef {
				// The assistant message is stored with the conversation.
				t.msgs = t.msgs[:n-1]
			}
		}
		if last.Content != "" || len(last.ToolCalls) == 0 {
			t.emit(ctx, Event{Type: EventModel, Text: last.Content})
		}
		if len(last.ToolCalls) == 0 {
			res.Answer, res.AnswerRef, finished = last.Content, last.Ref, true
			break
		}
		results, err := t.runCalls(ctx, last.ToolCalls, last.Content)
		if err != nil {
			return t.endOrContinue(ctx, err)
		}
		if answer, ok := t.appendResults(results); ok {
			res.Answer, res.AnswerRef, finished = answer.Content, answer.Ref, true
		}
	}
	if !finished {
		res.Stopped = "max_iterations"
	}
	if finished {
		st := AgentState{Messages: t.msgs, Tools: t.Tools}
		for _, m := range mws {
			if err := m.AfterAgent(ctx, &st); err != nil {
				t.emit(ctx, Event{Type: EventRejected, Text: "after agent: " + err.Error()})
				return TurnResult{}, fmt.Errorf("after agent: %w", err)
			}
		}
	}
	t.settleNotifications(ctx)
	t.done = true
	t.emit(ctx, Event{Type: EventFinal, Text: res.Answer})
	res.Messages, res.Iterations, res.ToolCalls, res.ToolErrors = t.msgs, t.Iterations, t.ToolCalls, t.ToolErrors
	res.State, res.Permission, res.Conversation = t.state, t.perm, t.Conversation
	return res, nil
}

// fail ends the turn loudly: the reason is an event (what `starter run`
// and `starter watch` print) and the workflow's failure.
func (t *turn) fail(ctx workflow.Context, err error) (TurnResult, error) {
	t.settleNotifications(ctx)
	if t.byRef {
		t.done = true
		t.emit(ctx, Event{Type: EventFailed, Text: "turn stopped: " + rootMessage(err), Error: true})
	}
	return TurnResult{}, err
}

// appendResults adds tool results to the conversation; when one comes from
// a return-directly tool, it is the turn's answer.
func (t *turn) appendResults(results []calls.Result) (calls.Result, bool) {
	var answer calls.Result
	direct := false
	for _, r := range results {
		t.msgs = append(t.msgs, model.Message{Role: model.RoleTool, Content: r.Content,
			ToolCallID: r.CallID, ToolName: r.Name, IsError: r.IsError, Ref: r.Ref, Size: r.Size})
		if r.IsError {
			t.ToolErrors++
		}
		if !direct && !r.IsError && slices.Contains(t.ReturnDirectly, r.Name) {
			answer, direct = r, true
		}
	}
	return answer, direct
}
