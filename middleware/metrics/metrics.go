// Package metrics is a tool-call middleware that records per-call
// Prometheus metrics: warden_tool_duration_seconds{tool, outcome} and
// warden_tool_output_bytes{tool}. Outcomes are success, error (the tool
// reported an error) and failure (an infrastructure error). Tool names
// are those of registered tools, so the labels stay bounded.
package metrics

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/tools"
)

// Config configures the metrics middleware.
type Config struct {
	// Registerer receives the metrics. When nil, a private registry is
	// used: the middleware works but nothing exposes its metrics.
	Registerer prometheus.Registerer `yaml:"-"`
}

// Outcomes, the values of the outcome label.
const (
	OutcomeSuccess = "success"
	OutcomeError   = "error"
	OutcomeFailure = "failure"
)

// New registers the metrics and returns the middleware. Registering
// twice on one registry is an error.
func New(cfg Config) (middleware.Middleware, error) {
	reg := cfg.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "warden_tool_duration_seconds",
		Help:    "Wall time of tool calls through the middleware chain, by tool and outcome (success, error, failure).",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
	}, []string{"tool", "outcome"})
	size := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "warden_tool_output_bytes",
		Help:    "Size of tool call outputs (text and data blocks) in bytes.",
		Buckets: prometheus.ExponentialBuckets(64, 4, 10),
	}, []string{"tool"})
	for _, c := range []prometheus.Collector{duration, size} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	return func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, c middleware.Call) tools.Stream {
			return func(yield func(tools.Chunk, error) bool) {
				name := c.Name()
				start := time.Now()
				outcome, n := OutcomeSuccess, 0
				defer func() {
					duration.WithLabelValues(name, outcome).Observe(time.Since(start).Seconds())
					size.WithLabelValues(name).Observe(float64(n))
				}()
				for ch, err := range next(ctx, c) {
					switch {
					case err != nil:
						outcome = OutcomeFailure
					case ch.IsError && outcome == OutcomeSuccess:
						outcome = OutcomeError
					}
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
