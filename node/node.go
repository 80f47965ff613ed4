// Package node builds one warden node from its configuration and runs
// it: the embedded Temporal server or a connection to a cluster, the
// worker with its tools, backends, models and middleware, the metrics
// endpoint and the approvals inbox. cmd/worker parses the command line
// and calls Run (or RunServer); everything it starts is built here from
// package config's data.
package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/telemetry"
)

// Options are what a node takes beyond its configuration: the command
// line's switches that are not config keys.
type Options struct {
	// Pprof also serves Go's pprof profiles under /debug/pprof/ on the
	// metrics address.
	Pprof bool
	// ExitAfterDemo stops the node once the demo turn finished.
	ExitAfterDemo bool
	// Postgres runs the embedded server on PostgreSQL
	// (postgres://USER@HOST:PORT/DB) instead of SQLite.
	Postgres string
	// IP is the address the embedded server's frontend and UI bind
	// (default 127.0.0.1).
	IP string
	// HistoryShards is the embedded server's history shard count, fixed
	// when its database is created (0: 1 on SQLite, 4 on PostgreSQL).
	HistoryShards int
}

// node is one running node: what Run built so far, and how to stop it.
type node struct {
	cfg    config.Config
	o      Options
	reg    *prometheus.Registry
	logger *slog.Logger
	// stops are run in reverse order when the node stops.
	stops []func()

	// approvals is the pending-approvals gauge, fed by the SDK's metrics
	// and polled from visibility.
	approvals *metrics.Approvals
	copts     tclient.Options
	c         tclient.Client
	inboxKey  string
	// store is the content store the worker and the inbox share.
	store content.Store
	// tracer is the tracer provider when traces are on (nil: off).
	tracer *telemetry.Provider
}

func newNode(cfg config.Config, o Options) *node {
	// One Prometheus registry for warden's metrics and the SDK's own.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &node{cfg: cfg, o: o, reg: reg, approvals: metrics.NewApprovals(reg),
		logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
}

// onStop adds f to what stop runs.
func (n *node) onStop(f func()) { n.stops = append(n.stops, f) }

// stop releases everything the node started, last started first.
func (n *node) stop() {
	for _, f := range slices.Backward(n.stops) {
		f()
	}
}

// Run runs a worker node until ctx is done: with no temporal.address it
// first starts the embedded Temporal server (and its Web UI) in the same
// process, with one it joins that cluster. It serves metrics, the inbox
// when enabled, and runs the configured demo turn. A config that fails
// Check starts nothing. cfg is used as given: the environment's
// overrides (config.FromEnv, WARDEN_WEBHOOK_SECRET among them) are the
// caller's to apply, as config.Resolve does.
func Run(ctx context.Context, cfg config.Config, o Options) error {
	if err := Check(cfg); err != nil {
		return err
	}
	tuneGC()
	start := time.Now()
	// The SDK's workflow cache is shared by every worker of the process
	// and sized when the first one starts: the embedded server starts its
	// own system workers, so the size must be set before the server.
	sticky := cfg.Worker.StickyCacheSize
	if sticky == 0 {
		sticky = config.DefaultStickyCacheSize
	}
	worker.SetStickyWorkflowCacheSize(sticky)
	n := newNode(cfg, o)
	defer n.stop()
	if err := n.connect(ctx); err != nil {
		return err
	}
	w, workdir, err := n.worker(ctx)
	if err != nil {
		return err
	}
	if err := n.serve(ctx); err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	n.onStop(w.Stop)
	if err := applyBudgets(ctx, n.c, cfg); err != nil {
		return err
	}
	if err := n.applyTeam(ctx, n.c, cfg); err != nil {
		return err
	}
	fmt.Printf("worker           task queue %s, workdir %s (ready in %s)\n", cfg.Worker.TaskQueue, workdir, time.Since(start).Round(time.Millisecond))
	if cfg.Demo.Script != "" {
		if err := demo(ctx, n.c, cfg); err != nil {
			return err
		}
		if o.ExitAfterDemo {
			return nil
		}
	}
	<-ctx.Done()
	fmt.Println("stopping")
	return nil
}
