// History reading: the entry points that read a turn's histories from
// the Temporal server (every run of its continue-as-new chain, oldest
// first) and extract their records.

package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"
)

// Workflow reads every run of a workflow's continue-as-new chain, from
// the first to the latest, and returns its records oldest first.
func Workflow(ctx context.Context, c tclient.Client, workflowID string) ([]Record, error) {
	recs, _, err := WorkflowFrom(ctx, c, workflowID)
	return recs, err
}

// WorkflowFrom is Workflow, and says where the turn was read: from the
// server while it has the turn, from the namespace's archive after its
// retention (an error wrapping ErrPastRetention when neither has it).
// The records are linked (Link): numbered and hash-chained.
func WorkflowFrom(ctx context.Context, c tclient.Client, workflowID string) ([]Record, Source, error) {
	runs, err := Chain(ctx, c, workflowID)
	if err != nil {
		return nil, "", err
	}
	recs, err := ExtractChain(workflowID, runs)
	if err != nil {
		return nil, "", err
	}
	slices.SortStableFunc(recs, func(a, b Record) int { return a.Time.Compare(b.Time) })
	if err := Link(recs); err != nil {
		return nil, "", err
	}
	return recs, SourceOf(runs), nil
}

// Since extracts the records of every turn that ran at or after since
// (started, closed or still running) and returns those not older than
// since, oldest first.
func Since(ctx context.Context, c tclient.Client, since time.Time) ([]Record, error) {
	recs, _, err := SinceFrom(ctx, c, since)
	return recs, err
}

// SinceFrom is Since, and counts the turns it read from each source:
// the server's turns and the archived turns closed since then.
func SinceFrom(ctx context.Context, c tclient.Client, since time.Time) ([]Record, Turns, error) {
	ids, err := turnIDs(ctx, c, Query{Since: since})
	if err != nil {
		return nil, nil, err
	}
	var out []Record
	turns := Turns{}
	for _, id := range ids {
		rs, src, err := WorkflowFrom(ctx, c, id)
		if err != nil {
			return nil, nil, err
		}
		turns[src]++
		for _, r := range rs {
			if !r.Time.Before(since) {
				out = append(out, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Record) int { return a.Time.Compare(b.Time) })
	return out, turns, nil
}

// Turns counts the turns a read took from each source.
type Turns map[Source]int

// String is "2 from the server, 1 from the archive" (sources in a fixed
// order), or "no turns".
func (t Turns) String() string {
	var parts []string
	for _, s := range []Source{FromServer, FromArchive, FromBoth} {
		if n := t[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d from the %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "no turns"
	}
	return strings.Join(parts, ", ")
}

// Run is the history of one run of a continue-as-new chain.
type Run struct {
	ID     string
	Events []*historypb.HistoryEvent
	// Archived: the run was read from the namespace's archive (the
	// server no longer has it).
	Archived bool
}

// Chain reads the histories of every run of a workflow's continue-as-new
// chain, the first run first.
func Chain(ctx context.Context, c tclient.Client, workflowID string) ([]Run, error) {
	runID, err := latestRunID(ctx, c, workflowID)
	if err != nil {
		return nil, err
	}
	var runs []Run
	for {
		archived := archivedRun(ctx, c, workflowID, runID)
		evs, err := history(ctx, c, workflowID, runID)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			break
		}
		runs = append(runs, Run{ID: runID, Events: evs, Archived: archived})
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
// are of the same run: from the server while it has the workflow, else
// from the archive (the run that closed last). Empty when the server
// cannot describe it for another reason: the history of the latest run
// is then read without a run id.
func latestRunID(ctx context.Context, c tclient.Client, workflowID string) (string, error) {
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return archivedLatestRun(ctx, c, workflowID)
	case err != nil:
		return "", nil
	}
	return d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), nil
}

// archivedRun says whether the server no longer has a run (so the
// frontend reads its history from the archive): the same test the
// frontend makes.
func archivedRun(ctx context.Context, c tclient.Client, workflowID, runID string) bool {
	if runID == "" {
		return false
	}
	_, err := c.DescribeWorkflowExecution(ctx, workflowID, runID)
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
