// Package audit reconstructs who decided what about each tool call of a
// warden turn from the turn's Temporal history: the permission engine's
// verdicts (recorded as warden.Prepare local-activity markers), approvals
// and denials (the "approve" update or signal), external results, and
// approvals that timed out.
package audit

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

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
	// KindApproval is a human's answer to an ASK.
	KindApproval = "approval"
	// KindExternal is an external result (AskUser answers included).
	KindExternal = "external"
	// KindTimeout is an ASK denied because its deadline passed.
	KindTimeout = "timeout"
)

// Record is one decision about one call.
type Record struct {
	Time       time.Time `json:"time"`
	WorkflowID string    `json:"workflow_id"`
	CallID     string    `json:"call_id"`
	Tool       string    `json:"tool"`
	Kind       string    `json:"kind"`
	// Decision is allow, ask, deny or invalid (permission), allow,
	// always_allow or deny (approval), completed or error (external).
	Decision string `json:"decision"`
	// By is "policy" for engine verdicts, the approver for answers, and
	// "deadline" for timeouts.
	By     string   `json:"by"`
	Reason string   `json:"reason,omitempty"`
	Layer  string   `json:"layer"`
	Rules  []string `json:"rules,omitempty"`
	// Via says how an answer arrived (update or signal).
	Via string `json:"via,omitempty"`
}

// Workflow reads one workflow's history (latest run) and extracts its
// records in history order.
func Workflow(ctx context.Context, c tclient.Client, workflowID string) ([]Record, error) {
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var evs []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		evs = append(evs, e)
	}
	return Extract(workflowID, evs)
}

// Since extracts the records of every turn that ran at or after since
// (started, closed or still running) and returns those not older than
// since, oldest first.
func Since(ctx context.Context, c tclient.Client, since time.Time) ([]Record, error) {
	ts := since.UTC().Format(time.RFC3339Nano)
	q := fmt.Sprintf("WorkflowType = '%s' AND (StartTime >= '%s' OR CloseTime >= '%s' OR ExecutionStatus = 'Running')",
		workflows.TurnWorkflow, ts, ts)
	var out []Record
	var token []byte
	seen := map[string]bool{}
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token, PageSize: 500})
		if err != nil {
			return nil, fmt.Errorf("list turns: %w", err)
		}
		for _, ex := range resp.GetExecutions() {
			id := ex.GetExecution().GetWorkflowId()
			if seen[id] {
				continue
			}
			seen[id] = true
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
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b Record) int { return a.Time.Compare(b.Time) })
	return out, nil
}

// call is a tool call the turn knows of.
type call struct {
	id, tool string
	asked    bool // waiting for an approval
	external bool // waiting for an external result
	answered bool
}

// extractor walks a history in order.
type extractor struct {
	wf        string
	dc        converter.DataConverter
	timeout   time.Duration
	calls     map[string]*call
	seq       []string // call ids in arrival order
	ncalls    int
	batch     []*call // calls of the last model answer, in order, not yet prepared
	recheck   bool    // an always_allow was accepted: the next verdicts are rechecks
	askedAt   map[string]time.Time
	lastFired time.Time
	out       []Record
}

// Extract turns a workflow's history events into records. Verdicts are
// matched to calls in the order the workflow prepares them: the calls of
// each model answer in order (local activities of one batch are sorted
// by activity id, which follows that order), then re-checks of open asks
// after an always-allow, then edited inputs.
func Extract(workflowID string, evs []*historypb.HistoryEvent) ([]Record, error) {
	x := &extractor{wf: workflowID, dc: converter.GetDefaultDataConverter(), timeout: workflows.DefaultApprovalTimeout,
		calls: map[string]*call{}, askedAt: map[string]time.Time{}}
	for i := 0; i < len(evs); i++ {
		e := evs[i]
		if e.GetEventType() == enumspb.EVENT_TYPE_MARKER_RECORDED {
			j := i
			for j < len(evs) && evs[j].GetEventType() == enumspb.EVENT_TYPE_MARKER_RECORDED {
				j++
			}
			if err := x.markers(evs[i:j]); err != nil {
				return nil, err
			}
			i = j - 1
			continue
		}
		if err := x.event(e); err != nil {
			return nil, fmt.Errorf("event %d: %w", e.GetEventId(), err)
		}
	}
	return x.out, nil
}

func (x *extractor) decode(p *commonpb.Payloads, v any) error {
	if p == nil || len(p.GetPayloads()) == 0 {
		return fmt.Errorf("no payload")
	}
	return x.dc.FromPayload(p.GetPayloads()[0], v)
}

func (x *extractor) event(e *historypb.HistoryEvent) error {
	t := e.GetEventTime().AsTime()
	switch e.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
		var in workflows.TurnInput
		if err := x.decode(e.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err == nil && in.ApprovalTimeout > 0 {
			x.timeout = in.ApprovalTimeout
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		a := e.GetActivityTaskScheduledEventAttributes()
		if a.GetActivityType().GetName() == workflows.ActivityModel {
			var in workflows.ModelInput
			if err := x.decode(a.GetInput(), &in); err == nil {
				x.timeouts(t, in.Request.Messages)
			}
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
		// Model answers carry the next calls. Only model results decode
		// into a response with tool calls.
		var resp model.Response
		if err := x.decode(e.GetActivityTaskCompletedEventAttributes().GetResult(), &resp); err == nil && len(resp.ToolCalls) > 0 {
			x.batch = x.batch[:0]
			for i, tc := range resp.ToolCalls {
				if tc.ID == "" { // the workflow numbers calls without ids
					tc.ID = "call_" + strconv.Itoa(x.ncalls+i+1)
				}
				c := &call{id: tc.ID, tool: tc.Name}
				if x.calls[tc.ID] == nil {
					x.seq = append(x.seq, tc.ID)
				}
				x.calls[tc.ID] = c
				x.batch = append(x.batch, c)
			}
			x.ncalls += len(resp.ToolCalls)
		}
	case enumspb.EVENT_TYPE_TIMER_FIRED:
		x.lastFired = t
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
		a := e.GetWorkflowExecutionUpdateAcceptedEventAttributes()
		req := a.GetAcceptedRequest()
		return x.answer(t, req.GetInput().GetName(), req.GetInput().GetArgs(), "update")
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
		a := e.GetWorkflowExecutionSignaledEventAttributes()
		return x.answer(t, a.GetSignalName(), a.GetInput(), "signal")
	}
	return nil
}

// answer records an approval or external result. Signals the workflow
// would reject (unknown or already answered calls) are skipped.
func (x *extractor) answer(t time.Time, name string, args *commonpb.Payloads, via string) error {
	switch name {
	case workflows.UpdateApprove:
		var a workflows.Approval
		if err := x.decode(args, &a); err != nil {
			return fmt.Errorf("decode approval: %w", err)
		}
		c := x.calls[a.CallID]
		if c == nil || !c.asked || c.answered {
			return nil
		}
		c.answered = true
		x.out = append(x.out, Record{Time: t, WorkflowID: x.wf, CallID: a.CallID, Tool: c.tool, Kind: KindApproval,
			Decision: string(a.Decision), By: a.By, Reason: a.Reason, Layer: "approver", Rules: a.Rules, Via: via})
		if a.Decision == workflows.DecisionAlwaysAllow {
			x.recheck = true
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
		x.out = append(x.out, Record{Time: t, WorkflowID: x.wf, CallID: r.CallID, Tool: c.tool, Kind: KindExternal,
			Decision: d, By: r.By, Reason: firstLine(r.Content), Layer: "external", Via: via})
	}
	return nil
}

// timeouts finds asks denied by their deadline in the messages the turn
// sends to the model next.
func (x *extractor) timeouts(t time.Time, msgs []model.Message) {
	for _, m := range msgs {
		if m.Role != model.RoleTool {
			continue
		}
		c := x.calls[m.ToolCallID]
		if c == nil || !c.asked || c.answered || !strings.Contains(m.Content, " by deadline: ") {
			continue
		}
		c.answered = true
		when := t
		if !x.lastFired.IsZero() && x.lastFired.After(x.askedAt[c.id]) {
			when = x.lastFired
		}
		x.out = append(x.out, Record{Time: when, WorkflowID: x.wf, CallID: c.id, Tool: c.tool, Kind: KindTimeout,
			Decision: string(workflows.DecisionDeny), By: "deadline",
			Reason: fmt.Sprintf("approval timed out after %s", x.timeout), Layer: "deadline"})
	}
}

type marker struct {
	id   int
	t    time.Time
	prep workflows.Prepared
}

// markers handles a run of marker events: the prepare verdicts of one
// workflow task, sorted back into the order they were requested.
func (x *extractor) markers(evs []*historypb.HistoryEvent) error {
	var ms []marker
	for _, e := range evs {
		a := e.GetMarkerRecordedEventAttributes()
		if a.GetMarkerName() != "LocalActivity" {
			continue
		}
		var data struct {
			ActivityID   string
			ActivityType string
		}
		if err := x.decode(a.GetDetails()["data"], &data); err != nil || data.ActivityType != workflows.ActivityPrepare {
			continue
		}
		m := marker{t: e.GetEventTime().AsTime()}
		m.id, _ = strconv.Atoi(data.ActivityID)
		if err := x.decode(a.GetDetails()["result"], &m.prep); err != nil {
			continue // a failed local activity has no result
		}
		ms = append(ms, m)
	}
	slices.SortStableFunc(ms, func(a, b marker) int { return a.id - b.id })
	for _, m := range ms {
		x.verdict(m)
	}
	return nil
}

func (x *extractor) verdict(m marker) {
	p := m.prep
	tool := p.Tool.Name
	kind := KindPermission
	var c *call
	if len(x.batch) > 0 && (tool == "" || x.batch[0].tool == tool) {
		c, x.batch = x.batch[0], x.batch[1:]
	} else {
		// A re-check after an always-allow, or an edited input: the
		// oldest open ask of the same tool.
		kind = KindRecheck
		for _, id := range x.order() {
			o := x.calls[id]
			if o.asked && !o.answered && o.tool == tool {
				c = o
				break
			}
		}
		if c == nil {
			c = &call{tool: tool}
		}
	}
	if c.tool == "" {
		c.tool = tool
	}
	r := Record{Time: m.t, WorkflowID: x.wf, CallID: c.id, Tool: c.tool, Kind: kind, By: "policy",
		Decision: string(p.Decision.Behavior), Reason: p.Decision.Reason, Layer: Layer(p.Decision.Reason)}
	switch {
	case p.Invalid != "":
		r.Decision, r.Reason, r.Layer = "invalid", p.Invalid, "validation"
	case kind == KindRecheck:
		if p.Decision.Behavior == permission.Allow && c.asked && !c.answered {
			c.answered = true // resolved by the added rule
		}
	case p.Decision.Behavior == permission.Allow && p.Tool.External:
		c.external = true
	case p.Decision.Behavior != permission.Allow && p.Decision.Behavior != permission.Deny:
		c.asked = true
		x.askedAt[c.id] = m.t
	}
	if kind == KindRecheck && p.Decision.Behavior != permission.Allow {
		return // still waiting: nothing new was decided
	}
	x.out = append(x.out, r)
}

// order lists known call ids in the order the model made them.
func (x *extractor) order() []string { return x.seq }

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
