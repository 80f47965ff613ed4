package std

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/tools"
)

type benchTool struct{}

func (benchTool) Info() tools.Info { return tools.Info{Name: "Bench"} }

func (benchTool) Call(context.Context, *tools.Env, json.RawMessage) tools.Stream {
	return tools.Single(tools.Chunk{Text: "a result of moderate length, with a token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB in it\n"})
}

func runChain(b *testing.B, mws []middleware.Middleware) {
	h := middleware.Chain(mws...)(middleware.Terminal)
	call := middleware.Call{ID: "c1", Tool: benchTool{}, Input: json.RawMessage(`{"command":"echo hi"}`), Env: &tools.Env{}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tools.Collect(h(ctx, call)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNoMiddleware is the baseline: the tool called directly.
func BenchmarkNoMiddleware(b *testing.B) { runChain(b, nil) }

// BenchmarkFullStack runs the standard stack: logging (with redaction),
// metrics, a concurrency limit and output reduction.
func BenchmarkFullStack(b *testing.B) {
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	mws, err := Build(config.Middleware{
		Logging: &config.Logging{Level: "info"},
		Metrics: true,
		Limits:  map[string]int{"*": 16},
		Reduce:  map[string]config.Reduce{"*": {MaxChars: 30000}},
	}, prometheus.NewRegistry(), logger)
	if err != nil {
		b.Fatal(err)
	}
	runChain(b, mws)
}
