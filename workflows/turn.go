package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// Bounds of a turn's event stream (what it keeps in memory and shows;
// the change IDs and the bounds replay depends on are in versions.go).
const (
	maxEvents = 1000
	// eventTextBytes bounds an event's text and input.
	eventTextBytes = 2000
)

// Search attribute keys, typed.
var (
	saPendingCalls = temporal.NewSearchAttributeKeyKeywordList(SAPendingCalls)
	saPendingTools = temporal.NewSearchAttributeKeyKeywordList(SAPendingTools)
	saWaitingSince = temporal.NewSearchAttributeKeyTime(SAWaitingSince)
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

// Error types activities return that must not be retried.
const (
	ErrTypeUnknownModel = "UnknownModel"
	ErrTypeUnknownTool  = "UnknownTool"
	ErrTypeInvalidInput = "InvalidInput"
)

// slot tracks one call of a model step through the pipeline; it is its
// own carried form.
type slot = SlotState

// runCalls decides every call of one model step, waits for answers to
// ASKs and external calls, then runs the allowed calls in order
// (consecutive concurrency-safe calls in parallel). Results keep call order.
// text is the assistant's text of the step, shown to approvers.
func (t *turn) runCalls(ctx workflow.Context, calls []model.ToolCall, text string) ([]calls.Result, error) {
	slots := make([]*slot, len(calls))
	for i, c := range calls {
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(t.ToolCalls+i+1)
			calls[i] = c
		}
		slots[i] = &slot{Call: c}
		t.emit(ctx, Event{Type: EventToolCall, CallID: c.ID, Tool: c.Name, Input: string(c.Input)})
	}
	t.ToolCalls += len(calls)
	preps, err := t.prepare(ctx, calls)
	if err != nil {
		return nil, err
	}
	now := workflow.Now(ctx)
	for i, s := range slots {
		s.Prep = preps[i]
		t.classify(ctx, s, now, text)
	}
	return t.finishStep(ctx, slots)
}

// finishStep waits for the step's pending entries (if any), runs its
// allowed calls and returns the results in call order.
func (t *turn) finishStep(ctx workflow.Context, slots []*slot) ([]calls.Result, error) {
	if len(t.pending) > 0 {
		if err := t.wait(ctx, slots); err != nil {
			return nil, err
		}
	}
	if err := t.execute(ctx, slots); err != nil {
		return nil, err
	}
	out := make([]calls.Result, len(slots))
	for i, s := range slots {
		out[i] = *s.Result
		t.emit(ctx, Event{Type: EventResult, CallID: s.Call.ID, Tool: s.Call.Name, Text: s.Result.Content, Error: s.Result.IsError})
	}
	return out, nil
}

// prepare validates and permission-checks calls as local activities, so
// the verdicts are recorded in history and never re-decided on replay.
func (t *turn) prepare(ctx workflow.Context, calls []model.ToolCall) ([]Prepared, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	if q := t.in.ToolQueue; q != "" {
		// The backend lives on the tool queue's workers: check there.
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue: q, StartToCloseTimeout: 30 * time.Second,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
		})
	}
	futs := make([]workflow.Future, len(calls))
	st := t.state
	flags := workflow.GetVersion(ctx, versionPrepareFlags, workflow.DefaultVersion, 1) >= 1
	for i, c := range calls {
		in := PrepareInput{Call: c, Env: t.env(), Permission: t.perm, Allowed: t.in.Tools, ToolFlags: flags,
			LivePolicy: t.in.LivePolicy, WorkflowID: t.wfid, Agent: t.in.Agent}
		// Only the stamp of the file the call names, as the calls before
		// it in this step leave the state (a Read then an Edit of the
		// same file in one step is fine).
		cs := stateOf(st, c)
		cs.Tasks = nil
		in.State = &cs
		st = st.Anticipate(c.Name, c.Input)
		if t.in.ToolQueue != "" {
			futs[i] = workflow.ExecuteActivity(ctx, ActivityPrepare, in)
		} else {
			futs[i] = workflow.ExecuteLocalActivity(lctx, ActivityPrepare, in)
		}
	}
	out := make([]Prepared, len(calls))
	for i, f := range futs {
		if err := f.Get(ctx, &out[i]); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", calls[i].ID, err)
		}
	}
	return out, nil
}

func (t *turn) env() CallEnv { return CallEnv{Backend: t.in.Backend, Workdir: t.in.Workdir} }

// classify turns a prepared call into a result, a pending entry, or a
// call ready to run.
func (t *turn) classify(ctx workflow.Context, s *slot, now time.Time, text string) {
	c, p := s.Call, s.Prep
	if p.Invalid != "" {
		s.Result = &calls.Result{CallID: c.ID, Name: c.Name, Content: p.Invalid, IsError: true, State: calls.StateError}
		return
	}
	d := p.Decision
	t.emit(ctx, Event{Type: EventDecision, CallID: c.ID, Tool: c.Name, Text: string(d.Behavior) + ": " + d.Reason})
	if len(d.UpdatedInput) > 0 {
		s.Call.Input = d.UpdatedInput
	}
	switch d.Behavior {
	case permission.Allow:
		if p.ToolFlags().External {
			t.park(ctx, Pending{Kind: PendingExternal, CallID: c.ID, Tool: c.Name, Input: s.Call.Input,
				Message: "waiting for an external result", Notify: p.Policy.Notify,
				Context: clipTo(text, ContextBytes), Prompt: clipTo(t.in.Prompt, ContextBytes)}, now, -1)
			return
		}
		s.Ready = true
	case permission.Deny:
		s.Result = denied(c, d.Message)
	default: // ask, and passthrough treated as ask
		pend := Pending{Kind: PendingApproval, CallID: c.ID, Tool: c.Name, Input: s.Call.Input,
			Message: d.Message, Reason: d.Reason, BypassImmune: d.BypassImmune, Diff: p.Preview,
			Context: clipTo(text, ContextBytes), Prompt: clipTo(t.in.Prompt, ContextBytes), LiveVersion: p.PolicyVersion}
		for _, r := range d.Suggestions {
			pend.Suggestions = append(pend.Suggestions, r.String())
		}
		if p.Sandbox != nil {
			pend.Sandbox = p.Sandbox.String()
		}
		timeout := t.in.ApprovalTimeout
		if timeout == 0 {
			timeout = p.Policy.ApprovalTimeout
		}
		if timeout == 0 {
			timeout = DefaultApprovalTimeout
		}
		pend.Escalation, pend.Notify = p.Policy.Escalation, p.Policy.Notify
		t.park(ctx, pend, now, timeout)
	}
}

func denied(c model.ToolCall, msg string) *calls.Result {
	return &calls.Result{CallID: c.ID, Name: c.Name, Content: "Permission denied: " + msg, IsError: true, State: calls.StateDenied}
}

// park adds a pending entry; a negative timeout waits without a bound.
func (t *turn) park(ctx workflow.Context, p Pending, now time.Time, timeout time.Duration) {
	p.RequestedAt = now
	if timeout > 0 {
		p.Deadline = now.Add(timeout)
	}
	p.Hash = CallHash(p.Tool, p.Input, p.CallID, t.PolicyVersion)
	t.pending = append(t.pending, p)
	t.emit(ctx, Event{Type: EventWaiting, CallID: p.CallID, Tool: p.Tool, Text: string(p.Kind) + ": " + p.Message})
	typ := NotifyApprovalRequested
	if p.Kind == PendingExternal {
		typ = NotifyExternalRequested
	}
	t.notify(ctx, typ, p)
}

// notify starts a webhook notification activity (retried with backoff)
// without waiting for it; the run keeps its future, so the notification
// is waited for before the run ends (settleNotifications) and carried
// into the next run when it continues as new. Turns recorded before
// notifications existed replay without it.
func (t *turn) notify(ctx workflow.Context, typ string, p Pending) {
	if !p.Notify || workflow.GetVersion(ctx, versionNotifyWebhooks, workflow.DefaultVersion, 1) < 1 {
		return
	}
	t.sendNotification(ctx, NotifyInput{Type: typ, WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, Pending: p})
}

// notification is a webhook notification this run started.
type notification struct {
	in NotifyInput
	f  workflow.Future
}

// sendNotification starts the notification activity for in and keeps its
// future (dropping those of notifications already settled).
func (t *turn) sendNotification(ctx workflow.Context, in NotifyInput) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 5 * time.Minute, MaximumAttempts: 20},
	})
	t.notes = slices.DeleteFunc(t.notes, func(n notification) bool { return n.f.IsReady() })
	t.notes = append(t.notes, notification{in: in, f: workflow.ExecuteActivity(actx, ActivityNotify, in)})
}

// unsettled lists the notifications of this run still in flight: neither
// delivered nor failed for good.
func (t *turn) unsettled() []NotifyInput {
	var out []NotifyInput
	for _, n := range t.notes {
		if !n.f.IsReady() {
			out = append(out, n.in)
		}
	}
	return out
}

// settleNotifications lets the notifications in flight finish before the
// run ends: it waits until each is delivered or failed for good, at most
// notifyGrace. A run that ends for good then leaves the rest undelivered
// (the audit reports them); one that continues as new carries them and
// the next run sends them again. Runs recorded before
// versionNotifyDelivery ended without waiting (and abandoned them).
func (t *turn) settleNotifications(ctx workflow.Context) {
	if t.settled || len(t.unsettled()) == 0 {
		return
	}
	t.settled = true
	if workflow.GetVersion(ctx, versionNotifyDelivery, workflow.DefaultVersion, 1) < 1 {
		return
	}
	// An error is the run's cancellation: what is unsettled stays so.
	_, _ = workflow.AwaitWithTimeout(ctx, notifyGrace, func() bool { return len(t.unsettled()) == 0 })
}

// CallHash binds an answer to the exact call (tool, input, call id) and
// the policy version the approver saw. Pending.Hash is its value; every
// answer must send it back.
func CallHash(tool string, input json.RawMessage, callID string, policyVersion int) string {
	h := sha256.New()
	h.Write([]byte("warden-call-v2"))
	h.Write([]byte{0})
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(input)
	h.Write([]byte{0})
	h.Write([]byte(callID))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(policyVersion)))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// legacyCallHash is the hash older workers showed (no call id); signals
// recorded with it replay as they were decided.
func legacyCallHash(tool string, input json.RawMessage, policyVersion int) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(input)
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(policyVersion)))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// wait blocks durably until every pending entry of this step is answered
// or its deadline passes, then applies the answers to the slots.
func (t *turn) wait(ctx workflow.Context, slots []*slot) error {
	t.upsertPending(ctx)
	// Since versionWaitContinueAsNew the wait itself watches the history
	// bound: every workflow task re-evaluates it, so answers that change
	// nothing (rejected signals, stale hashes) cannot grow a waiting
	// turn's history past it. Runs recorded before it checked the bound
	// only when an answer or a deadline ended the wait.
	watch := workflow.GetVersion(ctx, versionWaitContinueAsNew, workflow.DefaultVersion, 1) >= 1
	for {
		if t.shouldContinueAsNew(ctx) {
			t.inFlight = slots
			return errContinueAsNew
		}
		open := t.open()
		if len(open) == 0 {
			break
		}
		now := workflow.Now(ctx)
		var next time.Time
		for _, p := range open {
			if p.Deadline.IsZero() {
				continue
			}
			if !p.Deadline.After(now) {
				t.escalate(ctx, p)
				continue
			}
			if next.IsZero() || p.Deadline.Before(next) {
				next = p.Deadline
			}
		}
		n := len(t.open())
		if n == len(open) {
			// An escalation that keeps waiting changed its entry.
			t.upsertIndex(ctx, t.open())
		}
		if n < len(open) {
			t.upsertPending(ctx)
			continue
		}
		cond := func() bool {
			return t.recheck || len(t.open()) < n || (watch && t.shouldContinueAsNew(ctx))
		}
		if next.IsZero() {
			if err := workflow.Await(ctx, cond); err != nil {
				return fmt.Errorf("waiting for approvals: %w", err)
			}
		} else if _, err := workflow.AwaitWithTimeout(ctx, next.Sub(now), cond); err != nil {
			return fmt.Errorf("waiting for approvals: %w", err)
		}
		if t.recheck {
			t.recheck = false
			if err := t.recheckPending(ctx); err != nil {
				return err
			}
		}
		t.upsertPending(ctx)
	}
	bySlot := map[string]*slot{}
	for _, s := range slots {
		bySlot[s.Call.ID] = s
	}
	for _, p := range t.pending {
		s := bySlot[p.CallID]
		if s == nil {
			continue
		}
		if err := t.apply(ctx, s, p, t.answers[p.CallID]); err != nil {
			return err
		}
	}
	t.pending = nil
	t.upsertPending(ctx)
	return nil
}

// escalate applies a pending entry's escalation once its deadline passed.
func (t *turn) escalate(ctx workflow.Context, p Pending) {
	action := p.Escalation
	if action == "" {
		action = EscalateDeny
	}
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"action": string(action)}).Counter(MetricApprovalEscalation).Inc(1)
	switch p.Escalation {
	case EscalateAllow:
		t.answers[p.CallID] = AnswerState{CallID: p.CallID, Approval: &Approval{CallID: p.CallID, Decision: DecisionAllow, By: "deadline", Reason: "approval deadline passed"}}
		t.emit(ctx, Event{Type: EventEscalated, CallID: p.CallID, Tool: p.Tool, Text: "deadline passed: allowed"})
		t.notifyEscalation(ctx, p)
	case EscalateNotify:
		for i := range t.pending {
			if t.pending[i].CallID == p.CallID {
				t.pending[i].Escalated = true
				t.pending[i].Deadline = time.Time{}
				p = t.pending[i]
			}
		}
		t.emit(ctx, Event{Type: EventEscalated, CallID: p.CallID, Tool: p.Tool, Text: "deadline passed: escalated, still waiting"})
		t.notify(ctx, NotifyApprovalEscalated, p)
	default:
		t.answers[p.CallID] = AnswerState{CallID: p.CallID, Approval: &Approval{CallID: p.CallID, Decision: DecisionDeny, By: "deadline", Reason: "approval timed out"}}
		t.emit(ctx, Event{Type: EventEscalated, CallID: p.CallID, Tool: p.Tool, Text: "deadline passed: denied"})
		t.notifyEscalation(ctx, p)
	}
}

// notifyEscalation sends the webhook of an escalation that ends the wait
// (allow, or deny on a timed-out approval). Turns that escalated before
// these notifications existed replay without them.
func (t *turn) notifyEscalation(ctx workflow.Context, p Pending) {
	if workflow.GetVersion(ctx, versionNotifyEscalations, workflow.DefaultVersion, 1) >= 1 {
		t.notify(ctx, NotifyApprovalEscalated, p)
	}
}

// open lists the pending entries without an answer, in order.
func (t *turn) open() []Pending {
	var out []Pending
	for _, p := range t.pending {
		if _, ok := t.answers[p.CallID]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// recheckPending re-evaluates unanswered approvals after a rule was added;
// calls the new policy allows resolve without an approver.
func (t *turn) recheckPending(ctx workflow.Context) error {
	var calls []model.ToolCall
	for _, p := range t.open() {
		if p.Kind == PendingApproval {
			calls = append(calls, model.ToolCall{ID: p.CallID, Name: p.Tool, Input: p.Input})
		}
	}
	if len(calls) == 0 {
		return nil
	}
	preps, err := t.prepare(ctx, calls)
	if err != nil {
		return err
	}
	if t.in.LivePolicy != "" && workflow.GetVersion(ctx, versionLivePolicy, workflow.DefaultVersion, 1) >= 1 {
		return t.redecide(ctx, calls, preps)
	}
	for i, p := range preps {
		if p.Invalid == "" && p.Decision.Behavior == permission.Allow {
			t.answers[calls[i].ID] = AnswerState{CallID: calls[i].ID, Auto: p.Decision.Reason}
			t.emit(ctx, Event{Type: EventAnswered, CallID: calls[i].ID, Tool: calls[i].Name, Text: "allowed by added rule: " + p.Decision.Reason})
		}
	}
	return nil
}

// apply turns an answer into a ready call or a result.
func (t *turn) apply(ctx workflow.Context, s *slot, p Pending, a AnswerState) error {
	if p.Kind == PendingApproval {
		workflow.GetMetricsHandler(ctx).Timer(MetricApprovalWait).Record(workflow.Now(ctx).Sub(p.RequestedAt))
	}
	switch {
	case a.External != nil:
		r := a.External
		s.Result = &calls.Result{CallID: p.CallID, Name: p.Tool, Content: r.Content, IsError: r.IsError, Metadata: r.Metadata, State: calls.StateSuccess}
		if r.IsError {
			s.Result.State = calls.StateError
		}
	case a.Denied != "":
		s.Result = denied(s.Call, a.Denied)
	case a.Auto != "":
		s.Ready = true
	case a.Approval != nil && a.Approval.Decision == DecisionDeny:
		reason := a.Approval.Reason
		if reason == "" {
			reason = "no reason given"
		}
		by := ""
		if a.Approval.By != "" {
			by = " by " + a.Approval.By
		}
		s.Result = &calls.Result{CallID: p.CallID, Name: p.Tool, IsError: true, State: calls.StateDenied,
			Content: fmt.Sprintf("The user denied this %s call%s: %s", p.Tool, by, reason)}
	case a.Approval != nil:
		if len(a.Approval.Input) > 0 && string(a.Approval.Input) != string(p.Input) {
			return t.applyEdit(ctx, s, p, a.Approval)
		}
		s.Ready = true
	default:
		return errors.New("pending call without answer")
	}
	return nil
}

// applyEdit runs an approved call with its edited input. The edit is a
// new call: it is validated against the tool's schema and decided again
// by the one decision function (Prepare). The rule:
//   - invalid input or a deny: the edit is refused (an error result the
//     model reads); nothing runs;
//   - ask (or passthrough): the approver named this exact input in the
//     answer (and the validator checked their roles cover it), so the
//     approval stands as the approval of the new call;
//   - allow: the policy allows the new call anyway.
//
// Either way the call runs with the new verdict: its own read-only flag,
// policy, fast path and retries, never the original's (a read-only call
// edited into a side-effecting command runs at most once).
func (t *turn) applyEdit(ctx workflow.Context, s *slot, p Pending, a *Approval) error {
	preps, err := t.prepare(ctx, []model.ToolCall{{ID: p.CallID, Name: p.Tool, Input: a.Input}})
	if err != nil {
		return err
	}
	np := preps[0]
	if np.Invalid != "" {
		s.Result = &calls.Result{CallID: p.CallID, Name: p.Tool, Content: np.Invalid, IsError: true, State: calls.StateError}
		return nil
	}
	if np.Decision.Behavior == permission.Deny {
		s.Result = denied(s.Call, np.Decision.Message)
		return nil
	}
	s.Call.Input = a.Input
	if workflow.GetVersion(ctx, versionEditedNewCall, workflow.DefaultVersion, 1) >= 1 {
		if len(np.Decision.UpdatedInput) > 0 {
			s.Call.Input = np.Decision.UpdatedInput
		}
		s.Prep = np
		t.emit(ctx, Event{Type: EventDecision, CallID: p.CallID, Tool: p.Tool,
			Text: "edited input decided as a new call: " + string(np.Decision.Behavior) + ": " + np.Decision.Reason})
	}
	s.Ready = true
	return nil
}

// execute runs the ready calls in order. Consecutive calls of
// concurrency-safe tools that do not touch turn state run in parallel.
func (t *turn) execute(ctx workflow.Context, slots []*slot) error {
	for i := 0; i < len(slots); {
		if !slots[i].Ready {
			i++
			continue
		}
		j := i + 1
		if parallel(slots[i]) {
			for j < len(slots) && (!slots[j].Ready || parallel(slots[j])) {
				j++
			}
		}
		var batch []*slot
		for _, s := range slots[i:j] {
			if s.Ready {
				batch = append(batch, s)
			}
		}
		futs := make([]workflow.Future, len(batch))
		for k, s := range batch {
			futs[k] = t.startTool(ctx, s)
		}
		for k, s := range batch {
			out, err := t.finishTool(ctx, s, futs[k])
			if err != nil {
				return err
			}
			s.Result = out
		}
		i = j
	}
	return nil
}

func parallel(s *slot) bool {
	f := s.Prep.ToolFlags()
	return f.ConcurrencySafe && !f.StateInjected
}

func (t *turn) toolInput(ctx workflow.Context, s *slot) ToolInput {
	in := ToolInput{Key: workflow.GetInfo(ctx).WorkflowExecution.ID + "/" + s.Call.ID, Call: s.Call, Env: t.env(), State: t.state, ByRef: t.byRef,
		Sandbox: s.Prep.Sandbox}
	if t.byRef {
		in.State = t.stateFor(s.Call)
	}
	return in
}

// stateFor is the part of the turn's tool state a call needs: the task
// list, and what was read of the file the call names (read-before-write).
// The reads of the whole turn stay in the workflow, so a call's input does
// not grow with every file the turn has read.
func (t *turn) stateFor(c model.ToolCall) calls.State { return stateOf(t.state, c) }

// stateOf is the part of s a call needs: the task list, and the read
// stamp of the file the call names.
func stateOf(s calls.State, c model.ToolCall) calls.State {
	st := calls.State{Tasks: s.Tasks}
	var in struct {
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(c.Input, &in) != nil || in.FilePath == "" {
		return st
	}
	p := path.Clean(in.FilePath)
	if stamp, ok := s.Reads[p]; ok {
		st.Reads = map[string]calls.FileStamp{p: stamp}
	}
	return st
}

func retryPolicy(p CallPolicy) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval: p.InitialInterval, BackoffCoefficient: p.BackoffCoefficient, MaximumInterval: p.MaxInterval,
		MaximumAttempts:        max(p.MaxAttempts, 1),
		NonRetryableErrorTypes: append([]string{ErrTypeUnknownTool, ErrTypeInvalidInput}, p.NonRetryable...),
	}
}

// startTool schedules a call: as a local activity on the fast path
// (its result is recorded in history like any activity's), else as a
// regular activity.
func (t *turn) startTool(ctx workflow.Context, s *slot) workflow.Future {
	p := s.Prep.Policy
	if p.Local && t.in.ToolQueue == "" {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: p.LocalTimeout,
			RetryPolicy:         retryPolicy(p),
		})
		return workflow.ExecuteLocalActivity(lctx, ActivityTool, t.toolInput(ctx, s))
	}
	return t.startRegular(ctx, s)
}

func (t *turn) startRegular(ctx workflow.Context, s *slot) workflow.Future {
	p := s.Prep.Policy
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 11 * time.Minute
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           t.in.ToolQueue,
		ActivityID:          "tool-" + s.Call.ID,
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy:         retryPolicy(p),
	})
	return workflow.ExecuteActivity(actx, ActivityTool, t.toolInput(ctx, s))
}

// finishTool waits for a call's result. A fast-path call that ran out of
// its local time bound is rescheduled as a regular activity. A failed
// activity becomes an error result the model reads.
func (t *turn) finishTool(ctx workflow.Context, s *slot, f workflow.Future) (*calls.Result, error) {
	var out ToolOutput
	err := f.Get(ctx, &out)
	var te *temporal.TimeoutError
	if err != nil && s.Prep.Policy.Local && t.in.ToolQueue == "" && errors.As(err, &te) {
		t.emit(ctx, Event{Type: EventDecision, CallID: s.Call.ID, Tool: s.Call.Name, Text: "fast path timed out: rescheduled as a regular activity"})
		err = t.startRegular(ctx, s).Get(ctx, &out)
	}
	if err != nil {
		if !isActivityFailure(err) {
			return nil, err
		}
		msg := "Tool failed: " + rootMessage(err)
		if s.Prep.Policy.MaxAttempts <= 1 && !s.Prep.ReadOnly {
			msg += "\nThe call was not retried because it may have had side effects; check its effects before trying again."
		}
		return &calls.Result{CallID: s.Call.ID, Name: s.Call.Name, IsError: true, State: calls.StateError, Content: msg}, nil
	}
	out.Result.CallID, out.Result.Name = s.Call.ID, s.Call.Name
	t.mergeState(out.State)
	return &out.Result, nil
}

// mergeState folds a call's returned state into the turn's: reads merge
// (parallel reads each add their files), the task list is replaced.
func (t *turn) mergeState(s calls.State) {
	if len(s.Reads) > 0 && t.state.Reads == nil {
		t.state.Reads = map[string]calls.FileStamp{}
	}
	for _, k := range workflow.DeterministicKeys(s.Reads) {
		t.state.Reads[k] = s.Reads[k]
	}
	t.state.Tasks = s.Tasks
}

func isActivityFailure(err error) bool {
	var actErr *temporal.ActivityError
	return errors.As(err, &actErr)
}

// rootMessage is the failure message of an activity error: the
// application error's own message (with the context the activity wrapped
// around it), else the innermost error's.
func rootMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// emit appends an event to the bounded ring.
func (t *turn) emit(ctx workflow.Context, e Event) {
	t.Seq++
	e.Seq, e.Time = t.Seq, workflow.Now(ctx)
	e.Text, e.Input = clip(e.Text), clip(e.Input)
	t.Events = append(t.Events, e)
	if len(t.Events) > maxEvents {
		t.Events = slices.Delete(t.Events, 0, len(t.Events)-maxEvents)
	}
}

// clip bounds an event's text.
func clip(s string) string {
	if len(s) <= eventTextBytes {
		return s
	}
	cut := eventTextBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
