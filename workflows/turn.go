package workflows

// The agent-turn workflow, by concern:
//
//   - turn.go: the turn's state, run and its loop (model step, tool
//     calls, until an answer or the iteration bound).
//   - model.go: calling the model (the middlewares' hooks around it).
//   - legacy.go: the inline-conversation path of runs recorded before
//     versionContentRefs.
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
//   - toolsinfo.go: the workflow that asks a worker for its tool registry
//     (`starter tools list`).
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
	// routes holds, by call id, the approver roles routeRoles recorded
	// for an entry in this run.
	routes map[string]routed
	// notes are the notifications this run started; those in flight
	// when it continues as new are carried as Resume.Notifying.
	notes []notification
	// chats are the chat activities this run started; chatNotes the
	// answers of calls whose message was not posted yet.
	chats     []workflow.Future
	chatNotes map[string]AnswerNote
	// settled is set once the run waited for its notifications.
	settled bool
	// policyCh is the policy store's signal channel (SignalPolicyChanged).
	policyCh workflow.ReceiveChannel
	// wfid is the turn's workflow id (the validator has no context).
	wfid string
	// indexDirty is set when an entry changed but stays open (an allow
	// short of its quorum): the wait wakes to write the index again.
	indexDirty bool
	// unremembered holds, by call id, why an always_allow's remembered
	// approvals could not be stored; the Update that answered reads it
	// (Ack.NotRemembered) and clears it.
	unremembered map[string]string
	// stopRunning cancels the tool activities of the step that runs
	// (nil when none run); an interrupt calls it.
	stopRunning workflow.CancelFunc
	// saState is the SASessionState this run last wrote.
	saState string
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
	t.recordHead(ctx)
	return res, err
}

// loop is the turn's body (see run).
func (t *turn) loop(ctx workflow.Context, mws []AgentMiddleware) (TurnResult, error) {
	t.byRef = workflow.GetVersion(ctx, versionContentRefs, workflow.DefaultVersion, 1) >= 1
	if err := t.start(ctx, mws); err != nil {
		return TurnResult{}, err
	}
	var res TurnResult
	finished := false
	if t.Session.Idle {
		// A session that continued as new while it waited for a message.
		t.done = true
		return t.nextTurn(ctx, res)
	}
	if t.inFlight != nil {
		results, err := t.resumeStep(ctx)
		if err != nil {
			return TurnResult{}, t.endOrContinue(ctx, err)
		}
		res, finished = t.appendResults(results)
	}
	for limit := t.maxIterations(); !finished && t.Iterations-t.Session.TurnIter < limit; {
		if t.Session.Cancel != nil {
			return t.cancelled(ctx), nil
		}
		if t.shouldContinueAsNew(ctx) {
			return TurnResult{}, t.endOrContinue(ctx, errContinueAsNew)
		}
		if err := t.checkBudget(ctx, nil); err != nil {
			return t.endOn(ctx, err)
		}
		if err := t.checkAgentBudget(ctx, nil); err != nil {
			return t.endOn(ctx, err)
		}
		var err error
		if res, finished, err = t.step(ctx, mws); err != nil {
			return t.endOn(ctx, err)
		}
	}
	if t.Session.Cancel != nil {
		return t.cancelled(ctx), nil
	}
	if !finished {
		res.Stopped = "max_iterations"
	} else if err := t.afterAgent(ctx, mws); err != nil {
		return TurnResult{}, err
	}
	res = t.finish(ctx, res)
	if !t.in.Session {
		return res, nil
	}
	return t.nextTurn(ctx, res)
}

// start opens the run: its handlers, the notifications the previous run
// did not see delivered and, on the turn's first run, the prompt and the
// middlewares' BeforeAgent hooks.
func (t *turn) start(ctx workflow.Context, mws []AgentMiddleware) error {
	if err := t.registerHandlers(ctx); err != nil {
		return err
	}
	t.upsertSession(ctx)
	t.resendNotifications(ctx)
	if t.in.Resume != nil {
		return nil
	}
	if t.in.Prompt != "" {
		t.msgs = append(t.msgs, model.Message{Role: model.RoleUser, Content: t.in.Prompt})
	}
	ac := AgentContext{Instruction: t.in.Instruction, Tools: t.in.Tools, ReturnDirectly: t.in.ReturnDirectly}
	for _, m := range mws {
		if err := m.BeforeAgent(ctx, &ac); err != nil {
			return fmt.Errorf("before agent: %w", err)
		}
	}
	t.Instruction, t.Tools, t.ReturnDirectly = ac.Instruction, ac.Tools, ac.ReturnDirectly
	return nil
}

// maxIterations bounds the turn's model calls: TurnInput.MaxIterations,
// else DefaultMaxIterations (legacyMaxIterations for an inline
// conversation, see legacy.go).
func (t *turn) maxIterations() int {
	if t.in.MaxIterations > 0 {
		return t.in.MaxIterations
	}
	if !t.byRef {
		return legacyMaxIterations
	}
	return DefaultMaxIterations
}

// step is one iteration: a model call, then the tool calls it asks for.
// finished is set when the step answered the turn (res holds the
// answer); an error ends the run as it is (a continue-as-new included).
func (t *turn) step(ctx workflow.Context, mws []AgentMiddleware) (res TurnResult, finished bool, err error) {
	if err := t.beforeModel(ctx); err != nil {
		if errors.Is(err, errContinueAsNew) {
			return TurnResult{}, false, t.endOrContinue(ctx, err)
		}
		return TurnResult{}, false, err
	}
	t.Iterations++
	last, err := t.modelStep(ctx, mws)
	if err != nil {
		return TurnResult{}, false, err
	}
	if last.Content != "" || len(last.ToolCalls) == 0 {
		t.emit(ctx, Event{Type: EventModel, Text: last.Content})
	}
	if len(last.ToolCalls) == 0 {
		if len(t.Session.Steers) > 0 && t.Session.Cancel == nil {
			// A message came for the next model call: the turn goes on.
			return TurnResult{}, false, nil
		}
		return TurnResult{Answer: last.Content, AnswerRef: last.Ref}, true, nil
	}
	if err := t.checkBudget(ctx, last.ToolCalls); err != nil {
		return TurnResult{}, false, err
	}
	if err := t.checkAgentBudget(ctx, last.ToolCalls); err != nil {
		return TurnResult{}, false, err
	}
	t.countTools(last.ToolCalls)
	results, err := t.runCalls(ctx, last.ToolCalls, last.Content)
	if err != nil {
		return TurnResult{}, false, t.endOrContinue(ctx, err)
	}
	res, finished = t.appendResults(results)
	return res, finished, nil
}

// endOn ends the turn after err: as cancelled when a cancel stopped it
// (a budget wait included), else as budgetEnd does; a continue-as-new
// is never taken for a cancel (the next run sees the cancel).
func (t *turn) endOn(ctx workflow.Context, err error) (TurnResult, error) {
	var can *workflow.ContinueAsNewError
	if t.Session.Cancel != nil && !errors.As(err, &can) {
		return t.cancelled(ctx), nil
	}
	return t.budgetEnd(ctx, err)
}

// budgetEnd ends a turn whose budget answer was a deny; any other error
// (a failed wait, a continue-as-new) ends the run as it is.
func (t *turn) budgetEnd(ctx workflow.Context, err error) (TurnResult, error) {
	var d errBudgetDenied
	if !errors.As(err, &d) {
		return TurnResult{}, err
	}
	t.emit(ctx, Event{Type: EventBudget, Text: "turn stopped: " + d.reason, Error: true})
	return t.finish(ctx, TurnResult{Stopped: "budget", StopReason: d.reason}), nil
}

// afterAgent runs the middlewares' AfterAgent hooks on a finished turn,
// first to last; the first error fails the turn.
func (t *turn) afterAgent(ctx workflow.Context, mws []AgentMiddleware) error {
	st := AgentState{Messages: t.msgs, Tools: t.Tools}
	for _, m := range mws {
		if err := m.AfterAgent(ctx, &st); err != nil {
			t.emit(ctx, Event{Type: EventRejected, Text: "after agent: " + err.Error()})
			return fmt.Errorf("after agent: %w", err)
		}
	}
	return nil
}

// finish ends the turn with res: its notifications settle, the final
// event is emitted, and res gets the turn's conversation, counters and
// state.
func (t *turn) finish(ctx workflow.Context, res TurnResult) TurnResult {
	t.chargeLast(ctx)
	t.settleNotifications(ctx)
	t.done = true
	t.emit(ctx, Event{Type: EventFinal, Text: res.Answer})
	res.Messages, res.Iterations, res.ToolCalls, res.ToolErrors = t.msgs, t.Iterations, t.ToolCalls, t.ToolErrors
	res.Usage = t.Usage
	res.State, res.Permission, res.Conversation = t.state, t.perm, t.Conversation
	return res
}

// fail ends the turn loudly: the reason is an event (what `starter run`
// and `starter watch` print) and the workflow's failure. A run with an
// inline conversation (legacy.go) ends with the failure alone.
func (t *turn) fail(ctx workflow.Context, err error) error {
	t.settleNotifications(ctx)
	if t.byRef {
		t.done = true
		t.emit(ctx, Event{Type: EventFailed, Text: "turn stopped: " + rootMessage(err), Error: true})
		t.Session.Idle = false
		t.upsertSession(ctx)
	}
	return err
}

// appendResults adds tool results to the conversation; when one comes from
// a return-directly tool, it is the turn's answer (res holds it).
func (t *turn) appendResults(results []calls.Result) (res TurnResult, direct bool) {
	for _, r := range results {
		t.msgs = append(t.msgs, model.Message{Role: model.RoleTool, Content: r.Content,
			ToolCallID: r.CallID, ToolName: r.Name, IsError: r.IsError, Ref: r.Ref, Size: r.Size})
		if r.IsError {
			t.ToolErrors++
		}
		if !direct && !r.IsError && slices.Contains(t.ReturnDirectly, r.Name) {
			res, direct = TurnResult{Answer: r.Content, AnswerRef: r.Ref}, true
		}
	}
	return res, direct
}
