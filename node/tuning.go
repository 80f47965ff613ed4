package node

import (
	"os"
	"runtime/debug"
	"time"

	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden/config"
)

// gcPercent is the garbage collector's target the worker runs with when
// GOGC is not set: the heap may grow 50% above the live set between
// collections instead of Go's default 100%. With 10,000 waiting turns it
// lowered the process's RSS (server included) by ~30 MB at the same
// throughput (BENCHMARKS.md); GOGC in the environment overrides it.
const gcPercent = 50

// tuneGC sets gcPercent unless the environment sets GOGC.
func tuneGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(gcPercent)
	}
}

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
		// A running tool's heartbeat (each second) reaches the server
		// within a second rather than 80% of its 10 s heartbeat timeout,
		// so an interrupt stops its process within about a second.
		MaxHeartbeatThrottleInterval: time.Second,
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
