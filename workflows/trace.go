package workflows

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/workflow"
)

// Span names of the spans the turn workflow records itself (the
// activities record the model calls, decisions and tool calls).
const (
	// SpanApprovalWait covers a call's wait for an answer, from the
	// moment it parked to the answer (across continue-as-new runs and
	// worker restarts), recorded once, when the answer is applied.
	SpanApprovalWait = "warden.approval_wait"
	// SpanContinueAsNew marks the end of a run that continues as new.
	SpanContinueAsNew = "warden.continue_as_new"
)

// Attribute keys of the workflow's spans.
const (
	attrTurn       = attribute.Key("warden.turn")
	attrCallID     = attribute.Key("warden.call_id")
	attrTool       = attribute.Key("warden.tool")
	attrKind       = attribute.Key("warden.approval.kind")
	attrBy         = attribute.Key("warden.approval.by")
	attrVia        = attribute.Key("warden.approval.via")
	attrHow        = attribute.Key("warden.approval.how")
	attrDecision   = attribute.Key("warden.approval.decision")
	attrWaitSecs   = attribute.Key("warden.approval.wait_seconds")
	attrHistoryLen = attribute.Key("warden.history_length")
	attrPending    = attribute.Key("warden.pending")
	attrRun        = attribute.Key("warden.run_id")
)

// workflowSpan records a finished span from start to end under the SDK
// interceptor's span of this run (RunWorkflow), through the tracer
// provider that span came from. It records nothing while the workflow
// replays (a task replayed after a restart or a sticky-cache eviction
// re-runs this code) nor when the worker has no tracing interceptor:
// the span is emitted by the one task that first ran this code. start
// and end are workflow times, so a wait of days is one span of days,
// recorded when it ends.
func workflowSpan(ctx workflow.Context, name string, start, end time.Time, attrs ...attribute.KeyValue) {
	if workflow.IsReplaying(ctx) {
		return
	}
	parent, ok := temporalotel.SpanFromWorkflowContext(ctx)
	if !ok || !parent.SpanContext().IsValid() {
		return
	}
	info := workflow.GetInfo(ctx)
	attrs = append(attrs, attrTurn.String(info.WorkflowExecution.ID), attrRun.String(info.WorkflowExecution.RunID))
	pctx := trace.ContextWithSpan(context.Background(), parent)
	_, span := parent.TracerProvider().Tracer("github.com/wardenhq/warden").Start(pctx, name,
		trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(end))
}

// answerHow says how an answered wait ended: how (escalation at a
// deadline, remembered, policy_change, rule, external, else the answer's
// via, else answer) and the decision ("" unknown), the values of the
// wait's span and of MetricApprovalAnswers. live says the turn follows a
// policy store, whose re-decisions answer with a.Auto.
func answerHow(a AnswerState, live bool) (how, decision string) {
	how = "answer"
	switch {
	case a.External != nil:
		how, decision = "external", "result"
	case a.Denied != "":
		how, decision = "policy_change", string(DecisionDeny)
	case a.Auto != "":
		// Released by a re-decision: a remembered approval, a policy
		// store's change, or a rule an approver added.
		switch {
		case strings.HasPrefix(a.Auto, "Remembered:"):
			how = "remembered"
		case live:
			how = "policy_change"
		default:
			how = "rule"
		}
		decision = string(DecisionAllow)
	case a.Approval != nil:
		decision = string(a.Approval.Decision)
		switch {
		case a.Approval.By == "deadline":
			how = "escalation"
		case a.Approval.Via != "":
			how = a.Approval.Via
		}
	}
	return how, decision
}

// approvalSpan records the wait of p, answered by a, as one span; live
// says the turn follows a policy store, whose re-decisions answer with
// a.Auto.
func approvalSpan(ctx workflow.Context, p Pending, a AnswerState, live bool) {
	if workflow.IsReplaying(ctx) {
		return
	}
	now := workflow.Now(ctx)
	attrs := []attribute.KeyValue{attrCallID.String(p.CallID), attrTool.String(p.Tool), attrKind.String(string(p.Kind)),
		attrWaitSecs.Float64(now.Sub(p.RequestedAt).Seconds())}
	how, decision := answerHow(a, live)
	if ap := a.Approval; ap != nil {
		attrs = append(attrs, attrBy.String(ap.By), attrVia.String(ap.Via))
	}
	if decision != "" && a.External == nil {
		attrs = append(attrs, attrDecision.String(decision))
	}
	workflowSpan(ctx, SpanApprovalWait, p.RequestedAt, now, append(attrs, attrHow.String(how))...)
}

// answerMetric counts an answered wait by its kind, how it was answered
// (the channel: the answer's via, or escalation, remembered, rule,
// policy_change, external) and decision (MetricApprovalAnswers).
// Metrics are skipped while the workflow replays; they emit no command.
func answerMetric(ctx workflow.Context, p Pending, a AnswerState, live bool) {
	how, decision := answerHow(a, live)
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"kind": string(p.Kind), "how": how, "decision": decision}).
		Counter(MetricApprovalAnswers).Inc(1)
}

// continueAsNewSpan marks the run's continue-as-new.
func continueAsNewSpan(ctx workflow.Context, pending int) {
	if workflow.IsReplaying(ctx) {
		return
	}
	now := workflow.Now(ctx)
	workflowSpan(ctx, SpanContinueAsNew, now, now,
		attrHistoryLen.Int(workflow.GetInfo(ctx).GetCurrentHistoryLength()), attrPending.Int(pending))
}
