package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/workflows"
)

// listingTemporal answers the calls of Tools: DescribeTaskQueue with
// its pollers, ExecuteWorkflow with a run whose Get returns list or
// err, GetWorkflowHistory with events. It records the start.
type listingTemporal struct {
	tclient.Client
	pollers []string
	list    workflows.ToolsList
	err     error
	events  []*historypb.HistoryEvent

	started  *tclient.StartWorkflowOptions
	workflow any
	input    []any
}

func (f *listingTemporal) DescribeTaskQueue(_ context.Context, _ string, tt enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	if tt != enumspb.TASK_QUEUE_TYPE_WORKFLOW {
		return nil, errors.New("asked for the wrong task queue type")
	}
	var ps []*taskqueuepb.PollerInfo
	for _, id := range f.pollers {
		ps = append(ps, &taskqueuepb.PollerInfo{Identity: id})
	}
	return &workflowservice.DescribeTaskQueueResponse{Pollers: ps}, nil
}

func (f *listingTemporal) ExecuteWorkflow(_ context.Context, o tclient.StartWorkflowOptions, wf any, args ...any) (tclient.WorkflowRun, error) {
	f.started, f.workflow, f.input = &o, wf, args
	return listingRun{f: f}, nil
}

func (f *listingTemporal) GetWorkflowHistory(context.Context, string, string, bool, enumspb.HistoryEventFilterType) tclient.HistoryEventIterator {
	return &events{evs: f.events}
}

type listingRun struct {
	tclient.WorkflowRun
	f *listingTemporal
}

func (r listingRun) GetID() string    { return r.f.started.ID }
func (r listingRun) GetRunID() string { return "run-1" }
func (r listingRun) Get(_ context.Context, v any) error {
	if r.f.err != nil {
		return r.f.err
	}
	*(v.(*workflows.ToolsList)) = r.f.list
	return nil
}
func (r listingRun) GetWithOptions(ctx context.Context, v any, _ tclient.WorkflowRunGetOptions) error {
	return r.Get(ctx, v)
}

type events struct{ evs []*historypb.HistoryEvent }

func (e *events) HasNext() bool { return len(e.evs) > 0 }
func (e *events) Next() (*historypb.HistoryEvent, error) {
	ev := e.evs[0]
	e.evs = e.evs[1:]
	return ev, nil
}

// TestToolsNoWorker: with no worker polling the queue, Tools says so at
// once and starts nothing.
func TestToolsNoWorker(t *testing.T) {
	f := &listingTemporal{}
	_, err := New(f, "agents").Tools(context.Background(), 0)
	if !errors.Is(err, ErrNoWorker) || !strings.Contains(err.Error(), `no worker polls task queue "agents"`) {
		t.Fatalf("err = %v, want ErrNoWorker naming the queue", err)
	}
	if f.started != nil {
		t.Errorf("a listing was started: %+v", f.started)
	}
}

// TestToolsNotTaken: a queue whose pollers are gone times the listing
// out; the error names the pollers and says nobody took it.
func TestToolsNotTaken(t *testing.T) {
	f := &listingTemporal{
		pollers: []string{"9@gone", "8@gone", "9@gone"},
		err:     temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil),
		events: []*historypb.HistoryEvent{
			{EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED},
			{EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED},
			{EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT},
		},
	}
	_, err := New(f, "agents").Tools(context.Background(), 2*time.Second)
	if !errors.Is(err, ErrNoWorker) || !strings.Contains(err.Error(), "took the tools listing") || !strings.Contains(err.Error(), "8@gone, 9@gone") {
		t.Fatalf("err = %v", err)
	}
	o := f.started
	if o == nil || !strings.HasPrefix(o.ID, workflows.ToolsIDPrefix) || o.TaskQueue != "agents" || o.WorkflowExecutionTimeout != 2*time.Second {
		t.Fatalf("start options = %+v", o)
	}
	if f.workflow != workflows.ToolsWorkflow || len(f.input) != 1 || f.input[0] != (workflows.ToolsInput{Wait: 2 * time.Second}) {
		t.Errorf("started %v %v", f.workflow, f.input)
	}
}

// TestToolsAnswer: the worker that ran the activity is named from the
// history, and two listings have different ids.
func TestToolsAnswer(t *testing.T) {
	f := &listingTemporal{
		pollers: []string{"7@host"},
		list:    workflows.ToolsList{Tools: []calls.Entry{{Info: calls.Info{Name: "Read"}, Source: "builtin"}}},
		events: []*historypb.HistoryEvent{
			{EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, Attributes: &historypb.HistoryEvent_WorkflowTaskStartedEventAttributes{
				WorkflowTaskStartedEventAttributes: &historypb.WorkflowTaskStartedEventAttributes{Identity: "7@host"}}},
			{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, Attributes: &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{
				ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{Identity: "7@host@agents"}}},
		},
	}
	cl := New(f, "agents")
	got, err := cl.Tools(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Worker != "7@host@agents" || got.TaskQueue != "agents" || len(got.Tools) != 1 || got.Tools[0].Source != "builtin" ||
		len(got.Pollers) != 1 || got.WorkflowID != f.started.ID {
		t.Errorf("listing = %+v", got)
	}
	if f.started.WorkflowExecutionTimeout != workflows.DefaultToolsWait {
		t.Errorf("default wait = %s", f.started.WorkflowExecutionTimeout)
	}
	f.events = nil
	again, err := cl.Tools(context.Background(), 0)
	if err != nil || again.WorkflowID == got.WorkflowID {
		t.Errorf("second listing id %q (first %q), err %v", again.WorkflowID, got.WorkflowID, err)
	}
}

// TestToolsOldWorker: workers that fail the listing's workflow task
// (one without the workflow registered) are named as the cause.
func TestToolsOldWorker(t *testing.T) {
	f := &listingTemporal{
		pollers: []string{"7@host"},
		err:     temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil),
		events: []*historypb.HistoryEvent{
			{EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, Attributes: &historypb.HistoryEvent_WorkflowTaskStartedEventAttributes{
				WorkflowTaskStartedEventAttributes: &historypb.WorkflowTaskStartedEventAttributes{}}},
			{EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, Attributes: &historypb.HistoryEvent_WorkflowTaskFailedEventAttributes{
				WorkflowTaskFailedEventAttributes: &historypb.WorkflowTaskFailedEventAttributes{
					Cause:   enumspb.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE,
					Failure: &failurepb.Failure{Message: "unable to find workflow type: WardenTools"}}}},
		},
	}
	_, err := New(f, "agents").Tools(context.Background(), time.Second)
	if err == nil || errors.Is(err, ErrNoWorker) || !strings.Contains(err.Error(), "unable to find workflow type: WardenTools") ||
		!strings.Contains(err.Error(), "older than this client") {
		t.Fatalf("err = %v", err)
	}
}
