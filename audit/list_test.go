package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/workflows"
)

// listClient lists pages of turns and fails every history read, counting
// the reads; the rest of tclient.Client is not implemented.
type listClient struct {
	tclient.Client
	pages [][]string

	mu      sync.Mutex
	queries []string
	reads   []string
}

func (l *listClient) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	l.mu.Lock()
	l.queries = append(l.queries, req.GetQuery())
	l.mu.Unlock()
	page := 0
	if len(req.GetNextPageToken()) > 0 {
		var err error
		if page, err = strconv.Atoi(string(req.GetNextPageToken())); err != nil {
			return nil, err
		}
	}
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	for _, id := range l.pages[page] {
		resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id}})
	}
	if page+1 < len(l.pages) {
		resp.NextPageToken = []byte(fmt.Sprint(page + 1))
	}
	return resp, nil
}

// ListArchivedWorkflow answers as a server without visibility archival.
func (l *listClient) ListArchivedWorkflow(context.Context, *workflowservice.ListArchivedWorkflowExecutionsRequest) (*workflowservice.ListArchivedWorkflowExecutionsResponse, error) {
	return nil, serviceerror.NewInvalidArgument("Cluster is not configured for visibility archival.")
}

func (l *listClient) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return nil, errors.New("not described")
}

func (l *listClient) GetWorkflowHistory(_ context.Context, id, _ string, _ bool, _ enumspb.HistoryEventFilterType) tclient.HistoryEventIterator {
	l.mu.Lock()
	l.reads = append(l.reads, id)
	l.mu.Unlock()
	return failingHistory{}
}

type failingHistory struct{}

func (failingHistory) HasNext() bool { return true }
func (failingHistory) Next() (*historypb.HistoryEvent, error) {
	return nil, errors.New("history unavailable")
}

// TestTurnIDs: the turns of every page are listed once, those outside
// the prefix left out, with the visibility query Since also uses.
func TestTurnIDs(t *testing.T) {
	t.Parallel()
	l := &listClient{pages: [][]string{{"t-1", "t-2", "x-9"}, {"t-2", "t-3"}}}
	since := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ids, err := turnIDs(context.Background(), l, Query{Since: since, Prefix: "t-"})
	if err != nil || !slices.Equal(ids, []string{"t-1", "t-2", "t-3"}) {
		t.Errorf("ids %q %v", ids, err)
	}
	when := "(StartTime >= '2025-01-02T03:04:05Z' OR CloseTime >= '2025-01-02T03:04:05Z' OR ExecutionStatus = 'Running')"
	want := "WorkflowType = '" + workflows.TurnWorkflow + "' AND WorkflowId STARTS_WITH 't-' AND " + when
	if len(l.queries) != 2 || l.queries[0] != want || l.queries[1] != want {
		t.Errorf("queries %q, want two pages of %q", l.queries, want)
	}
	if q, _ := (Query{Since: since}).query(); q != "WorkflowType = '"+workflows.TurnWorkflow+"' AND "+when {
		t.Errorf("Since's query %q", q)
	}
	if _, err := turnIDs(context.Background(), l, Query{Prefix: "t'"}); err == nil {
		t.Error("a quoted prefix is refused")
	}
}

// TestRecordedCallsStopsAtFirstError: once a history fails, the others
// are not read.
func TestRecordedCallsStopsAtFirstError(t *testing.T) {
	t.Parallel()
	var ids []string
	for i := range 20 {
		ids = append(ids, fmt.Sprintf("t-%d", i))
	}
	l := &listClient{pages: [][]string{ids}}
	_, _, err := RecordedCalls(context.Background(), l, Query{Parallel: 1})
	if err == nil || !strings.Contains(err.Error(), "history unavailable") {
		t.Errorf("err %v, want the history's", err)
	}
	if len(l.reads) != 1 {
		t.Errorf("%d histories read (%q), want 1: the first failed", len(l.reads), l.reads)
	}
}
