// Package audit reconstructs who decided what about each tool call of a
// warden turn from the turn's Temporal histories — every run of its
// continue-as-new chain, oldest first:
//
//   - the permission engine's verdicts: warden.Prepare results, recorded
//     as local-activity markers, or as completed activities for turns
//     whose checks run on a tool queue;
//   - approvals and denials (the "approve" update or signal) and external
//     results, with the approver's identity and the path they came by;
//   - escalations at an approval's deadline (deny, allow or notify),
//     derived from the recorded deadline policy and the workflow's clock;
//   - the proposed input (the model's), the approved input (an approver's
//     edit) and the effective input (what the tool ran with) of each call.
//
// It reads only what the workflow records about calls and decisions, not
// the conversation, so it does not depend on how messages are stored.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// Record kinds.
const (
	// KindPermission is the permission engine's verdict on a call.
	KindPermission = "permission"
	// KindRecheck is a verdict re-evaluated after a rule was added.
	KindRecheck = "recheck"
	// KindEdit is the verdict on an input an approver edited.
	KindEdit = "edit"
	// KindApproval is a human's answer to an ASK.
	KindApproval = "approval"
	// KindLivePolicy is a waiting call decided again after its policy
	// store changed: Decision is the new verdict (allow and deny answer
	// the call, ask keeps it waiting), By "policy vN", PolicyVersion N
	// and FromVersion the version it waited under.
	KindLivePolicy = "live_policy"
	// KindExternal is an external result (AskUser answers included).
	KindExternal = "external"
	// KindEscalation is an approval whose deadline passed: Decision is
	// the escalation action (deny, allow, or notify and keep waiting).
	KindEscalation = "escalation"
	// KindExecution is a call that ran, with its effective input.
	KindExecution = "execution"
	// KindConnection is a connection a call's processes asked the
	// egress proxy for: Decision is allowed or refused, Reason the
	// connection (host, port, address dialled, bytes, what decided),
	// Connection its fields.
	KindConnection = "connection"
	// KindLimit is a limit that ended a call (Reason says which).
	KindLimit = "limit"
	// KindModel is a model call: Usage its tokens and cost (when the
	// worker prices the model), TurnUsage the turn's so far, across its
	// runs; Tool names the model, CallID numbers the calls (model_N).
	KindModel = "model"
	// KindNotification is a webhook notification about a call:
	// Decision is delivered or undelivered (it failed for good, or its
	// turn ended while it was in flight), Notification its type.
	KindNotification = "notification"
)

// Decisions of notification records.
const (
	NotificationDelivered   = "delivered"
	NotificationUndelivered = "undelivered"
)

// Paths a decision came by (Record.Path).
const (
	// PathRule: the permission engine (rules, modes, read-only checks).
	PathRule = "rule"
	// PathUpdate and PathSignal: an answer sent as an Update or a signal.
	PathUpdate = "update"
	PathSignal = "signal"
	// PathEscalation: the approval deadline passed.
	PathEscalation = "escalation"
)

// Record is one decision about one call.
type Record struct {
	Time       time.Time `json:"time"`
	WorkflowID string    `json:"workflow_id"`
	// RunID is the run of the continue-as-new chain the record comes from.
	RunID  string `json:"run_id,omitempty"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	Kind   string `json:"kind"`
	// Decision is allow, ask, deny or invalid (permission, recheck,
	// edit), allow, always_allow or deny (approval), completed or error
	// (external), deny, allow or notify (escalation), ran (execution).
	Decision string `json:"decision"`
	// By is "policy" for engine verdicts, the approver for answers,
	// "deadline" for escalations and "worker" for executions.
	By string `json:"by"`
	// Identity is the authenticated key the answer came with (its via):
	// on a warden server with keys the frontend checked it, and that by
	// is the key's own name unless the key is a delegate's (the inbox,
	// which signs its users in). Empty for answers sent to a server
	// without keys, whose by nobody checked.
	Identity string `json:"identity,omitempty"`
	// Path says how the decision was made: rule, update, signal or
	// escalation.
	Path   string   `json:"path,omitempty"`
	Reason string   `json:"reason,omitempty"`
	Layer  string   `json:"layer"`
	Rules  []string `json:"rules,omitempty"`
	// ProposedInput is the call's input as the model proposed it.
	ProposedInput json.RawMessage `json:"proposed_input,omitempty"`
	// ApprovedInput is the input an approver allowed (an edit, or the
	// waiting input unchanged).
	ApprovedInput json.RawMessage `json:"approved_input,omitempty"`
	// EffectiveInput is the input the tool ran with (execution records).
	EffectiveInput json.RawMessage `json:"effective_input,omitempty"`
	// Notification is the type of a notification record
	// (approval_requested, approval_escalated, external_requested).
	Notification string `json:"notification,omitempty"`
	// Sandbox is how the call runs (permission records): its recorded
	// profile ("write /src/app, network off"), or that the local
	// sandbox was off. Empty for calls decided before profiles were
	// recorded.
	Sandbox string `json:"sandbox,omitempty"`
	// Remembered is the remembered approval of the policy store that
	// allowed the call (its id), RememberedBy who approved it.
	Remembered   string `json:"remembered,omitempty"`
	RememberedBy string `json:"remembered_by,omitempty"`
	// PolicyVersion is the policy store's version the verdict was
	// decided under (turns that follow a store).
	PolicyVersion int `json:"policy_version,omitempty"`
	// FromVersion is the store version a live-policy re-decision's call
	// waited under before it (PolicyVersion is the new one).
	FromVersion int `json:"from_version,omitempty"`
	// Scope and TTL are what an always_allow remembered beyond the turn
	// (approval records): the scope (input, turn, agent, namespace), how
	// long it holds (0: until revoked) and whether it is single-use.
	Scope     string        `json:"scope,omitempty"`
	TTL       time.Duration `json:"ttl,omitempty"`
	SingleUse bool          `json:"single_use,omitempty"`
	// Edited says an approval allowed an input the approver edited
	// (ApprovedInput).
	Edited bool `json:"edited,omitempty"`
	// Connection is the connection of a connection record.
	Connection *calls.Connection `json:"connection,omitempty"`
	// Usage is a model record's usage; TurnUsage the turn's total after
	// it.
	Usage     *model.Usage `json:"usage,omitempty"`
	TurnUsage *model.Usage `json:"turn_usage,omitempty"`
}

// Workflow reads every run of a workflow's continue-as-new chain, from
// the first to the latest, and returns its records oldest first.
func Workflow(ctx context.Context, c tclient.Client, workflowID string) ([]Record, error) {
	runs, err := Chain(ctx, c, workflowID)
	if err != nil {
		return nil, err
	}
	recs, err := ExtractChain(workflowID, runs)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(recs, func(a, b Record) int { return a.Time.Compare(b.Time) })
	return recs, nil
}

// Chain reads the histories of every run of a workflow's continue-as-new
// chain, the first run first.
func Chain(ctx context.Context, c tclient.Client, workflowID string) ([]Run, error) {
	var runs []Run
	for runID := latestRunID(ctx, c, workflowID); ; {
		evs, err := history(ctx, c, workflowID, runID)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			break
		}
		runs = append(runs, Run{ID: runID, Events: evs})
		prev := evs[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if prev == "" {
			break
		}
		runID = prev
	}
	slices.Reverse(runs)
	return runs, nil
}

func history(ctx context.Context, c tclient.Client, workflowID, runID string) ([]*historypb.HistoryEvent, error) {
	it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var evs []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s (run %q): %w", workflowID, runID, err)
		}
		evs = append(evs, e)
	}
	return evs, nil
}

// latestRunID names the latest run, read before its history so both
// are of the same run (empty when it cannot be described: the history
// of the latest run is then read without a run id).
func latestRunID(ctx context.Context, c tclient.Client, workflowID string) string {
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return ""
	}
	return d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}

// Since extracts the records of every turn that ran at or after since
// (started, closed or still running) and returns those not older than
// since, oldest first.
func Since(ctx context.Context, c tclient.Client, since time.Time) ([]Record, error) {
	ids, err := turnIDs(ctx, c, Query{Since: since})
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, id := range ids {
		rs, err := Workflow(ctx, c, id)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if !r.Time.Before(since) {
				out = append(out, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Record) int { return a.Time.Compare(b.Time) })
	return out, nil
}

// Run is the history of one run of a continue-as-new chain.
type Run struct {
	ID     string
	Events []*historypb.HistoryEvent
}

// Extract turns one run's history events into records.
func Extract(workflowID string, evs []*historypb.HistoryEvent) ([]Record, error) {
	return ExtractChain(workflowID, []Run{{Events: evs}})
}

// ExtractChain turns the histories of a continue-as-new chain, oldest
// run first, into records. Calls waiting across a continue-as-new keep
// their state from one run to the next.
//
// Verdicts recorded as local-activity markers carry no call id; they are
// matched to calls in the order the workflow prepares them: the calls of
// each model answer in order (the local activities of one batch are
// sorted by activity id, which follows that order), then re-checks of
// open asks after an always-allow, then edited inputs. Verdicts of
// regular activities (tool-queue turns) name their call.
func ExtractChain(workflowID string, runs []Run) ([]Record, error) {
	x, err := extract(workflowID, runs)
	if err != nil {
		return nil, err
	}
	return x.out, nil
}

// ExtractCalls reads the same histories as ExtractChain and returns the
// engine's verdicts on calls (the calls' first verdicts and those on
// approvers' edits), oldest first, each with what re-deciding it needs
// (the input, the turn's policy and the rules its approvers added until
// then, the workdir and sandbox) and what came of it (Decided.Answer).
func ExtractCalls(workflowID string, runs []Run) ([]Decided, error) {
	x, err := extract(workflowID, runs)
	if err != nil {
		return nil, err
	}
	out := make([]Decided, len(x.decided))
	for i, d := range x.decided {
		out[i] = *d
	}
	return out, nil
}

func extract(workflowID string, runs []Run) (*extractor, error) {
	x := &extractor{wf: workflowID, dc: converter.GetDefaultDataConverter(), calls: map[string]*call{}}
	for _, run := range runs {
		x.run = run.ID
		x.sched = map[int64]scheduled{}
		x.notes = map[int64]workflows.NotifyInput{}
		evs := run.Events
		for i := 0; i < len(evs); i++ {
			e := evs[i]
			if e.GetEventType() == enumspb.EVENT_TYPE_MARKER_RECORDED {
				j := i
				for j < len(evs) && evs[j].GetEventType() == enumspb.EVENT_TYPE_MARKER_RECORDED {
					j++
				}
				x.markers(evs[i:j])
				i = j - 1
				continue
			}
			if err := x.event(e); err != nil {
				return nil, fmt.Errorf("run %s event %d: %w", run.ID, e.GetEventId(), err)
			}
		}
		x.flushDue()
	}
	return x, nil
}

// call is a tool call the turn knows of.
type call struct {
	id, tool string
	proposed json.RawMessage // the model's input
	waiting  json.RawMessage // the input shown to approvers (after the engine's rewrite)
	approved json.RawMessage // an approver's edit, while it is re-checked
	prepared bool
	asked    bool // waiting for an approval
	external bool // waiting for an external result
	answered bool
	// approvals counts the approvers' answers accepted for the call
	// (more than one under a two-person rule).
	approvals int
	ran       bool
	edit      bool // an edited input awaits its verdict
	// deadline of the ask (zero: none); escalation is what happens then.
	deadline   time.Time
	escalation workflows.Escalation
	timeout    time.Duration
	// dec is the call's latest engine verdict, for what came of it;
	// suggestions are its first verdict's suggested rules (what an
	// always-allow without rules adds).
	dec         *Decided
	suggestions []string
}

// effective is the input a call runs with when the tool activity does
// not record it (the fast path).
func (c *call) effective() json.RawMessage {
	switch {
	case len(c.approved) > 0:
		return c.approved
	case len(c.waiting) > 0:
		return c.waiting
	}
	return c.proposed
}

// scheduled is an activity scheduled in the current run.
type scheduled struct {
	name  string
	input *commonpb.Payloads
}

// due is an escalation the workflow applies in a workflow task, unless
// an answer accepted in that task comes first.
type due struct {
	at    time.Time
	calls []*call
}

// extractor walks histories in order.
type extractor struct {
	wf, run string
	dc      converter.DataConverter
	timeout time.Duration // the turn's own approval timeout (0: per call)
	calls   map[string]*call
	seq     []*call // calls in arrival order
	ncalls  int
	batch   []*call // calls of the last model answer not yet prepared
	recheck bool    // an always_allow was accepted: the next verdicts are rechecks
	round   []*call // asks the current recheck round has yet to re-check
	sched   map[int64]scheduled
	// now is the workflow's clock: the start of the current workflow
	// task, or a later local-activity result's replay time.
	now time.Time
	// fresh are asks of the current batch; they start waiting at the
	// workflow time all the batch's verdicts are in.
	fresh []*call
	fired bool // a timer fired since the last workflow task started
	due   *due
	// notes are the notifications of the current run in flight, by the
	// event id of their scheduling; carried are those in flight when the
	// last run (carriedRun) continued as new, at carriedAt.
	notes      map[int64]workflows.NotifyInput
	carried    []workflows.NotifyInput
	carriedAt  time.Time
	carriedRun string
	out        []Record
	// turn is the current run's input (its policy, workdir, backend and
	// tools); session are the rules the turn's approvers added so far;
	// decided are the engine's verdicts, for ExtractCalls.
	turn    workflows.TurnInput
	session []permission.Rule
	decided []*Decided
	// usage is the turn's model usage so far; models counts its calls.
	usage  model.Usage
	models int
}

func (x *extractor) decode(p *commonpb.Payloads, v any) error {
	if p == nil || len(p.GetPayloads()) == 0 {
		return fmt.Errorf("no payload")
	}
	return x.dc.FromPayload(p.GetPayloads()[0], v)
}

func (x *extractor) record(r Record) {
	r.WorkflowID, r.RunID = x.wf, x.run
	x.out = append(x.out, r)
}

func (x *extractor) event(e *historypb.HistoryEvent) error {
	t := e.GetEventTime().AsTime()
	switch e.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
		x.started(e)
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
		x.flushDue()
		x.now = t
		x.startAsks()
		x.scheduleDue(t)
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		// The last task continued as new before escalating: the next run
		// decides.
		x.due = nil
		// Notifications in flight: the next run may send them again.
		x.carried, x.carriedAt, x.carriedRun = x.inFlight(), t, x.run
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		for _, in := range x.inFlight() {
			x.notification(t, in, NotificationUndelivered, "the turn ended before it was delivered")
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
		a := e.GetActivityTaskFailedEventAttributes()
		x.notifyFailed(t, a.GetScheduledEventId(), a.GetFailure().GetMessage())
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
		a := e.GetActivityTaskTimedOutEventAttributes()
		x.notifyFailed(t, a.GetScheduledEventId(), "timed out: "+a.GetFailure().GetMessage())
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
		x.notifyFailed(t, e.GetActivityTaskCanceledEventAttributes().GetScheduledEventId(), "canceled")
	case enumspb.EVENT_TYPE_TIMER_FIRED:
		x.fired = true
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		x.activityScheduled(t, e)
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
		x.activityCompleted(t, e.GetActivityTaskCompletedEventAttributes())
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
		req := e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest()
		return x.answer(t, req.GetInput().GetName(), req.GetInput().GetArgs(), PathUpdate)
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
		a := e.GetWorkflowExecutionSignaledEventAttributes()
		return x.answer(t, a.GetSignalName(), a.GetInput(), PathSignal)
	}
	return nil
}

// started reads the turn's input: its approval timeout, and the rules
// its approvers added, which a run that continues a turn carries.
func (x *extractor) started(e *historypb.HistoryEvent) {
	var in workflows.TurnInput
	if err := x.decode(e.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err == nil {
		x.timeout = in.ApprovalTimeout
		x.turn = in
		if in.Resume != nil {
			x.usage = in.Resume.Usage
		}
		for _, r := range in.Permission.Allow {
			x.addSession(r)
		}
	}
	x.resent(in.Resume)
}

// activityScheduled records a scheduled activity: a tool activity is an
// execution, a notification is sent.
func (x *extractor) activityScheduled(t time.Time, e *historypb.HistoryEvent) {
	a := e.GetActivityTaskScheduledEventAttributes()
	s := scheduled{name: a.GetActivityType().GetName(), input: a.GetInput()}
	x.sched[e.GetEventId()] = s
	switch s.name {
	case workflows.ActivityTool:
		var in workflows.ToolInput
		if err := x.decode(s.input, &in); err == nil {
			x.execution(t, in.Call.ID, in.Call.Name, in.Call.Input, "activity")
		}
	case workflows.ActivityNotify:
		var in workflows.NotifyInput
		if err := x.decode(s.input, &in); err == nil {
			x.notes[e.GetEventId()] = in
		}
	}
}

// activityCompleted reads a completed activity's result: a verdict, a
// delivered notification or a model's answer.
func (x *extractor) activityCompleted(t time.Time, a *historypb.ActivityTaskCompletedEventAttributes) {
	s, ok := x.sched[a.GetScheduledEventId()]
	if !ok {
		return
	}
	switch s.name {
	case workflows.ActivityPrepare:
		x.prepared(t, s, a)
	case workflows.ActivityNotify:
		if in, ok := x.notes[a.GetScheduledEventId()]; ok {
			delete(x.notes, a.GetScheduledEventId())
			x.notification(t, in, NotificationDelivered, "")
		}
	case workflows.ActivityTool:
		var out workflows.ToolOutput
		if x.decode(a.GetResult(), &out) == nil {
			x.evidence(t, out.Result)
		}
	case workflows.ActivityModelStep, workflows.ActivityModel:
		x.modelAnswer(t, a.GetResult())
	}
}

// prepared records a call's verdict from its Prepare activity.
func (x *extractor) prepared(t time.Time, s scheduled, a *historypb.ActivityTaskCompletedEventAttributes) {
	var in workflows.PrepareInput
	var p workflows.Prepared
	if x.decode(s.input, &in) != nil || x.decode(a.GetResult(), &p) != nil {
		return
	}
	c := x.calls[in.Call.ID]
	if c == nil {
		c = x.newCall(in.Call)
	}
	if i := slices.Index(x.batch, c); i >= 0 {
		x.batch = slices.Delete(x.batch, i, i+1)
	}
	kind := x.kindOf(c)
	if kind == KindEdit {
		c.approved = in.Call.Input
	}
	if x.verdictOf(t, c, p, kind, &in) {
		x.fresh = append(x.fresh, c)
	}
}

// notification records a notification's outcome.
func (x *extractor) notification(t time.Time, in workflows.NotifyInput, decision, reason string) {
	p := in.Pending
	x.record(Record{Time: t, CallID: p.CallID, Tool: p.Tool, Kind: KindNotification, Decision: decision,
		By: "worker", Reason: reason, Layer: "webhook", Notification: in.Type, ProposedInput: p.Input})
}

// notifyFailed records a notification activity that failed for good.
func (x *extractor) notifyFailed(t time.Time, scheduledID int64, why string) {
	in, ok := x.notes[scheduledID]
	if !ok {
		return
	}
	delete(x.notes, scheduledID)
	x.notification(t, in, NotificationUndelivered, why)
}

// inFlight takes the current run's notifications in flight, in the order
// they were sent.
func (x *extractor) inFlight() []workflows.NotifyInput {
	ids := make([]int64, 0, len(x.notes))
	for id := range x.notes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]workflows.NotifyInput, 0, len(ids))
	for _, id := range ids {
		out = append(out, x.notes[id])
	}
	clear(x.notes)
	return out
}

// resent settles the notifications in flight when the last run
// continued as new: those the new run carries (r.Notifying) are sent
// again by it, and their outcome comes from its history; the others were
// abandoned.
func (x *extractor) resent(r *workflows.Resume) {
	for _, in := range x.carried {
		if r != nil && slices.ContainsFunc(r.Notifying, func(c workflows.NotifyInput) bool { return sameNotification(c, in) }) {
			continue
		}
		run := x.run
		x.run = x.carriedRun
		x.notification(x.carriedAt, in, NotificationUndelivered, "the run continued as new before it was delivered")
		x.run = run
	}
	x.carried = nil
}

func sameNotification(a, b workflows.NotifyInput) bool {
	return a.Type == b.Type && a.WorkflowID == b.WorkflowID && a.Pending.CallID == b.Pending.CallID &&
		a.Pending.RequestedAt.Equal(b.Pending.RequestedAt) && a.Pending.Escalated == b.Pending.Escalated
}

// modelAnswer reads the tool calls of a model activity's result: a
// model.Response, or a result that carries the assistant message.
func (x *extractor) modelAnswer(t time.Time, result *commonpb.Payloads) {
	var r struct {
		ToolCalls []model.ToolCall `json:"tool_calls"`
		Message   model.Message    `json:"message"`
		Usage     model.Usage      `json:"usage"`
	}
	if err := x.decode(result, &r); err != nil {
		return
	}
	x.modelUsage(t, r.Usage)
	tcs := r.ToolCalls
	if len(tcs) == 0 {
		tcs = r.Message.ToolCalls
	}
	if len(tcs) == 0 {
		return
	}
	// A re-check round belongs to the step of the always-allow.
	x.batch, x.recheck, x.round = nil, false, nil
	for i, tc := range tcs {
		if tc.ID == "" { // the workflow numbers calls without ids
			tc.ID = "call_" + strconv.Itoa(x.ncalls+i+1)
		}
		x.batch = append(x.batch, x.newCall(tc))
	}
	x.ncalls += len(tcs)
}

// modelUsage records a model call's usage and the turn's total after it.
func (x *extractor) modelUsage(t time.Time, u model.Usage) {
	x.models++
	x.usage = x.usage.Add(u)
	total := x.usage
	name := x.turn.Model.Name
	if name == "" {
		name = x.turn.Model.Provider
	}
	x.record(Record{Time: t, CallID: "model_" + strconv.Itoa(x.models), Tool: name, Kind: KindModel, Decision: "used", By: "model",
		Reason: u.String() + "; turn: " + total.String(), Layer: "model", Usage: &u, TurnUsage: &total})
}

func (x *extractor) newCall(tc model.ToolCall) *call {
	c := &call{id: tc.ID, tool: tc.Name, proposed: tc.Input}
	if old := x.calls[tc.ID]; old != nil {
		x.seq = slices.DeleteFunc(x.seq, func(o *call) bool { return o == old })
	}
	x.calls[tc.ID] = c
	x.seq = append(x.seq, c)
	return c
}

// kindOf says what a verdict on an already known call is.
func (x *extractor) kindOf(c *call) string {
	switch {
	case !c.prepared:
		return KindPermission
	case c.edit:
		return KindEdit
	default:
		return KindRecheck
	}
}

// startAsks starts the clocks of the batch's asks once every call of
// the batch has its verdict: each deadline is the workflow time the call
// was parked at plus its timeout.
func (x *extractor) startAsks() {
	if len(x.batch) > 0 {
		return
	}
	for _, c := range x.fresh {
		if c.timeout > 0 {
			c.deadline = x.now.Add(c.timeout)
		}
	}
	x.fresh = nil
}

// scheduleDue finds the asks whose deadline has passed at a workflow
// task's start; they escalate in that task unless an answer comes first.
func (x *extractor) scheduleDue(now time.Time) {
	fired := x.fired
	x.fired = false
	var d []*call
	for _, c := range x.seq {
		if c.asked && !c.answered && !c.deadline.IsZero() && !c.deadline.After(now) {
			d = append(d, c)
		}
	}
	if len(d) == 0 && fired {
		// A deadline timer fired: its ask escalates even if the recorded
		// clock puts the deadline a moment later.
		var first *call
		for _, c := range x.seq {
			if c.asked && !c.answered && !c.deadline.IsZero() && c.deadline.Sub(now) < time.Second &&
				(first == nil || c.deadline.Before(first.deadline)) {
				first = c
			}
		}
		if first != nil {
			d = append(d, first)
		}
	}
	if len(d) > 0 {
		x.due = &due{at: now, calls: d}
	}
}

// flushDue records the escalations of the last workflow task.
func (x *extractor) flushDue() {
	d := x.due
	x.due = nil
	if d == nil {
		return
	}
	for _, c := range d.calls {
		if !c.asked || c.answered || c.deadline.IsZero() {
			continue
		}
		action := c.escalation
		if action == "" {
			action = workflows.EscalateDeny
		}
		reason := fmt.Sprintf("approval deadline passed after %s", c.timeout)
		switch action {
		case workflows.EscalateNotify:
			c.deadline = time.Time{} // keeps waiting, without a deadline
			reason += "; notified, still waiting"
		case workflows.EscalateAllow:
			c.answered = true
			reason += "; allowed"
		default:
			c.answered = true
			reason = fmt.Sprintf("approval timed out after %s", c.timeout)
		}
		r := Record{Time: d.at, CallID: c.id, Tool: c.tool, Kind: KindEscalation, Decision: string(action),
			By: "deadline", Path: PathEscalation, Reason: reason, Layer: "deadline", ProposedInput: c.proposed}
		x.record(r)
		if action != workflows.EscalateNotify {
			x.answered(c, r)
		}
	}
}

// answer records an approval or external result. Answers the workflow
// ignores (unknown or already answered calls) are skipped.
func (x *extractor) answer(t time.Time, name string, args *commonpb.Payloads, path string) error {
	switch name {
	case workflows.UpdateApprove:
		var a workflows.Approval
		if err := x.decode(args, &a); err != nil {
			return fmt.Errorf("decode approval: %w", err)
		}
		c := x.calls[a.CallID]
		if c == nil || !c.asked {
			return nil
		}
		// A call answered already takes no further answer, except an
		// Update the turn accepted after another approver's allow: a
		// partial answer of a two-person rule (quorum), whose every
		// approval is recorded; the latest is what came of the call.
		// (A signal is in history even when the turn refused it.)
		if c.answered && (path != PathUpdate || c.approvals == 0) {
			return nil
		}
		c.answered = true
		c.approvals++
		r := Record{Time: t, CallID: a.CallID, Tool: c.tool, Kind: KindApproval, Decision: string(a.Decision),
			By: a.By, Identity: a.Via, Path: path, Reason: a.Reason, Layer: "approver", Rules: a.Rules, ProposedInput: c.proposed}
		if a.Decision == workflows.DecisionAlwaysAllow {
			r.Scope, r.TTL, r.SingleUse = string(a.Scope), a.TTL, a.SingleUse
		}
		if a.Decision != workflows.DecisionDeny {
			r.ApprovedInput = c.waiting
			if len(a.Input) > 0 && string(a.Input) != string(c.waiting) {
				r.ApprovedInput, r.Edited = a.Input, true
				c.approved, c.edit = a.Input, true
			}
		}
		x.record(r)
		if c.approvals > 1 && c.dec != nil {
			r.WorkflowID, r.RunID = x.wf, x.run
			c.dec.Answer = &r
		} else {
			x.answered(c, r)
		}
		if a.Decision == workflows.DecisionAlwaysAllow {
			x.recheck = true
			rules := a.Rules
			if len(rules) == 0 {
				rules = c.suggestions
			}
			for _, s := range rules {
				if rule, err := permission.ParseRule(s, permission.Allow); err == nil {
					rule.Source = "session"
					x.addSession(rule)
				}
			}
		}
	case workflows.UpdateExternalResult:
		var r workflows.ExternalResult
		if err := x.decode(args, &r); err != nil {
			return fmt.Errorf("decode external result: %w", err)
		}
		c := x.calls[r.CallID]
		if c == nil || !c.external || c.answered {
			return nil
		}
		c.answered = true
		d := "completed"
		if r.IsError {
			d = "error"
		}
		x.record(Record{Time: t, CallID: r.CallID, Tool: c.tool, Kind: KindExternal, Decision: d,
			By: r.By, Identity: r.Via, Path: path, Reason: firstLine(r.Content), Layer: "external", ProposedInput: c.proposed})
	}
	return nil
}

// lamarker is a local-activity marker of a prepare or tool call.
type lamarker struct {
	id     int
	t      time.Time
	replay time.Time
	typ    string
	result *commonpb.Payloads
}

// markers handles a run of marker events: the local activities of one
// workflow task, sorted back into the order they were requested.
func (x *extractor) markers(evs []*historypb.HistoryEvent) {
	ms := x.localMarkers(evs)
	// The markers of one task are recorded together; their records share
	// the time of the last one, so they keep the order of the calls.
	var at time.Time
	for _, m := range ms {
		if m.t.After(at) {
			at = m.t
		}
	}
	for _, m := range ms {
		m.t = at
		if m.replay.After(x.now) {
			x.now = m.replay
		}
		x.marker(m)
	}
	x.startAsks()
	for _, e := range evs {
		x.redecisions(e)
	}
}

// redecisions records the re-decisions a side-effect marker holds (the
// turn's record of waiting calls decided again after a policy store
// change, with both versions). Other side effects do not decode as
// re-decisions and are skipped.
func (x *extractor) redecisions(e *historypb.HistoryEvent) {
	a := e.GetMarkerRecordedEventAttributes()
	if a.GetMarkerName() != "SideEffect" {
		return
	}
	var recs []workflows.Redecision
	if x.decode(a.GetDetails()["data"], &recs) != nil {
		return
	}
	t := e.GetEventTime().AsTime()
	for _, rd := range recs {
		c := x.calls[rd.CallID]
		if rd.CallID == "" || rd.To == 0 || c == nil || !c.asked {
			continue
		}
		reason := rd.Reason
		if rd.Behavior == permission.Deny && rd.Message != "" {
			reason = rd.Message
		}
		r := Record{Time: t, CallID: c.id, Tool: c.tool, Kind: KindLivePolicy, Decision: string(rd.Behavior),
			By: fmt.Sprintf("policy v%d", rd.To), Path: PathRule, Reason: reason, Layer: Layer(rd.Reason),
			PolicyVersion: rd.To, FromVersion: rd.From, Remembered: rd.Remembered, ProposedInput: c.proposed}
		if rd.Behavior != permission.Allow && rd.Behavior != permission.Deny {
			x.record(r) // still waiting, under the new version
			continue
		}
		if c.answered {
			// The re-check round of an always_allow took the same
			// verdict first: this record says it better.
			if !x.replaceRecheck(c) {
				continue
			}
		}
		c.answered = true
		x.record(r)
		r.WorkflowID, r.RunID = x.wf, x.run
		if c.dec != nil {
			c.dec.Answer = &r
		}
	}
}

// replaceRecheck drops c's recheck record (its answer by a rule added
// later), which a live-policy re-decision replaces; false when c was
// answered otherwise.
func (x *extractor) replaceRecheck(c *call) bool {
	for i := len(x.out) - 1; i >= 0; i-- {
		r := x.out[i]
		if r.CallID != c.id || r.WorkflowID != x.wf {
			continue
		}
		if r.Kind != KindRecheck {
			return false
		}
		x.out = slices.Delete(x.out, i, i+1)
		return true
	}
	return false
}

// localMarkers decodes the local-activity markers among evs that carry a
// result, sorted by activity id (the order they were requested in).
func (x *extractor) localMarkers(evs []*historypb.HistoryEvent) []lamarker {
	var ms []lamarker
	for _, e := range evs {
		a := e.GetMarkerRecordedEventAttributes()
		if a.GetMarkerName() != "LocalActivity" {
			continue
		}
		var data struct {
			ActivityID   string
			ActivityType string
			ReplayTime   time.Time
		}
		if err := x.decode(a.GetDetails()["data"], &data); err != nil {
			continue
		}
		if a.GetDetails()["result"] == nil {
			continue // a failed local activity has no result
		}
		m := lamarker{t: e.GetEventTime().AsTime(), replay: data.ReplayTime, typ: data.ActivityType, result: a.GetDetails()["result"]}
		m.id, _ = strconv.Atoi(data.ActivityID)
		ms = append(ms, m)
	}
	slices.SortStableFunc(ms, func(a, b lamarker) int { return a.id - b.id })
	return ms
}

// marker records what one local activity did: a model step, a verdict or
// a tool execution.
func (x *extractor) marker(m lamarker) {
	switch m.typ {
	case workflows.ActivityModelStep, workflows.ActivityModel:
		// A scripted model step runs as a local activity: its calls
		// start a step like a regular model activity's would.
		x.modelAnswer(m.t, m.result)
	case workflows.ActivityPrepare:
		var p workflows.Prepared
		if x.decode(m.result, &p) != nil {
			return
		}
		// Verdicts recorded with only the tool's flags name no tool.
		if c, kind := x.nextPrepared(p.Tool.Name); c != nil && x.verdict(m.t, c, p, kind) {
			x.fresh = append(x.fresh, c)
		}
	case workflows.ActivityTool:
		var out workflows.ToolOutput
		if x.decode(m.result, &out) != nil {
			return
		}
		if c := x.calls[out.Result.CallID]; c != nil {
			x.execution(m.t, c.id, c.tool, c.effective(), "local")
		}
		x.evidence(m.t, out.Result)
	}
}

// Decisions of connection records.
const (
	ConnectionAllowed = "allowed"
	ConnectionRefused = "refused"
)

// evidence records what a call's result says its processes did beyond
// their output: each connection the egress proxy saw
// (Metadata["connections"]) and the limit that ended the call
// (Metadata["limit"]). A connection is also kept with the call's
// verdict, for what-if.
func (x *extractor) evidence(t time.Time, res calls.Result) {
	conns := Connections(res.Metadata)
	limit, _ := res.Metadata["limit"].(string)
	if len(conns) == 0 && limit == "" {
		return
	}
	tool := res.Name
	c := x.calls[res.CallID]
	if c != nil && tool == "" {
		tool = c.tool
	}
	for _, conn := range conns {
		d := ConnectionRefused
		if conn.Allowed {
			d = ConnectionAllowed
		}
		x.record(Record{Time: t, CallID: res.CallID, Tool: tool, Kind: KindConnection, Decision: d, By: "proxy",
			Reason: conn.String(), Layer: "egress", Connection: &conn})
		if c != nil && c.dec != nil {
			c.dec.Connections = append(c.dec.Connections, conn)
		}
	}
	if limit != "" {
		x.record(Record{Time: t, CallID: res.CallID, Tool: tool, Kind: KindLimit, Decision: "ended", By: "worker",
			Reason: limit, Layer: "limits"})
	}
}

// Connections reads the connections of a tool result's metadata
// (Metadata["connections"]: []calls.Connection, or what a JSON round
// trip makes of it); entries that do not decode are left out.
func Connections(md map[string]any) []calls.Connection {
	v, ok := md["connections"]
	if !ok || v == nil {
		return nil
	}
	if cs, ok := v.([]calls.Connection); ok {
		return cs
	}
	list, ok := v.([]any)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil || json.Unmarshal(b, &list) != nil {
			return nil
		}
	}
	var out []calls.Connection
	for _, e := range list {
		b, err := json.Marshal(e)
		if err != nil {
			continue
		}
		var c calls.Connection
		if json.Unmarshal(b, &c) == nil && c.Host != "" {
			out = append(out, c)
		}
	}
	return out
}

// nextPrepared picks the call a marker's verdict is about.
func (x *extractor) nextPrepared(tool string) (*call, string) {
	if len(x.batch) > 0 && (tool == "" || x.batch[0].tool == tool) {
		c := x.batch[0]
		x.batch = x.batch[1:]
		return c, KindPermission
	}
	if x.recheck && x.round == nil {
		// One round re-checks every open ask once, in the order they
		// started waiting.
		for _, c := range x.seq {
			if c.asked && !c.answered {
				x.round = append(x.round, c)
			}
		}
		if len(x.round) == 0 {
			x.recheck = false
		}
	}
	if len(x.round) > 0 && (tool == "" || x.round[0].tool == tool) {
		c := x.round[0]
		x.round = x.round[1:]
		if len(x.round) == 0 {
			x.round, x.recheck = nil, false
		}
		return c, KindRecheck
	}
	for _, c := range x.seq {
		if c.edit && (tool == "" || c.tool == tool) {
			return c, KindEdit
		}
	}
	return nil, ""
}

// verdict records the engine's verdict on a call and reports whether the
// call now waits for an approval (its clock starts when the batch is in).
func (x *extractor) verdict(t time.Time, c *call, p workflows.Prepared, kind string) bool {
	return x.verdictOf(t, c, p, kind, nil)
}

// verdictOf is verdict, with the Prepare activity's input when it is
// recorded (verdicts of regular activities): the exact policy and
// workdir the call was decided under.
func (x *extractor) verdictOf(t time.Time, c *call, p workflows.Prepared, kind string, in *workflows.PrepareInput) bool {
	if c.tool == "" {
		c.tool = p.Tool.Name
	}
	r := Record{Time: t, CallID: c.id, Tool: c.tool, Kind: kind, By: "policy", Path: PathRule,
		Decision: string(p.Decision.Behavior), Reason: p.Decision.Reason, Layer: Layer(p.Decision.Reason), ProposedInput: c.proposed}
	if p.Invalid != "" {
		r.Decision, r.Reason, r.Layer = "invalid", p.Invalid, "validation"
	} else if p.Sandbox != nil {
		r.Sandbox = p.Sandbox.String()
	}
	if m := p.Remembered; m != nil {
		r.Remembered, r.RememberedBy = m.ID, m.By
	}
	r.PolicyVersion = p.PolicyVersion
	switch kind {
	case KindPermission:
		c.prepared = true
		c.waiting = c.proposed
		if len(p.Decision.UpdatedInput) > 0 {
			c.waiting = p.Decision.UpdatedInput
		}
		x.record(r)
		for _, s := range p.Decision.Suggestions {
			c.suggestions = append(c.suggestions, s.String())
		}
		x.decide(c, r, c.proposed, p, in)
		switch {
		case p.Invalid != "" || p.Decision.Behavior == permission.Deny:
		case p.Decision.Behavior == permission.Allow:
			if p.ToolFlags().External {
				c.external = true
			}
		default:
			c.asked = true
			c.escalation = p.Policy.Escalation
			c.timeout = x.timeout
			if c.timeout == 0 {
				c.timeout = p.Policy.ApprovalTimeout
			}
			if c.timeout == 0 {
				c.timeout = workflows.DefaultApprovalTimeout
			}
			return true
		}
	case KindRecheck:
		if p.Invalid == "" && p.Decision.Behavior == permission.Allow && c.asked && !c.answered {
			c.answered = true // resolved by the added rule
			x.record(r)
			x.answered(c, r)
		}
	case KindEdit:
		c.edit = false
		r.ApprovedInput = c.approved
		x.record(r)
		x.decide(c, r, c.approved, p, in)
	}
	return false
}

// Decided is one verdict of the permission engine recorded in a turn's
// history (a permission or edit record), with what re-deciding it needs
// and what came of it.
type Decided struct {
	// Verdict is the verdict's record.
	Verdict Record `json:"verdict"`
	// Input is the input decided: the model's, or an approver's edit.
	Input json.RawMessage `json:"input"`
	// Policy is the turn's policy as its run recorded it (the Prepare
	// activity's own, for turns whose checks run on a tool queue).
	Policy permission.Context `json:"policy"`
	// Session are the rules the turn's approvers had added (always
	// allow) when the call was decided.
	Session []permission.Rule `json:"session,omitempty"`
	// Workdir and Backend are where the call ran: the workdir the
	// verdict's sandbox profile names, else the turn's ("" means the
	// worker's default).
	Workdir string `json:"workdir,omitempty"`
	Backend string `json:"backend,omitempty"`
	// Tools are the tools the turn allows (empty: all).
	Tools []string `json:"tools,omitempty"`
	// Sandboxed says the call ran in the local kernel sandbox (its
	// recorded profile is neither off nor another backend's).
	Sandboxed bool `json:"sandboxed,omitempty"`
	// Answer is what came of an ASK: the approval (allow, always_allow,
	// deny; an edit is an allow with an approved input, and the verdict
	// on the edited input has that approval too), the escalation at the
	// deadline, or the re-check an added rule allowed. Nil for calls the
	// engine decided alone and for asks still waiting.
	Answer *Record `json:"answer,omitempty"`
	// Connections are the connections the call's processes asked the
	// egress proxy for when it ran on this verdict.
	Connections []calls.Connection `json:"connections,omitempty"`
}

// decide keeps the engine's verdict r on c's input for ExtractCalls.
func (x *extractor) decide(c *call, r Record, input json.RawMessage, p workflows.Prepared, in *workflows.PrepareInput) {
	r.WorkflowID, r.RunID = x.wf, x.run
	d := &Decided{Verdict: r, Input: input, Policy: x.turn.Permission, Session: slices.Clone(x.session),
		Workdir: x.turn.Workdir, Backend: x.turn.Backend, Tools: x.turn.Tools}
	if in != nil {
		d.Policy, d.Workdir, d.Backend, d.Tools = in.Permission, in.Env.Workdir, in.Env.Backend, in.Allowed
	}
	if s := p.Sandbox; s != nil {
		if len(s.Dirs) > 0 {
			d.Workdir = s.Dirs[0]
		}
		d.Sandboxed = !s.Off && (s.Backend == "" || s.Backend == "local")
	}
	if r.Kind == KindEdit && c.dec != nil && c.dec.Answer != nil {
		// The edited input runs on the approval that made it.
		a := *c.dec.Answer
		d.Answer = &a
	}
	c.dec = d
	x.decided = append(x.decided, d)
}

// answered records what came of c's latest verdict (the first answer).
func (x *extractor) answered(c *call, r Record) {
	if c.dec != nil && c.dec.Answer == nil {
		r.WorkflowID, r.RunID = x.wf, x.run
		c.dec.Answer = &r
	}
}

// addSession adds a rule the turn's approvers added (source "session"),
// once.
func (x *extractor) addSession(r permission.Rule) {
	if r.Source != "session" || slices.ContainsFunc(x.session, func(s permission.Rule) bool { return s.String() == r.String() }) {
		return
	}
	x.session = append(x.session, r)
}

// execution records a call that ran (once, even when a fast-path call is
// rescheduled as a regular activity).
func (x *extractor) execution(t time.Time, id, tool string, input json.RawMessage, layer string) {
	c := x.calls[id]
	if c == nil {
		c = x.newCall(model.ToolCall{ID: id, Name: tool, Input: input})
		c.prepared = true
	}
	if c.ran {
		return
	}
	c.ran = true
	x.record(Record{Time: t, CallID: id, Tool: c.tool, Kind: KindExecution, Decision: "ran", By: "worker",
		Layer: layer, ProposedInput: c.proposed, ApprovedInput: c.approved, EffectiveInput: input})
}

// Layer names the part of the policy that decided, from a decision's
// reason ("Rule: Bash(ls:*)" → "rule", "Read-only: ..." → "read-only").
func Layer(reason string) string {
	head, _, ok := strings.Cut(reason, ":")
	if !ok || head == "" || len(head) > 40 {
		if reason == "" {
			return "policy"
		}
		return "engine"
	}
	return strings.ToLower(strings.TrimSpace(head))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
