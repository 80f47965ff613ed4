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

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/middleware/limit"
	"github.com/wardenhq/warden/middleware/logging"
	"github.com/wardenhq/warden/middleware/metrics"
	"github.com/wardenhq/warden/middleware/reduce"
)

// Build returns the middlewares of the config file's middleware section
// in order, first outermost: logging, metrics, limit, reduce. The zero
// value builds an empty chain. Metrics register on reg; logging writes
// to logger (nil: slog.Default()).
func Build(cfg config.Middleware, reg prometheus.Registerer, logger *slog.Logger) ([]middleware.Middleware, error) {
	var out []middleware.Middleware
	if cfg.Logging != nil {
		mw, err := logging.New(logging.Config{Logging: *cfg.Logging, Logger: logger})
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
		mw, err := reduce.ByTool(reduceConfigs(cfg.Reduce))
		if err != nil {
			return nil, fmt.Errorf("middleware reduce: %w", err)
		}
		out = append(out, mw)
	}
	return out, nil
}

// reduceConfigs are the reduce middleware's per-tool configurations of rs.
func reduceConfigs(rs map[string]config.Reduce) map[string]reduce.Config {
	out := make(map[string]reduce.Config, len(rs))
	for name, r := range rs {
		out[name] = reduce.Config(r)
	}
	return out
}
