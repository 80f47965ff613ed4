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
// the first to the latest, and returns its records in the order the
// turn recorded them (its history's order: times may step back by the
// moments an event waited for a workflow task in flight).
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
	recs, err := linked(workflowID, runs)
	if err != nil {
		return nil, "", err
	}
	return recs, SourceOf(runs), nil
}

// Since extracts the records of every turn that ran at or after since
// (started, closed or still running) and returns those not older than
// since, oldest first (each turn's in the order it recorded them).
func Since(ctx context.Context, c tclient.Client, since time.Time) ([]Record, error) {
	recs, _, err := SinceFrom(ctx, c, since)
	return recs, err
}

// SinceFrom is Since, and counts the turns it read from each source:
// the server's turns and the archived turns closed since then. The
// turns' records are interleaved by time, each turn's in its order.
func SinceFrom(ctx context.Context, c tclient.Client, since time.Time) ([]Record, Turns, error) {
	ids, err := turnIDs(ctx, c, Query{Since: since})
	if err != nil {
		return nil, nil, err
	}
	var out []Record
	var keys []time.Time
	turns := Turns{}
	for _, id := range ids {
		rs, src, err := WorkflowFrom(ctx, c, id)
		if err != nil {
			return nil, nil, err
		}
		turns[src]++
		var key time.Time
		for _, r := range rs {
			if r.Time.After(key) {
				key = r.Time
			}
			if !r.Time.Before(since) {
				out = append(out, r)
				keys = append(keys, key)
			}
		}
	}
	return interleave(out, keys), turns, nil
}

// interleave orders several turns' records by time, each turn's in its
// own order: keys are each record's latest time in its turn so far
// (never decreasing within a turn), and the sort is stable.
func interleave(recs []Record, keys []time.Time) []Record {
	idx := make([]int, len(recs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return keys[a].Compare(keys[b]) })
	out := make([]Record, len(recs))
	for i, j := range idx {
		out[i] = recs[j]
	}
	return out
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
	runID, onServer, err := latestRunID(ctx, c, workflowID)
	if err != nil {
		return nil, err
	}
	var runs []Run
	for {
		// The latest run the server described is on the server: only
		// the earlier ones are asked again.
		archived := !(onServer && len(runs) == 0) && archivedRun(ctx, c, workflowID, runID)
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
// is then read without a run id. onServer says the server described it.
func latestRunID(ctx context.Context, c tclient.Client, workflowID string) (runID string, onServer bool, err error) {
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		runID, err := archivedLatestRun(ctx, c, workflowID)
		return runID, false, err
	case err != nil:
		return "", false, nil
	}
	return d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), true, nil
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
