package activities

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/telemetry"
)

// startSpan starts one of warden's spans under the activity's span (the
// SDK interceptor's RunActivity), or returns ctx and nil when tracing is
// off: the callers' end functions then do nothing.
func (a *Activities) startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if a.Trace == nil {
		return ctx, nil
	}
	attrs = append(attrs, telemetry.AttrTurn.String(activity.GetInfo(ctx).WorkflowExecution.ID))
	return a.Trace.Tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

// endSpan records err (an infrastructure failure) and ends span.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// modelSpan starts the span of a model call.
func (a *Activities) modelSpan(ctx context.Context, provider, name string) (context.Context, func(model.Response, error)) {
	ctx, span := a.startSpan(ctx, telemetry.SpanModelCall, telemetry.AttrProvider.String(provider), telemetry.AttrModel.String(name))
	if span == nil {
		return ctx, func(model.Response, error) {}
	}
	return ctx, func(resp model.Response, err error) {
		u := resp.Usage
		finish := "stop"
		if len(resp.ToolCalls) > 0 {
			finish = "tool_calls"
		}
		if err != nil {
			finish = "error"
		}
		span.SetAttributes(telemetry.AttrInputTokens.Int(u.InputTokens), telemetry.AttrOutputTokens.Int(u.OutputTokens),
			telemetry.AttrCachedTokens.Int(u.CacheReadTokens), telemetry.AttrCacheWrite.Int(u.CacheWriteTokens),
			telemetry.AttrFinish.String(finish), telemetry.AttrToolCalls.Int(len(resp.ToolCalls)))
		if u.Cost != nil {
			span.SetAttributes(telemetry.AttrCost.Float64(*u.Cost))
		}
		a.Trace.SetText(span, telemetry.AttrOutput, resp.Text)
		endSpan(span, err)
	}
}

// decisionSpan records the permission decision of call id as a span.
func (a *Activities) decisionSpan(ctx context.Context, tool, id, input string, v permission.Verdict) {
	_, span := a.startSpan(ctx, telemetry.SpanDecision, telemetry.AttrTool.String(tool), telemetry.AttrCallID.String(id),
		telemetry.AttrVerdict.String(string(v.Behavior)), telemetry.AttrLayer.String(string(v.Layer)),
		telemetry.AttrMode.String(string(v.Mode)), telemetry.AttrReadOnly.Bool(v.ReadOnly))
	if span == nil {
		return
	}
	if v.Rule != nil {
		span.SetAttributes(telemetry.AttrRule.String(v.Rule.String()))
	}
	a.Trace.SetText(span, telemetry.AttrInput, input)
	span.End()
}

// toolSpan starts the span of a tool call; its end records the result.
func (a *Activities) toolSpan(ctx context.Context, call model.ToolCall, backendName string, sbx *calls.Sandbox, attempt int32) (context.Context, func(calls.Result, error)) {
	ctx, span := a.startSpan(ctx, telemetry.SpanToolCall, telemetry.AttrTool.String(call.Name), telemetry.AttrCallID.String(call.ID),
		telemetry.AttrBackend.String(backendName), telemetry.AttrSandbox.String(sbx.String()), telemetry.AttrAttempt.Int(int(attempt)))
	if span == nil {
		return ctx, func(calls.Result, error) {}
	}
	a.Trace.SetText(span, telemetry.AttrInput, string(call.Input))
	return ctx, func(r calls.Result, err error) {
		size := r.Size
		if size == 0 {
			size = len(r.Content)
		}
		span.SetAttributes(telemetry.AttrState.String(string(r.State)), telemetry.AttrBytes.Int(size))
		if code, ok := r.Metadata["exit_code"]; ok {
			if n, err := strconv.Atoi(toString(code)); err == nil {
				span.SetAttributes(telemetry.AttrExitCode.Int(n))
			}
		}
		if r.IsError {
			span.SetStatus(codes.Error, "tool error")
		}
		a.Trace.SetText(span, telemetry.AttrOutput, r.Content)
		endSpan(span, err)
	}
}

func toString(v any) string {
	switch n := v.(type) {
	case int:
		return strconv.Itoa(n)
	case int64:
		return strconv.FormatInt(n, 10)
	case float64:
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	return ""
}
