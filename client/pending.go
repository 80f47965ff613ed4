package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"golang.org/x/sync/errgroup"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/workflows"
)

// Pending returns one turn's open approvals and external calls, asked of
// the turn with a query: it needs a worker of the turn's task queue to
// answer (it fails, after the SDK's timeout, while none runs) and it is
// current to the turn's last workflow task. ListPending and
// ListPendingPage list the entries of every waiting turn from visibility
// instead: they need no worker, and follow the turns a little behind
// (visibility is updated after each workflow task, within a second or so
// on one server).
func (cl *Client) Pending(ctx context.Context, workflowID string) ([]workflows.Pending, error) {
	var ps []workflows.Pending
	v, err := cl.c.QueryWorkflow(ctx, workflowID, "", workflows.QueryPending)
	if err != nil {
		return nil, fmt.Errorf("query pending: %w", err)
	}
	return ps, v.Get(&ps)
}

// Filter selects pending entries across turns. Tool, OlderThan and
// Workflow become clauses of the visibility query (they select waiting
// turns server-side); every filter is applied to the entries too, since a
// turn can wait on several calls.
type Filter struct {
	// Tool keeps entries of this tool only.
	Tool string
	// OlderThan keeps entries waiting longer than this.
	OlderThan time.Duration
	// Kind keeps entries of this kind only (approval or external).
	Kind workflows.PendingKind
	// Workflow keeps entries of turns whose workflow id starts with it.
	Workflow string
}

// PendingEntry is a pending call with the turn it belongs to.
type PendingEntry struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	workflows.Pending
	// Preview is the call's input as a listing shows it: the whole input
	// when it is at most workflows.PreviewBytes long, else its start.
	Preview string `json:"preview,omitempty"`
	// Truncated is set when the listing read the entry from the turn's
	// index and its input was longer than the index keeps: Input is then
	// empty and Preview holds its start (Pending returns the whole entry).
	Truncated bool `json:"truncated,omitempty"`
	// Usage is the turn's model usage so far (tokens, and cost when
	// priced), when the listing asked the turn for it (the inbox does).
	Usage *model.Usage `json:"usage,omitempty"`
}

// PendingPage is one page of a pending listing.
type PendingPage struct {
	Entries []PendingEntry `json:"entries"`
	// Next is the token of the next page; empty after the last one.
	Next []byte `json:"next,omitempty"`
	// Turns counts the waiting turns the page read; Queried those among
	// them that keep no index (started before it existed) and were asked
	// for their entries with a query.
	Turns   int `json:"turns"`
	Queried int `json:"queried"`
}

// WaitingQuery is the visibility query of running turns that wait on at
// least one call. It tests WardenPendingCalls, set and unset together
// with WardenWaitingSince, because on SQLite visibility a keyword list is
// a stored column while a datetime is computed from the row's JSON for
// every row the query scans (a listing of 10,000 waiting turns spent a
// third of its server time there).
const WaitingQuery = "WorkflowType = '" + workflows.TurnWorkflow + "' AND ExecutionStatus = 'Running' AND " +
	workflows.SAPendingCalls + " IS NOT NULL"

// pendingQuery is the visibility query selecting the turns f can match.
func pendingQuery(f Filter, now time.Time) string {
	q := WaitingQuery
	if f.Tool != "" {
		q += fmt.Sprintf(" AND %s = '%s'", workflows.SAPendingTools, quoteless(f.Tool))
	}
	if f.OlderThan > 0 {
		q += fmt.Sprintf(" AND %s < '%s'", workflows.SAWaitingSince, now.Add(-f.OlderThan).UTC().Format(time.RFC3339Nano))
	}
	if f.Workflow != "" {
		q += fmt.Sprintf(" AND WorkflowId STARTS_WITH '%s'", quoteless(f.Workflow))
	}
	return q
}

func quoteless(s string) string { return strings.ReplaceAll(s, "'", "") }

// ListPendingPage returns one page of pending entries: the entries of up
// to pageSize waiting turns, in the visibility store's order (turns
// started last first), and the token of the next page (nil for the
// first). Each turn's entries come from the index it keeps in its memo
// (workflows.MemoPending), returned by the listing itself; only turns
// without one (started before the index existed) are queried. A queried
// turn that has ended since the listing is left out; any other failure
// of its query is returned (see pendingOfRun).
func (cl *Client) ListPendingPage(ctx context.Context, f Filter, pageSize int, token []byte) (PendingPage, error) {
	if pageSize <= 0 {
		pageSize = listPageSize
	}
	now := time.Now()
	resp, err := cl.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: pendingQuery(f, now), NextPageToken: token, PageSize: int32(pageSize)})
	if err != nil {
		return PendingPage{}, fmt.Errorf("list waiting turns: %w", cl.explainListing(err))
	}
	exs := resp.GetExecutions()
	page := PendingPage{Next: resp.GetNextPageToken(), Turns: len(exs)}
	found := make([][]PendingEntry, len(exs))
	var legacy []int
	for i, ex := range exs {
		es, ok, err := indexed(ex)
		if err != nil {
			return PendingPage{}, err
		}
		if !ok {
			legacy = append(legacy, i)
			continue
		}
		found[i] = es
	}
	page.Queried = len(legacy)
	if err := cl.queryUnindexed(ctx, exs, legacy, found); err != nil {
		return PendingPage{}, err
	}
	page.Entries = filterPending(f, now, found)
	return page, nil
}

// queryUnindexed fills found[i], for each i of legacy, with the pending
// calls of exs[i], a turn without an index, by querying it. Turns are asked
// a bounded number at a time; the first failure stops the others, since a
// page that lacks a turn's entries is not returned.
func (cl *Client) queryUnindexed(ctx context.Context, exs []*workflowpb.WorkflowExecutionInfo, legacy []int, found [][]PendingEntry) error {
	g, qctx := errgroup.WithContext(ctx)
	g.SetLimit(queryConcurrency)
	for _, i := range legacy {
		g.Go(func() error {
			id, run := exs[i].GetExecution().GetWorkflowId(), exs[i].GetExecution().GetRunId()
			ps, finished, err := cl.pendingOfRun(qctx, id, run)
			if err != nil || finished {
				return err // finished: ended since the listing, it waits on nothing
			}
			for _, p := range ps {
				found[i] = append(found[i], PendingEntry{WorkflowID: id, RunID: run, Pending: p, Preview: workflows.NewPendingIndex([]workflows.Pending{p}).Entries[0].Preview})
			}
			return nil
		})
	}
	queryErr := g.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return queryErr
}

// filterPending flattens found, in order, to the entries f selects; an
// entry without a preview gets its input as one.
func filterPending(f Filter, now time.Time, found [][]PendingEntry) []PendingEntry {
	var out []PendingEntry
	for _, es := range found {
		for _, e := range es {
			if e.Preview == "" {
				e.Preview = Unescaped(string(e.Input))
			}
			if f.Tool != "" && e.Tool != f.Tool || f.Kind != "" && e.Kind != f.Kind ||
				f.OlderThan > 0 && now.Sub(e.RequestedAt) < f.OlderThan {
				continue
			}
			out = append(out, e)
		}
	}
	return out
}

// pendingOfRun asks one listed run of a turn for its pending entries.
// finished is true (with no entries and no error) only when the run has
// really ended since the listing: the server rejects the query because
// the run is closed (the query is sent with QueryRejectCondition
// NOT_OPEN, so a closed run is reported as such instead of being
// replayed by a worker), or it no longer knows the run
// (serviceerror.NotFound, e.g. past retention). Every other failure (a
// deadline, the server unavailable, a permission denied, a paused run, a
// failing query handler) is returned: counting it as finished would drop
// the turn's waiting calls from the listing without a word.
func (cl *Client) pendingOfRun(ctx context.Context, workflowID, runID string) (ps []workflows.Pending, finished bool, err error) {
	resp, err := cl.c.QueryWorkflowWithOptions(ctx, &tclient.QueryWorkflowWithOptionsRequest{
		WorkflowID: workflowID, RunID: runID, QueryType: workflows.QueryPending,
		QueryRejectCondition: enumspb.QUERY_REJECT_CONDITION_NOT_OPEN,
	})
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return nil, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("query pending of turn %s: %w", workflowID, err)
	case resp.QueryRejected != nil && closedStatus(resp.QueryRejected.GetStatus()):
		return nil, true, nil
	case resp.QueryRejected != nil:
		return nil, false, fmt.Errorf("query pending of turn %s: rejected by the server, the workflow is %s", workflowID, resp.QueryRejected.GetStatus())
	case resp.QueryResult == nil:
		return nil, false, fmt.Errorf("query pending of turn %s: no result", workflowID)
	}
	if err := resp.QueryResult.Get(&ps); err != nil {
		return nil, false, fmt.Errorf("query pending of turn %s: %w", workflowID, err)
	}
	return ps, false, nil
}

// closedStatus reports whether st is the status of a run that has ended
// (not running, not paused).
func closedStatus(st enumspb.WorkflowExecutionStatus) bool {
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED,
		enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
		enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return true
	}
	return false
}

// indexed reads the pending entries of a listed turn from its memo; ok is
// false when the turn keeps no complete index and must be queried.
func indexed(ex *workflowpb.WorkflowExecutionInfo) ([]PendingEntry, bool, error) {
	p := ex.GetMemo().GetFields()[workflows.MemoPending]
	if p == nil {
		return nil, false, nil
	}
	var idx workflows.PendingIndex
	if err := converter.GetDefaultDataConverter().FromPayload(p, &idx); err != nil {
		return nil, false, fmt.Errorf("pending index of %s: %w", ex.GetExecution().GetWorkflowId(), err)
	}
	if idx.More {
		return nil, false, nil
	}
	out := make([]PendingEntry, 0, len(idx.Entries))
	for _, e := range idx.Entries {
		if e.Truncated() {
			e.Input = nil
		}
		e.Message, e.Reason = WordClip(e.Message), WordClip(e.Reason)
		e.Context, e.Prompt = WordClip(e.Context), WordClip(e.Prompt)
		out = append(out, PendingEntry{WorkflowID: ex.GetExecution().GetWorkflowId(), RunID: ex.GetExecution().GetRunId(),
			Pending: e.Pending, Preview: e.Preview, Truncated: e.Truncated()})
	}
	return out, true, nil
}

// WordClip ends a text the pending index clipped (at
// workflows.PreviewBytes, on a rune boundary, maybe mid-word) at its
// last word boundary, with an ellipsis: "…add the directory to the…"
// rather than "…to the t". A text shorter than the clip comes back
// unchanged (one of exactly the clip's length may lose its last word).
func WordClip(s string) string {
	if len(s) <= workflows.PreviewBytes-utf8.UTFMax {
		return s
	}
	i := strings.LastIndexFunc(s, unicode.IsSpace)
	if i < len(s)/2 {
		return s + "…"
	}
	return strings.TrimRightFunc(s[:i], func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }) + "…"
}

// ListPending lists pending entries across all running turns of the
// namespace, oldest first: ListPendingPage over every page. It reads
// visibility (each waiting turn's search attributes and memo), so it
// works with no worker running, and is eventually consistent: a call
// parked or answered a moment ago can be missing or still listed; Pending
// asks one turn for its current entries, through a worker. In a
// namespace without warden's search attributes it fails with
// ErrNoSearchAttributes and the commands that create them.
func (cl *Client) ListPending(ctx context.Context, f Filter) ([]PendingEntry, error) {
	var out []PendingEntry
	var token []byte
	for {
		page, err := cl.ListPendingPage(ctx, f, listAllPageSize, token)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Entries...)
		if token = page.Next; len(token) == 0 {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b PendingEntry) int { return a.RequestedAt.Compare(b.RequestedAt) })
	return out, nil
}

// ListPendingLimit lists pending entries as ListPending does or, when
// limit is positive, only those of the first visibility page of at most
// limit turns (ListPendingPage), in the server's order.
func (cl *Client) ListPendingLimit(ctx context.Context, f Filter, limit int) ([]PendingEntry, error) {
	if limit <= 0 {
		return cl.ListPending(ctx, f)
	}
	page, err := cl.ListPendingPage(ctx, f, limit, nil)
	return page.Entries, err
}

// Listing limits of ListPending.
const (
	// listPageSize is ListPendingPage's default page size.
	listPageSize = 100
	// listAllPageSize is the page size of ListPending and CountPending:
	// each page must come back within the SDK's 10 s per-RPC deadline
	// (a page of 5,000 takes ~0.7 s on the embedded server, which allows
	// it; a server with the default cap of 1,000 returns pages of 1,000).
	listAllPageSize = 5000
	// countPageSize is CountPending's page size: the pending gauge runs
	// it every 30 s, and a page of 5,000 made the process's memory jump
	// by ~60 MB each time (a page of 1,000: ~13 MB).
	countPageSize = 1000
	// queryConcurrency bounds the queries to turns without an index.
	queryConcurrency = 16
)
