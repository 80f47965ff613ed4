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
	how := "answer"
	switch {
	case a.External != nil:
		how = "external"
	case a.Denied != "":
		how, attrs = "policy_change", append(attrs, attrDecision.String(string(DecisionDeny)))
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
		attrs = append(attrs, attrDecision.String(string(DecisionAllow)))
	case a.Approval != nil:
		ap := a.Approval
		attrs = append(attrs, attrBy.String(ap.By), attrVia.String(ap.Via), attrDecision.String(string(ap.Decision)))
		switch {
		case ap.By == "deadline":
			how = "escalation"
		case ap.Via != "":
			how = ap.Via
		}
	}
	workflowSpan(ctx, SpanApprovalWait, p.RequestedAt, now, append(attrs, attrHow.String(how))...)
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
