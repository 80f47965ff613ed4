package activities

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/telemetry"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// traced runs the Tool activity for call in the SDK's activity test
// environment with the tracing interceptor over tp (nil: no tracing at
// all, as a worker without telemetry) and warden's spans from a.
func traced(t testing.TB, a *Activities, tp *sdktrace.TracerProvider, call model.ToolCall) workflows.ToolOutput {
	t.Helper()
	return runTool(t, toolEnv(t, a, tp), a, call)
}

// toolEnv is the activity environment traced runs the Tool activity in.
func toolEnv(t testing.TB, a *Activities, tp *sdktrace.TracerProvider) *testsuite.TestActivityEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	if tp != nil {
		i, err := telemetry.Interceptor(tp)
		if err != nil {
			t.Fatal(err)
		}
		env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{i}})
	}
	env.RegisterActivity(a.Tool)
	return env
}

func runTool(t testing.TB, env *testsuite.TestActivityEnvironment, a *Activities, call model.ToolCall) workflows.ToolOutput {
	t.Helper()
	v, err := env.ExecuteActivity(a.Tool, workflows.ToolInput{Key: "turn/" + call.ID, Call: call})
	if err != nil {
		t.Fatal(err)
	}
	var out workflows.ToolOutput
	if err := v.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func traceActivities(t testing.TB, tp *sdktrace.TracerProvider, includeInputs bool) *Activities {
	t.Helper()
	reg, err := tools.NewRegistry(tools.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	a := &Activities{Tools: reg, Backends: map[string]backend.Backend{"local": &local.Backend{Workdir: wd, Unsandboxed: true}},
		DefaultBackend: "local", DefaultWorkdir: wd}
	if tp != nil {
		a.Trace = telemetry.NewTracing(tp, includeInputs, []string{"hunter2-secret"}, nil)
	}
	return a
}

// TestToolSpan: a tool call records warden.tool_call under the SDK's
// RunActivity span with its tool, backend, exit code and output size,
// and its process gets TRACEPARENT naming that span; the input is not
// recorded without include_inputs, and with it is redacted. The control,
// no tracing: no TRACEPARENT reaches the process.
func TestToolSpan(t *testing.T) {
	bash := model.ToolCall{ID: "c1", Name: "Bash", Input: json.RawMessage(`{"command":"echo tp=$TRACEPARENT; echo password=hunter2-secret"}`)}
	for _, include := range []bool{false, true} {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		out := traced(t, traceActivities(t, tp, include), tp, bash)
		spans := exp.GetSpans()
		var tool, run *tracetest.SpanStub
		for i := range spans {
			switch spans[i].Name {
			case telemetry.SpanToolCall:
				tool = &spans[i]
			case "RunActivity:Tool":
				run = &spans[i]
			}
		}
		if tool == nil || run == nil || tool.Parent.SpanID() != run.SpanContext.SpanID() {
			t.Fatalf("spans %+v: want warden.tool_call under RunActivity:Tool", spans)
		}
		attrs := map[string]string{}
		for _, kv := range tool.Attributes {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		if attrs["warden.tool"] != "Bash" || attrs["warden.call_id"] != "c1" || attrs["warden.tool.exit_code"] != "0" ||
			attrs["warden.tool.backend"] != "local" || attrs["warden.tool.output_bytes"] == "0" {
			t.Errorf("attributes %v", attrs)
		}
		if want := "tp=00-" + tool.SpanContext.TraceID().String() + "-" + tool.SpanContext.SpanID().String(); !strings.Contains(out.Result.Content, want) {
			t.Errorf("output %q lacks %s", out.Result.Content, want)
		}
		in, hasIn := attrs["warden.input"]
		switch {
		case !include && hasIn:
			t.Errorf("input recorded without include_inputs: %q", in)
		case include && (!strings.Contains(in, "echo tp=") || strings.Contains(in, "hunter2")):
			t.Errorf("include_inputs: input %q, want it recorded and redacted", in)
		}
	}
	out := traced(t, traceActivities(t, nil, false), nil, bash)
	if !strings.Contains(out.Result.Content, "tp=\n") {
		t.Errorf("control: output %q, want an empty TRACEPARENT", out.Result.Content)
	}
}

// BenchmarkToolCallTracing is the cost of tracing one tool call (the Read
// tool on a small file, through the Tool activity in the SDK's activity
// environment): off (no interceptor, no warden spans) and on (the SDK's
// interceptor and warden's span, batch-exported to an in-memory
// exporter). BENCHMARKS.md has the figures.
func BenchmarkToolCallTracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		var tp *sdktrace.TracerProvider
		if on {
			name = "on"
			tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewInMemoryExporter()))
		}
		b.Run(name, func(b *testing.B) {
			a := traceActivities(b, tp, false)
			f := filepath.Join(a.DefaultWorkdir, "small.txt")
			if err := os.WriteFile(f, []byte(strings.Repeat("line\n", 50)), 0o644); err != nil {
				b.Fatal(err)
			}
			call := model.ToolCall{ID: "r1", Name: "Read", Input: json.RawMessage(`{"file_path":"` + f + `"}`)}
			env := toolEnv(b, a, tp)
			for b.Loop() {
				if out := runTool(b, env, a, call); out.Result.IsError {
					b.Fatal(out.Result.Content)
				}
			}
		})
		if tp != nil {
			_ = tp.Shutdown(context.Background())
		}
	}
}
