package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/workflows"
)

// GCOptions say which turns' content GC removes. Content of a turn the
// server no longer knows (closed and past the namespace's retention) is
// always removed; running turns are never touched.
type GCOptions struct {
	// Closed also removes the content of closed turns that closed at
	// least OlderThan ago.
	Closed    bool
	OlderThan time.Duration
	// DryRun reports without deleting.
	DryRun bool
}

// GCReport counts what GC did.
type GCReport struct {
	Turns   int      `json:"turns"`
	Removed []string `json:"removed"`
	Kept    int      `json:"kept"`
}

// GC removes the content of turns that are gone (or closed, with
// opts.Closed) from the store.
func (cl *Client) GC(ctx context.Context, store content.Store, opts GCOptions) (GCReport, error) {
	var rep GCReport
	turns, err := store.Turns(ctx)
	if err != nil {
		return rep, err
	}
	rep.Turns = len(turns)
	for _, t := range turns {
		remove := false
		d, err := cl.c.DescribeWorkflowExecution(ctx, t, "")
		var nf *serviceerror.NotFound
		switch {
		case errors.As(err, &nf):
			remove = true
		case err != nil:
			return rep, fmt.Errorf("describe turn %s: %w", t, err)
		case opts.Closed && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			ct := d.GetWorkflowExecutionInfo().GetCloseTime()
			remove = ct != nil && time.Since(ct.AsTime()) >= opts.OlderThan
		}
		if !remove {
			rep.Kept++
			continue
		}
		if !opts.DryRun {
			if err := store.DeleteTurn(ctx, t); err != nil {
				return rep, err
			}
		}
		rep.Removed = append(rep.Removed, t)
	}
	return rep, nil
}

// Conversation is a turn's conversation read from the content store.
type Conversation struct {
	WorkflowID string `json:"workflow_id"`
	Head       string `json:"head"`
	// Messages with their full content, in order.
	Messages []model.Message `json:"messages"`
	// Compactions met on the way, oldest first; each names the head it
	// replaced (whose messages stay in the store).
	Compactions []model.Compaction `json:"compactions,omitempty"`
}

// Conversation reads a turn's conversation from the store: from head, or
// from the latest head the store recorded when head is empty. Messages of
// a finished turn not yet stored (a return-directly result) come from its
// result when it has one.
func (cl *Client) Conversation(ctx context.Context, store content.Store, workflowID, head string) (Conversation, error) {
	l := &content.Log{Store: store, CacheBytes: -1}
	out := Conversation{WorkflowID: workflowID, Head: head}
	var tail []model.Message
	if head == "" {
		// A completed turn's result names its head; otherwise the store's
		// latest head is used (never wait for a running turn).
		var res workflows.TurnResult
		d, err := cl.c.DescribeWorkflowExecution(ctx, workflowID, "")
		if err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED &&
			cl.c.GetWorkflow(ctx, workflowID, "").Get(ctx, &res) == nil && res.Conversation != "" {
			out.Head, tail = res.Conversation, res.Messages
		} else if out.Head, err = l.Head(ctx, workflowID); err != nil {
			return out, err
		}
	}
	if out.Head == "" {
		return out, fmt.Errorf("turn %s has no stored conversation in %s", workflowID, store)
	}
	nodes, err := l.Chain(ctx, workflowID, out.Head)
	if err != nil {
		return out, err
	}
	for _, n := range nodes {
		if n.Compaction != nil {
			out.Compactions = append(out.Compactions, *n.Compaction)
		}
		for _, m := range n.Messages {
			r, err := l.Resolve(ctx, workflowID, m)
			if err != nil {
				return out, err
			}
			out.Messages = append(out.Messages, r)
		}
	}
	for _, m := range tail {
		r, err := l.Resolve(ctx, workflowID, m)
		if err != nil {
			return out, err
		}
		out.Messages = append(out.Messages, r)
	}
	return out, nil
}

// CountPending counts the calls waiting across running turns (approvals
// and external results) from visibility alone: the WardenPendingCalls
// search attribute of each waiting turn. No turn is queried, so counting
// costs the server a listing and the workers nothing, however many turns
// wait. taskQueue, when set, counts only turns of that task queue.
// Visibility trails the turns by up to a second or so.
func (cl *Client) CountPending(ctx context.Context, taskQueue string) (int, error) {
	q := WaitingQuery
	if taskQueue != "" {
		q += fmt.Sprintf(" AND TaskQueue = '%s'", strings.ReplaceAll(taskQueue, "'", ""))
	}
	n := 0
	var token []byte
	for {
		resp, err := cl.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token, PageSize: countPageSize})
		if err != nil {
			return n, fmt.Errorf("count waiting calls: %w", err)
		}
		for _, ex := range resp.GetExecutions() {
			p := ex.GetSearchAttributes().GetIndexedFields()[workflows.SAPendingCalls]
			if p == nil {
				continue
			}
			var ids []string
			if err := converter.GetDefaultDataConverter().FromPayload(p, &ids); err != nil {
				return n, fmt.Errorf("count waiting calls: %s of %s: %w", workflows.SAPendingCalls, ex.GetExecution().GetWorkflowId(), err)
			}
			n += len(ids)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return n, nil
		}
	}
}
