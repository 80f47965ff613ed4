package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/workflows"
)

// runHistoryLength is the number of events of one run and whether it
// closed by continuing as new.
func runHistoryLength(t *testing.T, id, runID string) (int, bool) {
	t.Helper()
	n, continued := 0, false
	it := env.c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		n++
		continued = e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
	}
	return n, continued
}

// TestWaitingTurnFloodedContinuesAsNew: a waiting turn flooded with 500
// rejected answers (signals with a stale hash, external results for a
// call that waits for an approval, and rejected Updates) continues as
// new when its history passes its bound, while it still waits, and stays
// answerable: the next run lists the same call with the same hash and
// takes the real answer.
func TestWaitingTurnFloodedContinuesAsNew(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 120*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: f1, name: Bash, input: {command: \"touch flooded\"}}]\n  - text: answered after the flood\n")
	id := "flood-" + fmt.Sprint(time.Now().UnixNano())
	const bound = 200
	first, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}, ContinueAsNewAfter: bound})
	if err != nil {
		t.Fatal(err)
	}
	listed := waitPending(t, cl, id, 1)
	for i := range 500 {
		switch i % 10 {
		case 9:
			if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "f1", Hash: "stale", Decision: workflows.DecisionAllow}); !errors.Is(err, client.ErrRejected) {
				t.Fatalf("update %d with a stale hash: %v, want rejected", i, err)
			}
		case 1, 3, 5:
			if err := env.c.SignalWorkflow(ctx, id, "", workflows.SignalExternalResult, workflows.ExternalResult{CallID: "f1", Hash: "stale", Content: "bogus"}); err != nil {
				t.Fatal(err)
			}
		default:
			if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "f1", Hash: "stale", Decision: workflows.DecisionAllow}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The first run continues as new once its history passes the bound.
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := env.c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if d.GetWorkflowExecutionInfo().GetExecution().GetRunId() != first.GetRunID() {
			break
		}
		if time.Now().After(deadline) {
			n, _ := runHistoryLength(t, id, first.GetRunID())
			t.Fatalf("the waiting turn did not continue as new: its run has %d events, its bound is %d", n, bound)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n, continued := runHistoryLength(t, id, first.GetRunID()); !continued {
		t.Fatalf("first run (%d events) did not close by continuing as new", n)
	} else {
		t.Logf("first run: %d events against a bound of %d", n, bound)
	}
	// Rejected answers still arriving go to the latest run; once they
	// are handled the turn still waits for the same call.
	ps := waitPending(t, cl, id, 1)
	if ps[0].CallID != "f1" || ps[0].Hash != listed[0].Hash {
		t.Fatalf("pending after continuing as new = %+v, want f1 with hash %s", ps, listed[0].Hash)
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "f1", Hash: ps[0].Hash, Decision: workflows.DecisionAllow, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "answered after the flood" {
		t.Fatalf("answer = %q", res.Answer)
	}
	if _, err := os.Stat(filepath.Join(workdir, "flooded")); err != nil {
		t.Fatalf("the approved call did not run: %v", err)
	}
}
