package backend

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceEnv is TRACEPARENT (and TRACESTATE when there is one) of the span
// in ctx, the W3C trace context of the tool call that runs a process, so
// that a tool that traces joins the turn's trace. Nil when ctx carries
// no span (tracing off): the variables are the call's, never the
// worker's own environment.
func TraceEnv(ctx context.Context) []string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	var env []string
	for _, k := range []string{"traceparent", "tracestate"} {
		if v := carrier.Get(k); v != "" {
			env = append(env, strings.ToUpper(k)+"="+v)
		}
	}
	return env
}
