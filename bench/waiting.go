package bench

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// WaitingConfig sizes the waiting scenario.
type WaitingConfig struct {
	// Turns is how many turns to park on an approval (default 10000).
	Turns int
	// Sample is how many of them to approve one at a time, timing each
	// (default 50).
	Sample int
	// Concurrency bounds parallel starts and terminations (default 32).
	Concurrency int
	// Timeout bounds the wait for all turns to be pending (default 30 min).
	Timeout time.Duration
}

// WaitingReport is the waiting scenario's result.
type WaitingReport struct {
	Turns int `json:"turns"`
	// StartMS is the time to start all turns; StartsPerSec the rate.
	StartMS      float64 `json:"start_ms"`
	StartsPerSec float64 `json:"starts_per_sec"`
	// AllPendingMS is from the first start until the visibility store
	// counts every turn as waiting.
	AllPendingMS float64 `json:"all_pending_ms"`
	// Worker is the worker's RSS: Before the starts, Peak while starting
	// and waiting, After with all turns parked.
	Worker Memory  `json:"worker_rss"`
	Server *Memory `json:"server_rss,omitempty"`
	// ListPendingMS is one client.ListPending over all waiting turns (what
	// `starter approvals list` does); ListPendingEntries what it returned.
	ListPendingMS      float64 `json:"list_pending_ms"`
	ListPendingEntries int     `json:"list_pending_entries"`
	ListPendingErr     string  `json:"list_pending_error,omitempty"`
	// FirstPage times one client.ListPendingPage of 100 turns (what the
	// inbox reads first in newest order, and approvals list --limit 100).
	FirstPageMS      float64 `json:"first_page_ms"`
	FirstPageEntries int     `json:"first_page_entries"`
	FirstPageErr     string  `json:"first_page_error,omitempty"`
	// VisibilityList times the visibility listing of the waiting turns
	// alone (the first half of ListPending, without the per-turn
	// queries), at ListPending's page size and at a smaller one.
	VisibilityList []Listing `json:"visibility_list"`
	// Approve is the approve Update's round trip (returns once the
	// workflow accepted the answer).
	Approve Stats `json:"approve"`
	// ApproveToTool is from Approve returning to the call's tool_result
	// event (workflow time; same-machine clocks).
	ApproveToTool Stats `json:"approve_to_tool_result"`
	// ApproveToResult is from Approve returning to the turn's Result
	// returning (tool, one more model activity, completion).
	ApproveToResult Stats `json:"approve_to_result"`
	// Terminated counts turns ended by the cleanup, in CleanupMS.
	Terminated int     `json:"terminated"`
	CleanupMS  float64 `json:"cleanup_ms"`
}

// Listing is one timed visibility listing of all waiting turns.
type Listing struct {
	PageSize int     `json:"page_size"`
	MS       float64 `json:"ms"`
	Listed   int     `json:"listed"`
	// SlowestPageMS is the slowest single ListWorkflow call; the SDK
	// bounds each call at 10 s.
	SlowestPageMS float64 `json:"slowest_page_ms"`
	Err           string  `json:"error,omitempty"`
}

// countWaiting counts running turns with a pending entry.
func (r *Runner) countWaiting(ctx context.Context) (int64, error) {
	resp, err := r.Temporal.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: client.WaitingQuery})
	if err != nil {
		return 0, fmt.Errorf("count waiting turns: %w", err)
	}
	return resp.GetCount(), nil
}

// listWaiting pages through the visibility listing of waiting turns, as
// ListPending does, and times it.
func (r *Runner) listWaiting(ctx context.Context, pageSize int) Listing {
	l := Listing{PageSize: pageSize}
	t0 := time.Now()
	defer func() { l.MS = ms(time.Since(t0)) }()
	var token []byte
	for {
		tp := time.Now()
		resp, err := r.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: client.WaitingQuery, NextPageToken: token, PageSize: int32(pageSize)})
		l.SlowestPageMS = max(l.SlowestPageMS, ms(time.Since(tp)))
		if err != nil {
			l.Err = fmt.Sprintf("list waiting turns: %v", err)
			l.MS = ms(time.Since(t0))
			return l
		}
		l.Listed += len(resp.GetExecutions())
		if token = resp.GetNextPageToken(); len(token) == 0 {
			l.MS = ms(time.Since(t0))
			return l
		}
	}
}

// Waiting parks Turns turns on an approval (Bash `touch x` in default
// mode), measures memory and ListPending while they wait, approves a
// sample timing each, and terminates the rest so the worker is left idle.
func (r *Runner) Waiting(ctx context.Context, cfg WaitingConfig) (rep WaitingReport, err error) {
	wt := newWaitingRun(r, cfg, &rep)
	rep.Turns = wt.turns
	base, err := r.countWaiting(ctx)
	if err != nil {
		return rep, fmt.Errorf("waiting: %w", err)
	}
	wt.nameTurns()
	defer func() {
		n, d, cerr := r.terminate(context.WithoutCancel(ctx), wt.ids, wt.done, wt.conc)
		rep.Terminated, rep.CleanupMS = n, ms(d)
		if err == nil && cerr != nil {
			err = fmt.Errorf("waiting: cleanup: %w", cerr)
		}
	}()

	ws, ss := sample(r.WorkerPID), sample(r.ServerPID)
	t0, err := wt.startAll(ctx)
	if err != nil {
		return rep, err
	}
	if err := wt.awaitPending(ctx, base); err != nil {
		return rep, err
	}
	rep.AllPendingMS = ms(time.Since(t0))
	rep.Worker = ws.finish()
	if sm := ss.finish(); r.ServerPID != 0 {
		rep.Server = &sm
	}

	wt.measureListing(ctx)
	if err := wt.approveSample(ctx); err != nil {
		return rep, err
	}
	r.logf("waiting: terminating the other %d", wt.turns-len(wt.done))
	return rep, nil
}

// waitingRun is the state one Waiting run shares between its steps.
type waitingRun struct {
	r *Runner
	// turns, sampled and conc are WaitingConfig's Turns, Sample and
	// Concurrency with defaults applied.
	turns, sampled, conc int
	timeout              time.Duration
	// ids are the turns' workflow IDs; done holds those that completed.
	ids  []string
	done map[string]bool
	rep  *WaitingReport
}

// newWaitingRun applies cfg's defaults.
func newWaitingRun(r *Runner, cfg WaitingConfig, rep *WaitingReport) *waitingRun {
	wt := &waitingRun{r: r, turns: cfg.Turns, sampled: cfg.Sample, conc: cfg.Concurrency,
		timeout: cfg.Timeout, done: map[string]bool{}, rep: rep}
	if wt.turns <= 0 {
		wt.turns = 10000
	}
	if wt.sampled <= 0 {
		wt.sampled = 50
	}
	wt.sampled = min(wt.sampled, wt.turns)
	if wt.conc <= 0 {
		wt.conc = 32
	}
	if wt.timeout <= 0 {
		wt.timeout = 30 * time.Minute
	}
	return wt
}

// nameTurns sets the turns' workflow IDs.
func (wt *waitingRun) nameTurns() {
	wt.ids = make([]string, wt.turns)
	for i := range wt.ids {
		wt.ids[i] = fmt.Sprintf("%s-waiting-%d", wt.r.prefix(), i)
	}
}

// startAll starts every turn, recording the time it took, and returns
// when the first start began.
func (wt *waitingRun) startAll(ctx context.Context) (time.Time, error) {
	r, w := wt.r, wt.turns
	in := r.turnInput(bashScript("touch x", 1), permission.ModeDefault)
	r.logf("waiting: starting %d turns", w)
	t0 := time.Now()
	err := pool(ctx, w, wt.conc, func(ctx context.Context, i int) error {
		_, err := r.Client.Start(ctx, wt.ids[i], in)
		return err
	})
	start := time.Since(t0)
	wt.rep.StartMS, wt.rep.StartsPerSec = ms(start), math.Round(float64(w)/start.Seconds()*10)/10
	if err != nil {
		return t0, fmt.Errorf("waiting: start: %w", err)
	}
	r.logf("waiting: started in %s; waiting until all are pending", start.Round(time.Millisecond))
	return t0, nil
}

// awaitPending polls the visibility store until it counts every turn as
// waiting beyond the base already waiting before the run, or the timeout.
func (wt *waitingRun) awaitPending(ctx context.Context, base int64) error {
	r, w := wt.r, int64(wt.turns)
	wctx, cancel := context.WithTimeout(ctx, wt.timeout)
	defer cancel()
	last := time.Now()
	for {
		n, err := r.countWaiting(wctx)
		if err == nil && n-base >= w {
			return nil
		}
		if time.Since(last) > 10*time.Second {
			r.logf("waiting: %d of %d pending", n-base, w)
			last = time.Now()
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("waiting: %d of %d turns pending: %w", n-base, w, wctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// measureListing times the visibility listings, ListPending and the
// first ListPendingPage over the waiting turns. Their failures are
// findings recorded in the report, not reasons to stop measuring.
func (wt *waitingRun) measureListing(ctx context.Context) {
	r, rep := wt.r, wt.rep
	r.logf("waiting: all pending after %s; listing", time.Duration(rep.AllPendingMS*1e6).Round(time.Millisecond))
	for _, size := range []int{1000, 100} {
		rep.VisibilityList = append(rep.VisibilityList, r.listWaiting(ctx, size))
	}
	t1 := time.Now()
	entries, err := r.Client.ListPending(ctx, client.Filter{})
	rep.ListPendingMS, rep.ListPendingEntries = ms(time.Since(t1)), len(entries)
	if err != nil {
		rep.ListPendingErr = err.Error()
		r.logf("waiting: list pending: %v", err)
	}

	t2 := time.Now()
	page, err := r.Client.ListPendingPage(ctx, client.Filter{}, 100, nil)
	rep.FirstPageMS, rep.FirstPageEntries = ms(time.Since(t2)), len(page.Entries)
	if err != nil {
		rep.FirstPageErr = err.Error()
	}
}

// approvalTimes collects the timings of the sampled approvals.
type approvalTimes struct {
	approve, toTool, toResult []time.Duration
}

// approveSample approves the first sampled turns one at a time and
// summarizes their timings into the report.
func (wt *waitingRun) approveSample(ctx context.Context) error {
	wt.r.logf("waiting: approving %d, one at a time", wt.sampled)
	var at approvalTimes
	for _, id := range wt.ids[:wt.sampled] {
		if err := wt.approveOne(ctx, id, &at); err != nil {
			return err
		}
	}
	wt.rep.Approve, wt.rep.ApproveToTool, wt.rep.ApproveToResult = Summarize(at.approve), Summarize(at.toTool), Summarize(at.toResult)
	return nil
}

// approveOne approves turn id's single pending call, waits for the
// turn's result, and adds the timings to at.
func (wt *waitingRun) approveOne(ctx context.Context, id string, at *approvalTimes) error {
	r := wt.r
	ps, err := r.Client.Pending(ctx, id)
	if err != nil {
		return fmt.Errorf("waiting: %s: %w", id, err)
	}
	if len(ps) != 1 {
		return fmt.Errorf("waiting: %s has %d pending entries, want 1", id, len(ps))
	}
	e := client.PendingEntry{WorkflowID: id, Pending: ps[0]}
	t0 := time.Now()
	if _, err := r.Client.Approve(ctx, e.WorkflowID, workflows.Approval{
		CallID: e.CallID, Decision: workflows.DecisionAllow, Hash: e.Hash, By: cmp.Or(r.By, "bench")}); err != nil {
		return fmt.Errorf("waiting: approve %s: %w", e.WorkflowID, err)
	}
	ta := time.Now()
	if _, err := r.Client.Result(ctx, e.WorkflowID); err != nil {
		return fmt.Errorf("waiting: result %s: %w", e.WorkflowID, err)
	}
	at.toResult = append(at.toResult, time.Since(ta))
	at.approve = append(at.approve, ta.Sub(t0))
	wt.done[e.WorkflowID] = true
	evs, err := r.events(ctx, e.WorkflowID)
	if err != nil {
		return fmt.Errorf("waiting: %w", err)
	}
	for _, ev := range evs {
		if ev.Type == workflows.EventResult && ev.CallID == e.CallID {
			at.toTool = append(at.toTool, ev.Time.Sub(ta))
		}
	}
	return nil
}

// terminate ends the turns of ids not in done, returning how many it
// terminated and how long that took. Turns already closed are skipped.
func (r *Runner) terminate(ctx context.Context, ids []string, done map[string]bool, conc int) (int, time.Duration, error) {
	var todo []string
	for _, id := range ids {
		if !done[id] {
			todo = append(todo, id)
		}
	}
	t0 := time.Now()
	n := make([]bool, len(todo))
	err := pool(ctx, len(todo), conc, func(ctx context.Context, i int) error {
		if err := r.Temporal.TerminateWorkflow(ctx, todo[i], "", "bench cleanup"); err != nil {
			if isNotFound(err) {
				return nil
			}
			return fmt.Errorf("terminate %s: %w", todo[i], err)
		}
		n[i] = true
		return nil
	})
	count := 0
	for _, ok := range n {
		if ok {
			count++
		}
	}
	return count, time.Since(t0), err
}
