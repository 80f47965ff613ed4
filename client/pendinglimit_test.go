package client

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/wardenhq/warden/workflows"
)

// pageSizes records the page sizes of the visibility listings.
type pageSizes struct {
	*fakeTemporal
	sizes []int32
}

func (f *pageSizes) ListWorkflow(ctx context.Context, r *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.sizes = append(f.sizes, r.GetPageSize())
	return f.fakeTemporal.ListWorkflow(ctx, r)
}

// TestListPendingLimit: a limit reads one page of that many turns and
// keeps the server's order; no limit reads them all, oldest first.
func TestListPendingLimit(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	newer := workflows.NewPendingIndex([]workflows.Pending{{Kind: workflows.PendingApproval, CallID: "c2", Tool: "Bash", Input: json.RawMessage(`{}`), RequestedAt: t0.Add(time.Minute)}})
	older := workflows.NewPendingIndex([]workflows.Pending{{Kind: workflows.PendingApproval, CallID: "c1", Tool: "Bash", Input: json.RawMessage(`{}`), RequestedAt: t0}})
	f := &pageSizes{fakeTemporal: &fakeTemporal{execs: []*workflowpb.WorkflowExecutionInfo{execWith(t, "newer", &newer), execWith(t, "older", &older)}}}
	cl := New(f, "q")
	es, err := cl.ListPendingLimit(context.Background(), Filter{}, 7)
	if err != nil || len(es) != 2 || es[0].CallID != "c2" || len(f.sizes) != 1 || f.sizes[0] != 7 {
		t.Fatalf("limit 7: %+v %v, page sizes %v", es, err, f.sizes)
	}
	f.sizes = nil
	es, err = cl.ListPendingLimit(context.Background(), Filter{}, 0)
	if err != nil || len(es) != 2 || es[0].CallID != "c1" || len(f.sizes) != 1 || f.sizes[0] != listAllPageSize {
		t.Fatalf("no limit: %+v %v, page sizes %v", es, err, f.sizes)
	}
}
