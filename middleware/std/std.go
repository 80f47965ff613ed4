// Package std builds warden's standard tool-call middleware chain from
// configuration: logging (outermost), metrics, concurrency limits and
// output reduction (innermost). Logging's durations therefore include the
// time a call waits for a slot, and logging and metrics see the reduced
// output.
package std

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/middleware/limit"
	"github.com/wardenhq/warden/middleware/logging"
	"github.com/wardenhq/warden/middleware/metrics"
	"github.com/wardenhq/warden/middleware/reduce"
)

// Config selects and configures the standard middlewares. The zero value
// builds an empty chain.
type Config struct {
	// Logging enables call logging when set.
	Logging *logging.Config `yaml:"logging"`
	// Limits caps in-flight calls per tool name ("*": every other tool).
	Limits map[string]int `yaml:"limits"`
	// Reduce shortens outputs per tool name ("*": every other tool).
	Reduce map[string]reduce.Config `yaml:"reduce"`
	// Metrics records warden_tool_output_bytes (call durations are
	// recorded by the tool activity, whatever this says).
	Metrics bool `yaml:"metrics"`
}

// Build returns the configured middlewares in order, first outermost:
// logging, metrics, limit, reduce. Metrics register on reg; logging
// writes to logger unless its config names a logger (nil:
// slog.Default()).
func Build(cfg Config, reg prometheus.Registerer, logger *slog.Logger) ([]middleware.Middleware, error) {
	var out []middleware.Middleware
	if cfg.Logging != nil {
		lc := *cfg.Logging
		if lc.Logger == nil {
			lc.Logger = logger
		}
		mw, err := logging.New(lc)
		if err != nil {
			return nil, fmt.Errorf("middleware logging: %w", err)
		}
		out = append(out, mw)
	}
	if cfg.Metrics {
		if reg == nil {
			return nil, fmt.Errorf("middleware metrics: no registerer")
		}
		mw, err := metrics.New(metrics.Config{Registerer: reg})
		if err != nil {
			return nil, fmt.Errorf("middleware metrics: %w", err)
		}
		out = append(out, mw)
	}
	if len(cfg.Limits) > 0 {
		mw, err := limit.New(limit.Config{PerTool: cfg.Limits})
		if err != nil {
			return nil, fmt.Errorf("middleware limits: %w", err)
		}
		out = append(out, mw)
	}
	if len(cfg.Reduce) > 0 {
		mw, err := reduce.ByTool(cfg.Reduce)
		if err != nil {
			return nil, fmt.Errorf("middleware reduce: %w", err)
		}
		out = append(out, mw)
	}
	return out, nil
}
