package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/workflows"
)

// Job is one turn of a batch.
type Job struct {
	// ID names the job; the turn's workflow id is BatchWorkflowID(ID).
	ID    string
	Input workflows.TurnInput
}

// Job statuses in a JobResult.
const (
	// JobCompleted: the turn ended and returned a result (its tool calls
	// may still have failed; see ToolErrors).
	JobCompleted = "completed"
	// JobFailed: the turn failed, was terminated, timed out, or could not
	// be started.
	JobFailed = "failed"
	// JobInterrupted: the batch stopped (its context ended) before the
	// job finished; running it again picks the turn up.
	JobInterrupted = "interrupted"
)

// JobResult is one job's outcome.
type JobResult struct {
	ID         string `json:"id"`
	WorkflowID string `json:"workflow_id"`
	// Status is JobCompleted, JobFailed or JobInterrupted.
	Status string `json:"status"`
	Answer string `json:"answer"`
	Error  string `json:"error,omitempty"`
	// Existing is set when the turn was already there (running or
	// finished) and this batch only collected it.
	Existing bool `json:"existing,omitempty"`
	// ToolCalls and ToolErrors count the turn's tool results and those of
	// them that were errors.
	ToolCalls  int `json:"tool_calls"`
	ToolErrors int `json:"tool_errors"`
}

// BatchProgress is a snapshot of a running batch.
type BatchProgress struct {
	Total int `json:"total"`
	// Started counts turns this batch started; Existing those it found
	// already started (by an earlier, maybe crashed, run of the batch).
	Started  int `json:"started"`
	Existing int `json:"existing"`
	// Running counts jobs in flight (started or attached, not finished).
	Running int `json:"running"`
	Done    int `json:"done"`
	Failed  int `json:"failed"`
}

// BatchOptions tunes RunBatch. The zero value is valid.
type BatchOptions struct {
	// Concurrency bounds the jobs in flight (default 10).
	Concurrency int
	// Progress, when set, is called every ProgressEvery (default 1 s)
	// while the batch runs, and once at the end.
	Progress      func(BatchProgress)
	ProgressEvery time.Duration
	// OnResult, when set, is called as each job finishes (from several
	// goroutines, one call at a time).
	OnResult func(JobResult)
}

// BatchWorkflowID is the workflow id of a batch job: "batch-" + job id.
func BatchWorkflowID(jobID string) string { return "batch-" + jobID }

// RunBatch runs one turn per job, at most opts.Concurrency at a time,
// and returns the results in job order. It is safe to run again after a
// crash (of the batch, a worker, or the server): a job whose turn is
// running is waited for and one whose turn already finished is only
// collected; no turn is ever started twice. Job ids must be unique and
// non-empty. When ctx ends, unfinished jobs are JobInterrupted and the
// context's error is returned with the results.
func (cl *Client) RunBatch(ctx context.Context, jobs []Job, opts BatchOptions) ([]JobResult, error) {
	if err := checkJobIDs(jobs); err != nil {
		return nil, err
	}
	n := opts.Concurrency
	if n <= 0 {
		n = 10
	}
	b := &batchRun{cl: cl, jobs: jobs, opts: opts, results: make([]JobResult, len(jobs)), prog: BatchProgress{Total: len(jobs)}}
	stopTicker := b.tick()
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				b.run(ctx, i)
			}
		}()
	}
	b.feed(ctx, next)
	close(next)
	wg.Wait()
	stopTicker()
	if opts.Progress != nil {
		opts.Progress(b.snapshot())
	}
	return b.results, ctx.Err()
}

// checkJobIDs refuses jobs without an id or with the same id twice.
func checkJobIDs(jobs []Job) error {
	seen := make(map[string]bool, len(jobs))
	for i, j := range jobs {
		if j.ID == "" {
			return fmt.Errorf("batch: job %d has no id", i+1)
		}
		if seen[j.ID] {
			return fmt.Errorf("batch: job id %q appears twice", j.ID)
		}
		seen[j.ID] = true
	}
	return nil
}

// batchRun is one RunBatch: its jobs, their results and the progress,
// which mu guards.
type batchRun struct {
	cl      *Client
	jobs    []Job
	opts    BatchOptions
	mu      sync.Mutex
	results []JobResult
	prog    BatchProgress
}

func (b *batchRun) snapshot() BatchProgress {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.prog
}

// tick reports progress every opts.ProgressEvery (default 1 s) until the
// returned stop is called; nothing without opts.Progress.
func (b *batchRun) tick() (stop func()) {
	if b.opts.Progress == nil {
		return func() {}
	}
	every := b.opts.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				b.opts.Progress(b.snapshot())
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// feed hands out the jobs in order; once ctx is done, the jobs not
// handed out are interrupted.
func (b *batchRun) feed(ctx context.Context, next chan<- int) {
	for i := range b.jobs {
		select {
		case next <- i:
		case <-ctx.Done():
			for j := i; j < len(b.jobs); j++ {
				b.results[j] = JobResult{ID: b.jobs[j].ID, WorkflowID: BatchWorkflowID(b.jobs[j].ID), Status: JobInterrupted}
			}
			return
		}
	}
}

// run runs job i and counts it: running once it has a turn (started or
// found), then done or failed.
func (b *batchRun) run(ctx context.Context, i int) {
	attached := false
	r := b.cl.runJob(ctx, b.jobs[i], func(existing bool) {
		b.mu.Lock()
		defer b.mu.Unlock()
		attached = true
		b.prog.Running++
		if existing {
			b.prog.Existing++
		} else {
			b.prog.Started++
		}
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	b.results[i] = r
	if attached {
		b.prog.Running--
	}
	switch r.Status {
	case JobCompleted:
		b.prog.Done++
	case JobFailed:
		b.prog.Failed++
	}
	if b.opts.OnResult != nil {
		b.opts.OnResult(r)
	}
}

// runJob starts or finds one job's turn, calls attached once it has one
// (existing tells whether the turn was there already), and waits for it.
func (cl *Client) runJob(ctx context.Context, j Job, attached func(existing bool)) JobResult {
	id := BatchWorkflowID(j.ID)
	r := JobResult{ID: j.ID, WorkflowID: id}
	fail := func(err error) JobResult {
		r.Status, r.Error = JobFailed, err.Error()
		if ctx.Err() != nil {
			r.Status = JobInterrupted
		}
		return r
	}
	existing, err := cl.startOnce(ctx, id, j.Input)
	if err != nil {
		return fail(err)
	}
	r.Existing = existing
	attached(existing)
	var res workflows.TurnResult
	if err := cl.c.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		return fail(fmt.Errorf("turn %s: %w", id, err))
	}
	r.Status, r.Answer = JobCompleted, res.Answer
	r.ToolCalls, r.ToolErrors = res.ToolCalls, res.ToolErrors
	if res.Conversation == "" {
		// A turn recorded before content by reference: count its messages.
		r.ToolCalls, r.ToolErrors = 0, 0
		for _, m := range res.Messages {
			if m.Role == model.RoleTool {
				r.ToolCalls++
				if m.IsError {
					r.ToolErrors++
				}
			}
		}
	}
	return r
}

// startOnce starts the turn unless a run of its workflow id exists,
// running or closed; it reports whether one existed. The start itself
// rejects a duplicate id (a concurrent start of the same id attaches to
// the running turn; a closed one is never started again).
func (cl *Client) startOnce(ctx context.Context, id string, in workflows.TurnInput) (bool, error) {
	in = cl.withApprovers(in)
	_, err := cl.c.DescribeWorkflowExecution(ctx, id, "")
	if err == nil {
		return true, nil
	}
	if _, ok := errors.AsType[*serviceerror.NotFound](err); !ok {
		return false, fmt.Errorf("describe %s: %w", id, err)
	}
	if _, err := CheckQuorum(in.Approvers, in.Permission.Quorum, in.Requester); err != nil {
		return false, fmt.Errorf("start %s: permission: %w", id, err)
	}
	if in, err = cl.withLivePolicy(ctx, in); err != nil {
		return false, err
	}
	opts := tclient.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                cl.taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
	if _, err := cl.c.ExecuteWorkflow(ctx, opts, workflows.TurnWorkflow, in); err != nil {
		if _, ok := errors.AsType[*serviceerror.WorkflowExecutionAlreadyStarted](err); ok {
			return true, nil
		}
		return false, fmt.Errorf("start %s: %w", id, err)
	}
	return false, nil
}

// String is the progress as one line: the jobs, and how many were
// started, found already started, are running, done and failed.
func (p BatchProgress) String() string {
	return fmt.Sprintf("%d jobs: %d started, %d existing, %d running, %d done, %d failed",
		p.Total, p.Started, p.Existing, p.Running, p.Done, p.Failed)
}
