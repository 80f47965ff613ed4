// Extraction: the walk over a chain's events, in order, that turns them
// into records. This file holds the walk, the state it keeps of every call
// and the events it reads; what each kind of event records is in
// verdicts.go, answers.go, notes.go (escalations and budget answers, as
// recorded), evidence.go and notifications.go; the readings of runs
// recorded before those records are in legacy.go and
// legacyescalations.go.

package audit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// Extract turns one run's history events into records.
func Extract(workflowID string, evs []*historypb.HistoryEvent) ([]Record, error) {
	return ExtractChain(workflowID, []Run{{Events: evs}})
}

// ExtractChain turns the histories of a continue-as-new chain, oldest
// run first, into records. Calls waiting across a continue-as-new keep
// their state from one run to the next.
//
// A verdict (a Prepare result, recorded as a local-activity marker or,
// in tool-queue turns, a completed activity) is matched to its call by
// the call id it names, and its record reports the layer recorded with
// it. Verdicts recorded before Prepare results named their call and
// layer are matched by order and their layer read from the reason
// (legacy.go).
//
// A run with the "audit-notes" marker is read from what it recorded for
// the audit: each verdict's kind, each escalation and each budget
// approval's answer (notes.go). What such a run lacks fails the reading
// with ErrNotRecorded; runs recorded before keep the legacy reading,
// which works out verdict kinds and re-simulates deadlines.
func ExtractChain(workflowID string, runs []Run) ([]Record, error) {
	x, err := extract(workflowID, runs)
	if err != nil {
		return nil, err
	}
	return x.out, nil
}

// linked is ExtractChain with the records numbered and chained (Link),
// checked against the chain heads the runs recorded as they ended
// (CheckHeads).
func linked(workflowID string, runs []Run) ([]Record, error) {
	x, err := extract(workflowID, runs)
	if err != nil {
		return nil, err
	}
	if err := Link(x.out); err != nil {
		return nil, err
	}
	if err := CheckHeads(workflowID, x.out, x.heads); err != nil {
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
	old := x.oldHeads(runs)
	for ri, run := range runs {
		x.run = run.ID
		x.oldExec = old[ri]
		x.noted, x.budgetOpen = false, nil
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
				if err := x.markers(evs[i:j]); err != nil {
					return nil, fmt.Errorf("run %s event %d: %w", run.ID, e.GetEventId(), err)
				}
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

// extractor walks histories in order.
type extractor struct {
	wf, run string
	// team is the version of the policy store's team the turn knew last
	// (from its verdicts and the store's notices): answers are checked
	// against it.
	team    int
	dc      converter.DataConverter
	timeout time.Duration // the turn's own approval timeout (0: per call)
	calls   map[string]*call
	seq     []*call // calls in arrival order
	ncalls  int
	batch   []*call // calls of the last model answer not yet prepared
	// legacy is the order matcher's state, for verdicts that name no
	// call (legacy.go).
	legacy legacyOrder
	sched  map[int64]scheduled
	// now is the workflow's clock: the start of the current workflow
	// task, or a later local-activity result's replay time.
	now time.Time
	// fresh are asks of the current batch; they start waiting at the
	// workflow time all the batch's verdicts are in.
	fresh []*call
	fired bool // a timer fired since the last workflow task started
	due   *due
	// noted says the current run records verdict kinds, escalations and
	// budget answers (its "audit-notes" marker was read): it is read
	// from those records (notes.go), not the legacy way.
	noted bool
	// heads are the chain heads the runs recorded as they ended.
	heads []workflows.HeadNote
	// oldExec: the run is read as the audit before HeadFormat 2 read
	// it (no cut_off or retried records), because it or a later run
	// recorded a chain head that audit computed (oldHeads).
	oldExec bool
	// windowAsks are the calls an enforced window limit made ask
	// (workflows.WindowNote), by call id, until their verdict is read:
	// the call then waits for an approval as an ask does.
	windowAsks []string
	// budgetPaths are the paths of budget approvals' answers, by call
	// id; budgetOpen the answers accepted in the last workflow task
	// (checkBudgetNotes); escalatedIDs the calls whose escalation was
	// read.
	budgetPaths  map[string]string
	budgetOpen   []string
	escalatedIDs map[string]bool
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
		if err := x.checkBudgetNotes(); err != nil {
			return err
		}
		x.flushDue()
		x.now = t
		x.startAsks()
		x.scheduleDue(t)
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		if err := x.checkNoted(false); err != nil {
			return err
		}
		// The last task continued as new before escalating: the next run
		// decides.
		x.due = nil
		// Notifications in flight: the next run may send them again.
		x.carried, x.carriedAt, x.carriedRun = x.inFlight(), t, x.run
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
			if err := x.checkNoted(true); err != nil {
				return err
			}
		}
		for _, in := range x.inFlight() {
			x.notification(t, in, NotificationUndelivered, "the turn ended before it was delivered")
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
		a := e.GetActivityTaskFailedEventAttributes()
		x.notifyFailed(t, a.GetScheduledEventId(), a.GetFailure().GetMessage())
		x.toolEnded(t, a.GetScheduledEventId(), "failed", a.GetFailure().GetMessage())
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
		a := e.GetActivityTaskTimedOutEventAttributes()
		x.notifyFailed(t, a.GetScheduledEventId(), "timed out: "+a.GetFailure().GetMessage())
		if d, why := cutOff(a.GetFailure()); d != "" && !x.oldExec {
			x.toolEnded(t, a.GetScheduledEventId(), d, why)
		} else {
			x.toolEnded(t, a.GetScheduledEventId(), "timed_out", a.GetFailure().GetMessage())
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
		// Written when the last attempt ends: an attempt after the
		// first says how the one before it ended.
		a := e.GetActivityTaskStartedEventAttributes()
		if a.GetAttempt() > 1 && a.GetLastFailure() != nil && !x.oldExec {
			x.toolRetried(t, a.GetScheduledEventId(), a.GetAttempt(), a.GetLastFailure())
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
		id := e.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()
		x.notifyFailed(t, id, "canceled")
		x.toolEnded(t, id, "interrupted", "stopped while it ran (an interrupt or a cancel of the turn)")
	case enumspb.EVENT_TYPE_TIMER_FIRED:
		x.fired = true
	case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
		return x.indexed(e)
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		x.activityScheduled(t, e)
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
		return x.activityCompleted(t, e.GetActivityTaskCompletedEventAttributes())
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
			x.team = max(x.team, in.Resume.TeamVersion)
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
func (x *extractor) activityCompleted(t time.Time, a *historypb.ActivityTaskCompletedEventAttributes) error {
	s, ok := x.sched[a.GetScheduledEventId()]
	if !ok {
		return nil
	}
	switch s.name {
	case workflows.ActivityPrepare:
		return x.prepared(t, s, a)
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

// markers handles a run of marker events: the version markers and audit
// notes first (a note is recorded where it happens, before the local
// activities of its task complete), then the local activities of one
// workflow task, sorted back into the order they were requested, then
// the re-decisions.
func (x *extractor) markers(evs []*historypb.HistoryEvent) error {
	for _, e := range evs {
		x.version(e)
		x.note(e)
	}
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
		if err := x.marker(m); err != nil {
			return err
		}
	}
	x.startAsks()
	for _, e := range evs {
		x.redecisions(e)
	}
	return nil
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
func (x *extractor) marker(m lamarker) error {
	switch m.typ {
	case workflows.ActivityModelStep, workflows.ActivityModel:
		// A scripted model step runs as a local activity: its calls
		// start a step like a regular model activity's would.
		x.modelAnswer(m.t, m.result)
	case workflows.ActivityPrepare:
		var p workflows.Prepared
		if x.decode(m.result, &p) != nil {
			return nil
		}
		c, kind, err := x.verdictCall(p.CallID, p.Kind, p.Tool.Name)
		if err != nil {
			return err
		}
		if c != nil && x.verdict(m.t, c, p, kind) {
			x.fresh = append(x.fresh, c)
		}
	case workflows.ActivityTool:
		var out workflows.ToolOutput
		if x.decode(m.result, &out) != nil {
			return nil
		}
		if c := x.calls[out.Result.CallID]; c != nil {
			x.execution(m.t, c.id, c.tool, c.effective(), "local")
		}
		x.evidence(m.t, out.Result)
	}
	return nil
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
	x.batch, x.legacy = nil, legacyOrder{}
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
