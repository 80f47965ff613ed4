package tests

import (
	"fmt"
	"os"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/bench"
)

// benchRunner returns a bench runner on a fresh worker of the shared
// server; this test process holds both, so its RSS is the worker's.
func benchRunner(t *testing.T) *bench.Runner {
	t.Helper()
	dir := t.TempDir()
	return &bench.Runner{
		Temporal: env.c, Client: startWorker(t, warden.Options{Workdir: dir}),
		Workdir: dir, WorkerPID: os.Getpid(), Prefix: "bench-" + t.Name(),
	}
}

func TestBenchOverhead(t *testing.T) {
	r := benchRunner(t)
	rep, err := r.Overhead(ctxT(t, 2*time.Minute), bench.OverheadConfig{Calls: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Variants) != 3 {
		t.Fatalf("variants = %+v", rep.Variants)
	}
	for _, v := range rep.Variants {
		if v.Calls != 3 || v.Call.N != 3 || v.Direct.N != 3 || v.ToolErrors != 0 ||
			v.Call.MedianMS <= 0 || v.Direct.MedianMS <= 0 || v.StepMS < v.Call.MinMS || v.Ratio <= 0 {
			t.Errorf("variant %s = %+v", v.Name, v)
		}
	}
	// The side-effecting variant really ran in the workspace.
	if _, err := os.Stat(r.Workdir + "/f"); err != nil {
		t.Errorf("touch f did not run: %v", err)
	}
}

func TestBenchThroughput(t *testing.T) {
	r := benchRunner(t)
	rep, err := r.Throughput(ctxT(t, 2*time.Minute), bench.ThroughputConfig{Turns: 3, Calls: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	if rep.Calls != 6 || rep.Turn.N != 3 || rep.Call.N != 6 || rep.CallsPerSec <= 0 ||
		rep.Worker.PID != os.Getpid() || rep.Worker.Peak < rep.Worker.Before || rep.Worker.After <= 0 {
		t.Errorf("report = %+v", rep)
	}
}

func TestBenchWaiting(t *testing.T) {
	r := benchRunner(t)
	ctx := ctxT(t, 3*time.Minute)
	rep, err := r.Waiting(ctx, bench.WaitingConfig{Turns: 4, Sample: 2, Concurrency: 2, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Turns != 4 || rep.ListPendingEntries < 4 || rep.Approve.N != 2 || rep.ApproveToTool.N != 2 ||
		rep.ApproveToResult.N != 2 || rep.Terminated != 2 || rep.Worker.After <= 0 {
		t.Errorf("report = %+v", rep)
	}
	// The worker is left idle: no turn of this run still runs.
	for i := range 4 {
		id := fmt.Sprintf("%s-waiting-%d", r.Prefix, i)
		d, err := env.c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if st := d.GetWorkflowExecutionInfo().GetStatus(); st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Errorf("%s still running after the bench", id)
		}
	}
}
