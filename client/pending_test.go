package client

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	querypb "go.temporal.io/api/query/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/wardenhq/warden/workflows"
)

// fakeTemporal answers ListWorkflow with fixed executions and the
// pending query (QueryWorkflow, QueryWorkflowWithOptions) from per-turn
// entries, recording what it was asked. A turn in closed is not running
// but has that status; like the server, the fake rejects a query to a
// paused turn, and to a closed one when the query rejects runs that are
// not open, and answers any other query to a closed turn (as a worker
// replaying it would) with no entries. A turn in errs fails every query
// with that error.
type fakeTemporal struct {
	tclient.Client
	execs   []*workflowpb.WorkflowExecutionInfo
	pending map[string][]workflows.Pending
	closed  map[string]enumspb.WorkflowExecutionStatus
	errs    map[string]error

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
	if err := f.errs[id]; err != nil {
		return nil, err
	}
	entries := f.pending[id]
	if st, ok := f.closed[id]; ok && st == enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED {
		return nil, errors.New("query rejected: the workflow is paused")
	} else if ok {
		entries = nil
	}
	p, err := converter.GetDefaultDataConverter().ToPayloads(entries)
	if err != nil {
		return nil, err
	}
	return encoded{p}, nil
}

func (f *fakeTemporal) QueryWorkflowWithOptions(ctx context.Context, r *tclient.QueryWorkflowWithOptionsRequest) (*tclient.QueryWorkflowWithOptionsResponse, error) {
	if st, ok := f.closed[r.WorkflowID]; ok && (st == enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED || r.QueryRejectCondition == enumspb.QUERY_REJECT_CONDITION_NOT_OPEN) {
		f.mu.Lock()
		f.queries = append(f.queries, r.WorkflowID+" "+r.QueryType)
		f.mu.Unlock()
		return &tclient.QueryWorkflowWithOptionsResponse{QueryRejected: &querypb.QueryRejected{Status: st}}, nil
	}
	v, err := f.QueryWorkflow(ctx, r.WorkflowID, r.RunID, r.QueryType, r.Args...)
	if err != nil {
		return nil, err
	}
	return &tclient.QueryWorkflowWithOptionsResponse{QueryResult: v}, nil
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

// TestListPendingPageQueryErrors: a turn without an index whose pending
// query fails is skipped only when it has really finished (its run is
// closed, or the server no longer knows it); any other failure of the
// query is the listing's error, not a turn silently left out.
func TestListPendingPageQueryErrors(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	open := workflows.Pending{Kind: workflows.PendingApproval, CallID: "c1", Tool: "Bash", Input: json.RawMessage(`{}`), RequestedAt: t0, Hash: "h1"}
	stale := workflows.Pending{Kind: workflows.PendingApproval, CallID: "old", Tool: "Bash", Input: json.RawMessage(`{}`), RequestedAt: t0, Hash: "h0"}
	f := &fakeTemporal{
		execs:   []*workflowpb.WorkflowExecutionInfo{execWith(t, "waiting", nil), execWith(t, "completed", nil), execWith(t, "gone", nil)},
		pending: map[string][]workflows.Pending{"waiting": {open}, "completed": {stale}},
		closed:  map[string]enumspb.WorkflowExecutionStatus{"completed": enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED},
		errs:    map[string]error{"gone": serviceerror.NewNotFound("workflow execution not found")},
	}
	cl := New(f, "q")
	page, err := cl.ListPendingPage(context.Background(), Filter{}, 10, nil)
	if err != nil {
		t.Fatalf("finished turns: %v", err)
	}
	if page.Queried != 3 || len(page.Entries) != 1 || page.Entries[0].WorkflowID != "waiting" || page.Entries[0].CallID != "c1" {
		t.Fatalf("page = %+v, want only the waiting turn's entry", page)
	}

	for _, c := range []struct {
		name string
		err  error
		// paused, when set, makes the turn paused instead of failing.
		paused bool
	}{
		{"deadline", serviceerror.NewDeadlineExceeded("context deadline exceeded"), false},
		{"context deadline", context.DeadlineExceeded, false},
		{"unavailable", serviceerror.NewUnavailable("frontend unavailable"), false},
		{"permission denied", serviceerror.NewPermissionDenied("the key is not known to this server", ""), false},
		{"query failed", serviceerror.NewQueryFailed("query handler panicked"), false},
		{"paused", nil, true},
	} {
		f.errs = map[string]error{"waiting": c.err}
		f.closed = map[string]enumspb.WorkflowExecutionStatus{"completed": enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED}
		if c.paused {
			f.errs = nil
			f.closed["waiting"] = enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED
		}
		page, err := cl.ListPendingPage(context.Background(), Filter{}, 10, nil)
		switch {
		case err == nil:
			t.Errorf("%s: the failed query was taken for a finished turn: page %+v", c.name, page)
		case c.err != nil && !errors.Is(err, c.err):
			t.Errorf("%s: err = %v, want it wrapped", c.name, err)
		case !strings.Contains(err.Error(), "waiting"):
			t.Errorf("%s: err = %v does not name the turn", c.name, err)
		}
		if _, err := cl.ListPending(context.Background(), Filter{}); err == nil {
			t.Errorf("%s: ListPending hid the failed query", c.name)
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

func TestWordClip(t *testing.T) {
	long := strings.Repeat("word ", 39) + "add the directory to the tail" // > PreviewBytes
	clipped := workflows.NewPendingIndex([]workflows.Pending{{Message: long}}).Entries[0].Message
	got := WordClip(clipped)
	if !strings.HasSuffix(got, "…") || strings.HasSuffix(strings.TrimSuffix(got, "…"), " t") {
		t.Errorf("WordClip(%q) = %q", clipped, got)
	}
	if !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("WordClip changed the text: %q", got)
	}
	// Control: a short message is left alone.
	if s := "Permission required for Bash"; WordClip(s) != s {
		t.Errorf("WordClip(%q) = %q", s, WordClip(s))
	}
}

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
