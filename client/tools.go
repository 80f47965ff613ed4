package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/workflows"
)

// ErrNoWorker is wrapped by the error of Tools when no worker polls the
// task queue, or none took the listing in time.
var ErrNoWorker = errors.New("no worker")

// WorkerTools is the tool registry of one worker of a task queue.
type WorkerTools struct {
	TaskQueue string `json:"task_queue"`
	// Worker is the identity of the worker that answered, as Temporal
	// recorded it for the activity (the SDK's default is pid@host).
	Worker string `json:"worker"`
	// Pollers are the identities of the workers that polled the queue
	// for workflow tasks in the last few minutes: any of them may be the
	// one that answers.
	Pollers []string `json:"pollers"`
	// WorkflowID is the listing's workflow (workflows.ToolsIDPrefix...).
	WorkflowID string `json:"workflow_id"`
	// Tools are the worker's tools in registration order.
	Tools []calls.Entry `json:"tools"`
	// Backends and Protected are what the worker says of its backends'
	// confinement and its own paths (workflows.ToolsList).
	Backends  []workflows.BackendState `json:"backends,omitempty"`
	Protected []string                 `json:"protected,omitempty"`
	// Network are the tools the worker's settings give the network
	// (workflows.ToolsList).
	Network []workflows.ToolNetwork `json:"network,omitempty"`
}

// Tools asks a worker of the client's task queue for its tool registry.
// It checks that some worker polls the queue, then starts a
// workflows.ToolsWorkflow with a fresh id (ToolsIDPrefix, the UTC time
// and a random suffix), which the server times out after wait, and
// waits for its answer (wait 0: workflows.DefaultToolsWait). Temporal
// picks the worker that answers among the pollers, so the workers of
// one queue should register the same tools. The error wraps
// ErrNoWorker when no worker polls the queue or none took the listing
// within wait.
func (cl *Client) Tools(ctx context.Context, wait time.Duration) (WorkerTools, error) {
	if wait <= 0 {
		wait = workflows.DefaultToolsWait
	}
	out := WorkerTools{TaskQueue: cl.taskQueue}
	pollers, err := cl.pollers(ctx)
	if err != nil {
		return out, err
	}
	if len(pollers) == 0 {
		return out, fmt.Errorf("%w polls task queue %q: start one, or name its namespace and task queue (--namespace, --task-queue)", ErrNoWorker, cl.taskQueue)
	}
	out.Pollers = pollers
	out.WorkflowID = workflows.ToolsIDPrefix + time.Now().UTC().Format("20060102-150405") + "-" + strings.ToLower(rand.Text()[:8])
	opts := tclient.StartWorkflowOptions{ID: out.WorkflowID, TaskQueue: cl.taskQueue, WorkflowExecutionTimeout: wait}
	run, err := cl.c.ExecuteWorkflow(ctx, opts, workflows.ToolsWorkflow, workflows.ToolsInput{Wait: wait})
	if err != nil {
		return out, fmt.Errorf("start the tools listing: %w", err)
	}
	// The server ends the run after wait; the margin lets its timeout,
	// rather than ours, be the answer.
	wctx, cancel := context.WithTimeout(ctx, wait+5*time.Second)
	defer cancel()
	var list workflows.ToolsList
	getErr := run.Get(wctx, &list)
	if ctx.Err() != nil {
		return out, fmt.Errorf("tools listing %s: %w", out.WorkflowID, ctx.Err())
	}
	h := cl.listingHistory(ctx, out.WorkflowID)
	if getErr != nil {
		return out, out.explain(getErr, h, wait)
	}
	out.Worker, out.Tools, out.Backends, out.Protected, out.Network = h.worker, list.Tools, list.Backends, list.Protected, list.Network
	return out, nil
}

// pollers returns the identities of the workers that polled the queue
// for workflow tasks recently, sorted.
func (cl *Client) pollers(ctx context.Context) ([]string, error) {
	resp, err := cl.c.DescribeTaskQueue(ctx, cl.taskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return nil, fmt.Errorf("describe task queue %q: %w", cl.taskQueue, err)
	}
	var ids []string
	for _, p := range resp.GetPollers() {
		if id := p.GetIdentity(); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// listing is what a listing's history says: whether a worker took its
// workflow task, why that task failed, and who ran the activity.
type listing struct {
	taken   bool
	failure string
	worker  string
}

// listingHistory reads a listing's history; a history it cannot read
// says nothing.
func (cl *Client) listingHistory(ctx context.Context, id string) listing {
	var h listing
	it := cl.c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			break
		}
		switch {
		case ev.GetWorkflowTaskStartedEventAttributes() != nil:
			h.taken = true
		case ev.GetWorkflowTaskFailedEventAttributes() != nil:
			a := ev.GetWorkflowTaskFailedEventAttributes()
			h.failure = a.GetCause().String() + ": " + a.GetFailure().GetMessage()
		case ev.GetActivityTaskStartedEventAttributes() != nil:
			h.worker = ev.GetActivityTaskStartedEventAttributes().GetIdentity()
		}
	}
	return h
}

// explain turns a failed listing into an error that says what went
// wrong: no worker took it, the workers cannot run it, or its error.
func (out WorkerTools) explain(err error, h listing, wait time.Duration) error {
	switch {
	case h.failure != "":
		return fmt.Errorf("the workers of task queue %q fail the tools listing (%s): a worker older than this client has no %s workflow; %w",
			out.TaskQueue, h.failure, workflows.ToolsWorkflow, err)
	case !h.taken:
		return fmt.Errorf("%w took the tools listing %s from task queue %q within %s, though %s polled it lately (a stopped worker stays listed for a few minutes)",
			ErrNoWorker, out.WorkflowID, out.TaskQueue, wait, strings.Join(out.Pollers, ", "))
	case h.worker == "" && (errors.As(err, new(*temporal.TimeoutError)) || errors.Is(err, context.DeadlineExceeded)):
		return fmt.Errorf("%w ran the activity of the tools listing %s on task queue %q within %s (do its workers run activities?)",
			ErrNoWorker, out.WorkflowID, out.TaskQueue, wait)
	}
	return fmt.Errorf("tools listing %s: %w", out.WorkflowID, err)
}
