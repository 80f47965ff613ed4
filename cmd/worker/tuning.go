package main

import (
	"time"

	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden/config"
)

// workerOptions are the SDK worker's options from the config's worker
// section (BENCHMARKS.md measures the throughput levers among them).
func workerOptions(cfg config.Config) worker.Options {
	w := cfg.Worker
	o := worker.Options{
		MaxConcurrentActivityExecutionSize:     w.MaxConcurrentActivities,
		MaxConcurrentWorkflowTaskExecutionSize: w.MaxConcurrentWorkflowTasks,
		MaxConcurrentWorkflowTaskPollers:       w.WorkflowTaskPollers,
		MaxConcurrentActivityTaskPollers:       w.ActivityTaskPollers,
		DisableEagerActivities:                 w.DisableEagerActivities,
		// A restarted worker picks up its turns after ~1 s instead of the
		// default 5 s sticky schedule-to-start timeout.
		StickyScheduleToStartTimeout: time.Second,
	}
	if w.PollerAutoscaling {
		o.WorkflowTaskPollerBehavior = worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{})
		o.ActivityTaskPollerBehavior = worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{})
	}
	return o
}

// tuneClient applies the config's transport settings to the worker's
// client options: gRPC compression is off by default on the embedded
// server, where every request stays on loopback.
func tuneClient(o *tclient.Options, cfg config.Config) {
	comp := cfg.Worker.GRPCCompression
	if comp == "" {
		comp = "gzip"
		if cfg.Temporal.Address == "" {
			comp = "none"
		}
	}
	if comp == "none" {
		o.ConnectionOptions.GrpcCompression = &tclient.GrpcCompressionNone{}
	}
}
