// Package client is a typed client for warden turns over a Temporal
// client you already have: start turns, follow their events, list and
// answer pending approvals, complete external tool calls.
package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// Client drives warden turns.
type Client struct {
	c         tclient.Client
	taskQueue string
	// PollInterval is how often Watch polls for events (default 250 ms).
	PollInterval time.Duration
	// Approvers, when set, is recorded with every turn this client starts
	// whose input names none: who may answer its calls (the workflow
	// checks every answer against it). config.Config.Approvers builds it
	// from the inbox users and roles.
	Approvers *workflows.Approvers
	// Via is the name of the warden key the underlying Temporal client
	// authenticates with (auth.NameOf). Answers sent through this client
	// carry it, and name it as the approver when they name nobody: a
	// server with keys refuses an answer whose via is not its key's.
	Via string
	// LivePolicy is the policy store (its workflow id) the turns this
	// client starts follow when their input names none: "" is
	// workflows.DefaultPolicyStore, NoLivePolicy starts them with the
	// static policy only. The store is made (once per client) before the
	// first turn that follows it starts, so a remembered approval always
	// has a store to go to.
	LivePolicy string
	// RuleTools are checked with the built-in tools before a turn starts
	// (Start) and before live rules are set (SetPolicy): a permission
	// rule with content for one of them that cannot match content (a
	// function tool without tools.WithContentField or tools.WithMatcher,
	// PowerShell, AskUser) is refused (tools.CheckRules). Give it the
	// function tools your workers register; rules of tools it does not
	// know are checked where they meet the worker's registry.
	RuleTools []tools.Tool
	// Namespace is the namespace of the Temporal client, as errors name
	// it (the commands that create warden's search attributes in it);
	// empty, they say NAMESPACE.
	Namespace string

	storesMu sync.Mutex
	stores   map[string]bool // policy stores made by this client
}

// NoLivePolicy, as Client.LivePolicy or TurnInput.LivePolicy, opts out of
// live policy: the turn keeps the policy it started with, and neither
// `policy apply` nor a remembered approval reaches it. The client clears
// it from the input it starts.
const NoLivePolicy = "-"

// withLivePolicy fills in the policy store a turn follows (the client's,
// else the default) and makes sure that store exists; NoLivePolicy
// leaves the turn without one.
func (cl *Client) withLivePolicy(ctx context.Context, in workflows.TurnInput) (workflows.TurnInput, error) {
	if in.LivePolicy == "" {
		in.LivePolicy = cl.LivePolicy
		if in.LivePolicy == "" {
			in.LivePolicy = workflows.DefaultPolicyStore
		}
	}
	if in.LivePolicy == NoLivePolicy {
		in.LivePolicy = ""
		return in, nil
	}
	cl.storesMu.Lock()
	made := cl.stores[in.LivePolicy]
	cl.storesMu.Unlock()
	if made {
		return in, nil
	}
	if _, err := cl.StartPolicyStore(ctx, in.LivePolicy); err != nil {
		return in, err
	}
	cl.storesMu.Lock()
	if cl.stores == nil {
		cl.stores = map[string]bool{}
	}
	cl.stores[in.LivePolicy] = true
	cl.storesMu.Unlock()
	return in, nil
}

// sign fills in who an answer comes from: the key's name as via, and as
// by when the answer names nobody.
func (cl *Client) sign(by, via *string) {
	if *via == "" {
		*via = cl.Via
	}
	if *by == "" {
		*by = *via
	}
}

// New returns a client that starts turns on taskQueue.
func New(c tclient.Client, taskQueue string) *Client {
	return &Client{c: c, taskQueue: taskQueue}
}

// Start starts a turn with the given workflow id (generated when empty).
// Starting an id that is already running returns that run: starts are
// idempotent. The turn follows the policy store in.LivePolicy, else the
// client's (LivePolicy), else workflows.DefaultPolicyStore, made first
// when missing; NoLivePolicy opts out. It charges its agent's budget
// store when the agent has one (withAgentBudget); NoAgentBudget opts out.
func (cl *Client) Start(ctx context.Context, id string, in workflows.TurnInput) (tclient.WorkflowRun, error) {
	in = cl.withApprovers(in)
	if in.Requester == "" {
		in.Requester = cl.Via
	}
	if err := cl.checkRules(in.Permission); err != nil {
		return nil, fmt.Errorf("start turn: permission: %w", err)
	}
	in, err := cl.withLivePolicy(ctx, in)
	if err != nil {
		return nil, err
	}
	if in, err = cl.withAgentBudget(ctx, in); err != nil {
		return nil, err
	}
	opts := tclient.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                cl.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
	run, err := cl.c.ExecuteWorkflow(ctx, opts, workflows.TurnWorkflow, in)
	if err != nil {
		return nil, fmt.Errorf("start turn: %w", err)
	}
	return run, nil
}

// checkRules refuses the rules of pc that the built-in tools or
// cl.Tools cannot match (tools.CheckRules).
func (cl *Client) checkRules(pc permission.Context) error {
	return tools.CheckRules(tools.ToolLookup(append(tools.Builtins(), cl.RuleTools...)), pc)
}

// withApprovers records the client's approvers in a turn that names none.
func (cl *Client) withApprovers(in workflows.TurnInput) workflows.TurnInput {
	if in.Approvers == nil && cl.Approvers.Enabled() {
		in.Approvers = cl.Approvers
	}
	return in
}

// Events returns the turn's events from cursor on.
func (cl *Client) Events(ctx context.Context, workflowID string, cursor int) (workflows.EventsPage, error) {
	var page workflows.EventsPage
	v, err := cl.c.QueryWorkflow(ctx, workflowID, "", workflows.QueryEvents, cursor)
	if err != nil {
		return page, fmt.Errorf("query events: %w", err)
	}
	return page, v.Get(&page)
}

// Watch calls fn for each event of the turn as it happens and returns
// the turn's result when it ends.
func (cl *Client) Watch(ctx context.Context, workflowID string, fn func(workflows.Event)) (workflows.TurnResult, error) {
	return cl.Follow(ctx, workflowID, fn, nil)
}

// Follow is Watch that also reports the output of running tool calls as
// it arrives (from their heartbeats): out gets the call and the text not
// shown before. A call that has printed nothing new for QuietInterval is
// reported with fresh == "" (so a caller can show that it still runs,
// and for how long), at most once per QuietInterval.
func (cl *Client) Follow(ctx context.Context, workflowID string, fn func(workflows.Event), out func(call RunningCall, fresh string)) (workflows.TurnResult, error) {
	f := &follower{cl: cl, workflowID: workflowID, fn: fn, out: out, seen: map[string]int64{}, shown: map[string]time.Time{}}
	every := cl.PollInterval
	if every <= 0 {
		every = 250 * time.Millisecond
	}
	cursor := 0
	for {
		f.checkStuck(ctx)
		page, err := cl.Events(ctx, workflowID, cursor)
		if err == nil {
			for _, e := range page.Events {
				if fn != nil {
					fn(e)
				}
			}
			cursor = page.Next
			if page.Done {
				break
			}
			f.reportRunning(ctx)
		} else if done, _ := cl.closed(ctx, workflowID); done {
			break
		}
		select {
		case <-ctx.Done():
			return workflows.TurnResult{}, ctx.Err()
		case <-time.After(every):
		}
	}
	return cl.Result(ctx, workflowID)
}

// follower is the state of one Follow between polls.
type follower struct {
	cl         *Client
	workflowID string
	fn         func(workflows.Event)
	out        func(call RunningCall, fresh string)
	seen       map[string]int64     // output bytes of each call already passed to out
	shown      map[string]time.Time // when out last heard of each call
	lastCheck  time.Time            // when checkStuck last asked
	reported   int32                // the failed attempt last reported as stuck
}

// checkStuck tells fn, at most every 3 seconds, when the turn's workflow
// task keeps failing: such a turn makes no progress and emits no events,
// so Follow says so instead of going quiet.
func (f *follower) checkStuck(ctx context.Context) {
	if f.fn == nil || time.Since(f.lastCheck) <= 3*time.Second {
		return
	}
	f.lastCheck = time.Now()
	if attempt, why, err := f.cl.Stuck(ctx, f.workflowID); err == nil && attempt > 1 && attempt != f.reported {
		f.reported = attempt
		f.fn(workflows.Event{Type: EventStuck, Error: true, Time: time.Now(),
			Text: fmt.Sprintf("the turn is not progressing: its workflow task failed %d times in a row: %s", attempt-1, why)})
	}
}

// reportRunning passes out the new output of each running call, or an
// empty text for a call that has been quiet for QuietInterval.
func (f *follower) reportRunning(ctx context.Context) {
	if f.out == nil {
		return
	}
	rcs, err := f.cl.Running(ctx, f.workflowID)
	if err != nil {
		return
	}
	now := time.Now()
	for _, rc := range rcs {
		if _, ok := f.shown[rc.CallID]; !ok {
			f.shown[rc.CallID] = now
		}
		if n := rc.Bytes - f.seen[rc.CallID]; n > 0 {
			text := rc.Output
			if int64(len(text)) > n {
				text = text[int64(len(text))-n:]
			}
			f.seen[rc.CallID] = rc.Bytes
			f.shown[rc.CallID] = now
			f.out(rc, text)
		} else if now.Sub(f.shown[rc.CallID]) >= QuietInterval {
			f.shown[rc.CallID] = now
			f.out(rc, "")
		}
	}
}

// QuietInterval is how long a running call may print nothing before
// Follow reports it again with empty output.
const QuietInterval = 5 * time.Second

// EventStuck is the event Follow reports (not recorded by the turn) when
// the turn's workflow task keeps failing.
const EventStuck = "stuck"

// Stuck reports the attempt of the turn's pending workflow task (above 1
// when it has failed) and the last failure recorded in history.
func (cl *Client) Stuck(ctx context.Context, workflowID string) (int32, string, error) {
	d, err := cl.c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return 0, "", err
	}
	attempt := d.GetPendingWorkflowTask().GetAttempt()
	if attempt <= 1 {
		return attempt, "", nil
	}
	why := "see the worker's log"
	it := cl.c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			break
		}
		if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil {
			why = a.GetCause().String() + ": " + a.GetFailure().GetMessage()
		}
	}
	return attempt, why, nil
}

func (cl *Client) closed(ctx context.Context, workflowID string) (bool, error) {
	d, err := cl.c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return false, err
	}
	return d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// Result waits for the turn to end and returns its result.
func (cl *Client) Result(ctx context.Context, workflowID string) (workflows.TurnResult, error) {
	var res workflows.TurnResult
	err := cl.c.GetWorkflow(ctx, workflowID, "").Get(ctx, &res)
	return res, err
}

// State returns the turn's summary (pending entries, permission context).
func (cl *Client) State(ctx context.Context, workflowID string) (workflows.Summary, error) {
	var s workflows.Summary
	v, err := cl.c.QueryWorkflow(ctx, workflowID, "", workflows.QueryState)
	if err != nil {
		return s, fmt.Errorf("query state: %w", err)
	}
	return s, v.Get(&s)
}

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
				e.Preview = string(e.Input)
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

// Approve answers a pending ASK with an Update: the workflow validates it
// (unknown or answered call, a missing or stale hash, bad rule, an
// approver whose roles do not cover the call) and the error comes back to
// the caller. a.Hash must be the hash of the entry as listed (Pending,
// PendingCall, ListPending): it binds the answer to the exact call and
// policy version the approver saw. ApproveListed sets it from an entry.
//
// An always_allow with a scope remembers beyond the turn: the turn's
// policy store is made first when missing, and an answer whose
// remembered approvals could not be stored comes back with an error
// wrapping ErrNotRemembered (the call itself was allowed).
func (cl *Client) Approve(ctx context.Context, workflowID string, a workflows.Approval) (workflows.Ack, error) {
	cl.sign(&a.By, &a.Via)
	if err := cl.storeFor(ctx, workflowID, a); err != nil {
		return workflows.Ack{}, err
	}
	ack, err := update[workflows.Ack](ctx, cl, workflowID, workflows.UpdateApprove, a)
	if err == nil && ack.NotRemembered != "" {
		err = fmt.Errorf("%s was allowed once, but %w: %s", a.CallID, ErrNotRemembered, ack.NotRemembered)
	}
	return ack, err
}

// ErrNotRemembered wraps the error of an always_allow with a scope whose
// remembered approvals the policy store did not take.
var ErrNotRemembered = errors.New("nothing was remembered")

// storeFor makes the policy store the turn follows, for an always_allow
// with a scope (which the turn sends there), when it is missing. A turn
// that follows no store refuses such an answer itself.
func (cl *Client) storeFor(ctx context.Context, workflowID string, a workflows.Approval) error {
	if a.Decision != workflows.DecisionAlwaysAllow || a.Scope == "" {
		return nil
	}
	st, err := cl.State(ctx, workflowID)
	if err != nil {
		return fmt.Errorf("reading the turn's policy store before remembering: %w", err)
	}
	if st.LivePolicy == "" {
		return nil
	}
	if _, err := cl.StartPolicyStore(ctx, st.LivePolicy); err != nil {
		return fmt.Errorf("remembering needs the policy store: %w", err)
	}
	return nil
}

// ApproveListed answers the listed entry p with an Update, bound to it:
// a.CallID and a.Hash are taken from p, so the answer is refused if the
// call or the policy changed since p was read.
func (cl *Client) ApproveListed(ctx context.Context, workflowID string, p workflows.Pending, a workflows.Approval) (workflows.Ack, error) {
	a.CallID, a.Hash = p.CallID, p.Hash
	return cl.Approve(ctx, workflowID, a)
}

// ApproveSignal answers a pending ASK with a signal, which the server
// accepts even while no worker runs; the workflow validates it later and
// records a rejection as an event.
func (cl *Client) ApproveSignal(ctx context.Context, workflowID string, a workflows.Approval) error {
	cl.sign(&a.By, &a.Via)
	if err := cl.storeFor(ctx, workflowID, a); err != nil {
		return err
	}
	return Explain(cl.c.SignalWorkflow(ctx, workflowID, "", workflows.SignalApprove, a))
}

// CompleteExternal delivers an external tool's result (or an AskUser
// answer) with an Update. r.Hash must be the listed hash of the call
// (Pending.Hash), as for Approve.
func (cl *Client) CompleteExternal(ctx context.Context, workflowID string, r workflows.ExternalResult) (workflows.Ack, error) {
	cl.sign(&r.By, &r.Via)
	return update[workflows.Ack](ctx, cl, workflowID, workflows.UpdateExternalResult, r)
}

// Explain adds the reason a server with keys gave for refusing a call
// (the SDK's error says only "Request unauthorized."). Other errors,
// and nil, come back unchanged.
func Explain(err error) error {
	var denied *serviceerror.PermissionDenied
	if errors.As(err, &denied) && denied.Reason != "" {
		return fmt.Errorf("%w: %s", err, denied.Reason)
	}
	return err
}

// ErrRejected wraps an update the workflow's validator rejected.
var ErrRejected = errors.New("rejected")

func update[T any](ctx context.Context, cl *Client, workflowID, name string, arg any) (T, error) {
	var out T
	h, err := cl.c.UpdateWorkflow(ctx, tclient.UpdateWorkflowOptions{
		WorkflowID: workflowID, UpdateName: name, Args: []any{arg},
		WaitForStage: tclient.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return out, fmt.Errorf("%s: %w", name, Explain(err))
	}
	if err := h.Get(ctx, &out); err != nil {
		return out, fmt.Errorf("%s: %w: %w", name, ErrRejected, plain(err))
	}
	return out, nil
}

// plain is the workflow's own message of an update's failure: the SDK's
// ApplicationError adds "(type: wrapError, retryable: true)" and repeats
// the wrapped causes, which an approver need not read.
func plain(err error) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Message() != "" {
		return &plainError{msg: ae.Message(), err: err}
	}
	return err
}

// plainError is an error shown by its message alone that still unwraps
// to the SDK's error.
type plainError struct {
	msg string
	err error
}

func (e *plainError) Error() string { return e.msg }
func (e *plainError) Unwrap() error { return e.err }

// RunningCall is a tool call running right now, with its output so far.
type RunningCall struct {
	workflows.ToolProgress
	Attempt int32 `json:"attempt"`
	// Started is when the current attempt started (zero while it waits
	// for a worker).
	Started time.Time `json:"started,omitzero"`
}

// Running lists the turn's tool calls that are running as regular
// activities, with the output tail they last reported.
func (cl *Client) Running(ctx context.Context, workflowID string) ([]RunningCall, error) {
	d, err := cl.c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return nil, fmt.Errorf("describe turn: %w", err)
	}
	var out []RunningCall
	for _, pa := range d.GetPendingActivities() {
		if pa.GetActivityType().GetName() != workflows.ActivityTool {
			continue
		}
		rc := RunningCall{Attempt: pa.GetAttempt()}
		if ts := pa.GetLastStartedTime(); ts != nil && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
			rc.Started = ts.AsTime()
		}
		rc.CallID = strings.TrimPrefix(pa.GetActivityId(), "tool-")
		if p := pa.GetHeartbeatDetails(); p != nil && len(p.GetPayloads()) > 0 {
			if err := converter.GetDefaultDataConverter().FromPayloads(p, &rc.ToolProgress); err != nil {
				return nil, fmt.Errorf("heartbeat details: %w", err)
			}
		}
		out = append(out, rc)
	}
	return out, nil
}
