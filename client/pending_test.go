package client

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/wardenhq/warden/workflows"
)

// fakeTemporal answers ListWorkflow with fixed executions and QueryWorkflow
// (QueryPending) from per-turn entries, recording what it was asked.
type fakeTemporal struct {
	tclient.Client
	execs   []*workflowpb.WorkflowExecutionInfo
	pending map[string][]workflows.Pending

	mu      sync.Mutex
	queries []string
	query   string
}

func (f *fakeTemporal) ListWorkflow(_ context.Context, r *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.mu.Lock()
	f.query = r.GetQuery()
	f.mu.Unlock()
	return &workflowservice.ListWorkflowExecutionsResponse{Executions: f.execs}, nil
}

func (f *fakeTemporal) QueryWorkflow(_ context.Context, id, _, name string, _ ...any) (converter.EncodedValue, error) {
	f.mu.Lock()
	f.queries = append(f.queries, id+" "+name)
	f.mu.Unlock()
	p, err := converter.GetDefaultDataConverter().ToPayloads(f.pending[id])
	if err != nil {
		return nil, err
	}
	return encoded{p}, nil
}

type encoded struct{ p *commonpb.Payloads }

func (e encoded) HasValue() bool { return true }
func (e encoded) Get(v any) error {
	return converter.GetDefaultDataConverter().FromPayloads(e.p, v)
}

func execWith(t *testing.T, id string, idx *workflows.PendingIndex) *workflowpb.WorkflowExecutionInfo {
	ex := &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: "run-" + id}}
	if idx != nil {
		p, err := converter.GetDefaultDataConverter().ToPayload(*idx)
		if err != nil {
			t.Fatal(err)
		}
		ex.Memo = &commonpb.Memo{Fields: map[string]*commonpb.Payload{workflows.MemoPending: p}}
	}
	return ex
}

func TestListPendingPageReadsIndexAndQueriesOnlyTurnsWithout(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	short := workflows.Pending{Kind: workflows.PendingApproval, CallID: "c1", Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`), RequestedAt: t0, Hash: "h1"}
	longIn := json.RawMessage(`{"command":"echo ` + strings.Repeat("é", 200) + `"}`)
	long := workflows.Pending{Kind: workflows.PendingApproval, CallID: "c2", Tool: "Bash", Input: longIn, RequestedAt: t0.Add(time.Minute), Hash: "h2"}
	ext := workflows.Pending{Kind: workflows.PendingExternal, CallID: "x1", Tool: "Deploy", Input: json.RawMessage(`{}`), RequestedAt: t0, Hash: "h3"}
	idx := workflows.NewPendingIndex([]workflows.Pending{short, long})
	more := workflows.NewPendingIndex([]workflows.Pending{ext})
	more.More = true
	f := &fakeTemporal{
		execs: []*workflowpb.WorkflowExecutionInfo{
			execWith(t, "indexed", &idx), execWith(t, "legacy", nil), execWith(t, "more", &more),
		},
		pending: map[string][]workflows.Pending{"legacy": {ext}, "more": {ext, short}},
	}
	cl := New(f, "q")
	page, err := cl.ListPendingPage(context.Background(), Filter{}, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if page.Turns != 3 || page.Queried != 2 || len(page.Entries) != 5 {
		t.Fatalf("page = %+v", page)
	}
	if strings.Join(f.queries, ",") == "" || strings.Contains(strings.Join(f.queries, ","), "indexed") {
		t.Fatalf("queries = %v: want only the turns without a complete index", f.queries)
	}
	e := page.Entries[0]
	if e.WorkflowID != "indexed" || e.RunID != "run-indexed" || e.Hash != "h1" || e.Preview != `{"command":"ls"}` || e.Truncated {
		t.Errorf("short entry = %+v", e)
	}
	e = page.Entries[1]
	if !e.Truncated || len(e.Input) != 0 || len(e.Preview) > workflows.PreviewBytes || !strings.HasPrefix(string(longIn), e.Preview) || e.Hash != "h2" {
		t.Errorf("long entry = %+v (preview %d bytes)", e, len(e.Preview))
	}
	if e = page.Entries[2]; e.WorkflowID != "legacy" || e.CallID != "x1" || e.Preview != "{}" {
		t.Errorf("legacy entry = %+v", e)
	}

	// Filters go into the query; entries are filtered too.
	page, err = cl.ListPendingPage(context.Background(), Filter{Tool: "Bash", Kind: workflows.PendingApproval, Workflow: "ind", OlderThan: 30 * time.Second}, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{workflows.SAPendingTools + " = 'Bash'", "WorkflowId STARTS_WITH 'ind'", workflows.SAWaitingSince + " < '"} {
		if !strings.Contains(f.query, want) {
			t.Errorf("query %q lacks %q", f.query, want)
		}
	}
	for _, e := range page.Entries {
		if e.Tool != "Bash" || e.Kind != workflows.PendingApproval {
			t.Errorf("filtered entry = %+v", e)
		}
	}

	all, err := cl.ListPending(context.Background(), Filter{})
	if err != nil || len(all) != 5 {
		t.Fatalf("ListPending = %d entries, %v", len(all), err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].RequestedAt.Before(all[i-1].RequestedAt) {
			t.Fatalf("not oldest first: %+v", all)
		}
	}
}

func TestNewPendingIndexBounds(t *testing.T) {
	var ps []workflows.Pending
	for i := range 60 {
		ps = append(ps, workflows.Pending{CallID: string(rune('a' + i%26)), Message: strings.Repeat("m", 500)})
	}
	idx := workflows.NewPendingIndex(ps)
	if !idx.More || len(idx.Entries) != 50 {
		t.Fatalf("entries %d more %v", len(idx.Entries), idx.More)
	}
	if len(idx.Entries[0].Message) != workflows.PreviewBytes {
		t.Fatalf("message %d bytes", len(idx.Entries[0].Message))
	}
}
