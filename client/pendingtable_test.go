package client

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
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

// TestWritePendingTable: one line per entry with how long it has waited,
// its input and what the agent said on one line, and why it asks.
func TestWritePendingTable(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := PendingEntry{WorkflowID: "t1", Preview: `{"command":"touch made.txt"}`}
	e.Kind, e.CallID, e.Tool, e.Hash, e.RequestedAt = workflows.PendingApproval, "c1", "Bash", "h1", now.Add(-90*time.Second)
	e.Reason, e.Suggestions, e.Context = "Mode: default", []string{"Bash(touch:*)"}, "I will\ncreate the file"
	var out bytes.Buffer
	if err := WritePendingTable(&out, []PendingEntry{e}, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "WORKFLOW  CALL  KIND") {
		t.Fatalf("table:\n%s", out.String())
	}
	want := `t1 c1 approval Bash 1m30s h1 {"command":"touch made.txt"} Mode: default [Bash(touch:*)] I will create the file`
	if got := strings.Join(strings.Fields(lines[1]), " "); got != want {
		t.Errorf("row = %q, want %q", got, want)
	}
}

// TestWhy: the REASON column says why a call asks, not only the layer
// that decided.
func TestWhy(t *testing.T) {
	e := PendingEntry{}
	e.Tool, e.Reason = "Bash", "Mode: default"
	e.Message = "Permission required for Bash (mode default, no allow rule matches): not read-only: `touch` changes files (in `touch made.txt`)"
	if got := why(e); got != "not read-only: `touch` changes files (in `touch made.txt`)" {
		t.Errorf("why = %q", got)
	}
	e.Message = "Permission required for Bash: the write of /etc/x is outside the working directories"
	if got := why(e); got != "the write of /etc/x is outside the working directories" {
		t.Errorf("why = %q", got)
	}
	e.Message = ""
	if got := why(e); got != "Mode: default" {
		t.Errorf("why without a message = %q", got)
	}
	if got := oneLine("a\n  b "+strings.Repeat("c", 20), 10); got != "a b ccc..." {
		t.Errorf("oneLine = %q", got)
	}
}
