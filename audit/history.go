// History reading: the entry points that read a turn's histories from
// the Temporal server (every run of its continue-as-new chain, oldest
// first) and extract their records.

package audit

import (
	"context"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	tclient "go.temporal.io/sdk/client"
)

// Workflow reads every run of a workflow's continue-as-new chain, from
// the first to the latest, and returns its records oldest first.
func Workflow(ctx context.Context, c tclient.Client, workflowID string) ([]Record, error) {
	runs, err := Chain(ctx, c, workflowID)
	if err != nil {
		return nil, err
	}
	recs, err := ExtractChain(workflowID, runs)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(recs, func(a, b Record) int { return a.Time.Compare(b.Time) })
	return recs, nil
}

// Since extracts the records of every turn that ran at or after since
// (started, closed or still running) and returns those not older than
// since, oldest first.
func Since(ctx context.Context, c tclient.Client, since time.Time) ([]Record, error) {
	ids, err := turnIDs(ctx, c, Query{Since: since})
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, id := range ids {
		rs, err := Workflow(ctx, c, id)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if !r.Time.Before(since) {
				out = append(out, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Record) int { return a.Time.Compare(b.Time) })
	return out, nil
}

// Run is the history of one run of a continue-as-new chain.
type Run struct {
	ID     string
	Events []*historypb.HistoryEvent
}

// Chain reads the histories of every run of a workflow's continue-as-new
// chain, the first run first.
func Chain(ctx context.Context, c tclient.Client, workflowID string) ([]Run, error) {
	var runs []Run
	for runID := latestRunID(ctx, c, workflowID); ; {
		evs, err := history(ctx, c, workflowID, runID)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			break
		}
		runs = append(runs, Run{ID: runID, Events: evs})
		prev := evs[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if prev == "" {
			break
		}
		runID = prev
	}
	slices.Reverse(runs)
	return runs, nil
}

func history(ctx context.Context, c tclient.Client, workflowID, runID string) ([]*historypb.HistoryEvent, error) {
	it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var evs []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s (run %q): %w", workflowID, runID, err)
		}
		evs = append(evs, e)
	}
	return evs, nil
}

// latestRunID names the latest run, read before its history so both
// are of the same run (empty when it cannot be described: the history
// of the latest run is then read without a run id).
func latestRunID(ctx context.Context, c tclient.Client, workflowID string) string {
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return ""
	}
	return d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}
