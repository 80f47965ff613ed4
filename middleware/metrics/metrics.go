// Package metrics is a tool-call middleware that records the size of
// each call's output: warden_tool_output_bytes{tool}, defined in the
// top-level metrics package. Call durations and outcomes are recorded by
// the tool activity (warden_tool_call_duration_seconds{tool, outcome}),
// around the whole middleware chain, so this middleware does not time
// calls itself. Tool names are those of registered tools, so the labels
// stay bounded.
package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/tools"
)

// Config configures the metrics middleware.
type Config struct {
	// Registerer receives the metrics. When nil, a private registry is
	// used: the middleware works but nothing exposes its metrics.
	Registerer prometheus.Registerer `yaml:"-"`
}

// New registers the metrics and returns the middleware. Registering
// twice on one registry is an error.
func New(cfg Config) (middleware.Middleware, error) {
	reg := cfg.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	size, err := metrics.NewToolOutput(reg)
	if err != nil {
		return nil, err // "metrics: ..."; std.Build adds "middleware metrics: "
	}
	return func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, c middleware.Call) tools.Stream {
			return func(yield func(tools.Chunk, error) bool) {
				n := 0
				defer func() { size.Observe(c.Name(), n) }()
				for ch, err := range next(ctx, c) {
					n += len(ch.Text)
					for _, d := range ch.Data {
						n += len(d.Data)
					}
					if !yield(ch, err) {
						return
					}
				}
			}
		}
	}, nil
}
