package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/calls"
)

// Error types activities return that must not be retried.
const (
	ErrTypeUnknownModel = "UnknownModel"
	ErrTypeUnknownTool  = "UnknownTool"
	ErrTypeInvalidInput = "InvalidInput"
)

// execute runs the ready calls in order. Consecutive calls of
// concurrency-safe tools that do not touch turn state run in parallel.
//
// An interrupt (session.go) cancels the calls that run (their activities
// are asked to stop, and their results say what they printed) and keeps
// the calls after them from starting; a pause holds the next calls until
// resumed.
func (t *turn) execute(ctx workflow.Context, slots []*slot) error {
	rctx, stop := workflow.WithCancel(ctx)
	t.stopRunning = stop
	defer func() {
		t.stopRunning = nil
		stop()
	}()
	for i := 0; i < len(slots); {
		if !slots[i].Ready {
			i++
			continue
		}
		if err := t.holdWhilePaused(ctx); err != nil {
			return err
		}
		if t.stopped() {
			t.interruptSlots(slots[i:])
			return nil
		}
		j := i + 1
		if parallel(slots[i]) {
			for j < len(slots) && (!slots[j].Ready || parallel(slots[j])) {
				j++
			}
		}
		var batch []*slot
		for _, s := range slots[i:j] {
			if s.Ready {
				batch = append(batch, s)
			}
		}
		futs := make([]workflow.Future, len(batch))
		for k, s := range batch {
			futs[k] = t.startTool(rctx, s)
		}
		for k, s := range batch {
			out, err := t.finishTool(rctx, s, futs[k])
			if err != nil {
				return err
			}
			s.Result = out
		}
		i = j
	}
	return nil
}

func parallel(s *slot) bool {
	f := s.Prep.ToolFlags()
	return f.ConcurrencySafe && !f.StateInjected
}

// toolInput is a call's tool activity input: the part of the tool state
// the call needs, its result's content stored by reference (a run with an
// inline conversation sends the whole state and gets content inline, see
// legacy.go).
func (t *turn) toolInput(ctx workflow.Context, s *slot) ToolInput {
	in := ToolInput{Key: workflow.GetInfo(ctx).WorkflowExecution.ID + "/" + s.Call.ID, Call: s.Call, Env: t.env(), State: t.state, ByRef: t.byRef,
		Sandbox: s.Prep.Sandbox}
	if t.byRef {
		in.State = t.stateFor(s.Call)
	}
	return in
}

func retryPolicy(p CallPolicy) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval: p.InitialInterval, BackoffCoefficient: p.BackoffCoefficient, MaximumInterval: p.MaxInterval,
		MaximumAttempts:        max(p.MaxAttempts, 1),
		NonRetryableErrorTypes: append([]string{ErrTypeUnknownTool, ErrTypeInvalidInput}, p.NonRetryable...),
	}
}

// startTool schedules a call: as a local activity on the fast path
// (its result is recorded in history like any activity's), else as a
// regular activity.
func (t *turn) startTool(ctx workflow.Context, s *slot) workflow.Future {
	p := s.Prep.Policy
	if p.Local && t.in.ToolQueue == "" {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: p.LocalTimeout,
			RetryPolicy:         retryPolicy(p),
		})
		return workflow.ExecuteLocalActivity(lctx, ActivityTool, t.toolInput(ctx, s))
	}
	return t.startRegular(ctx, s)
}

func (t *turn) startRegular(ctx workflow.Context, s *slot) workflow.Future {
	p := s.Prep.Policy
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 11 * time.Minute
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           t.in.ToolQueue,
		ActivityID:          "tool-" + s.Call.ID,
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy:         retryPolicy(p),
		// An interrupted call's result waits for the activity to stop
		// and report what it printed.
		WaitForCancellation: true,
	})
	return workflow.ExecuteActivity(actx, ActivityTool, t.toolInput(ctx, s))
}

// finishTool waits for a call's result (ctx is the one the call started
// with, which an interrupt cancels). A fast-path call that ran out of
// its local time bound is rescheduled as a regular activity. A failed
// activity becomes an error result the model reads.
func (t *turn) finishTool(ctx workflow.Context, s *slot, f workflow.Future) (*calls.Result, error) {
	var out ToolOutput
	err := f.Get(ctx, &out)
	if r := t.stoppedResult(s, err); r != nil {
		return r, nil
	}
	var te *temporal.TimeoutError
	if err != nil && s.Prep.Policy.Local && t.in.ToolQueue == "" && errors.As(err, &te) {
		t.emit(ctx, Event{Type: EventDecision, CallID: s.Call.ID, Tool: s.Call.Name, Text: "fast path timed out: rescheduled as a regular activity"})
		err = t.startRegular(ctx, s).Get(ctx, &out)
		if r := t.stoppedResult(s, err); r != nil {
			return r, nil
		}
	}
	if err != nil {
		if !isActivityFailure(err) {
			return nil, err
		}
		msg := "Tool failed: " + rootMessage(err)
		if s.Prep.Policy.MaxAttempts <= 1 && !s.Prep.ReadOnly {
			msg += "\nThe call was not retried because it may have had side effects; check its effects before trying again."
		}
		return &calls.Result{CallID: s.Call.ID, Name: s.Call.Name, IsError: true, State: calls.StateError, Content: msg}, nil
	}
	out.Result.CallID, out.Result.Name = s.Call.ID, s.Call.Name
	t.mergeState(out.State)
	return &out.Result, nil
}

// mergeState folds a call's returned state into the turn's: reads merge
// (parallel reads each add their files), the task list is replaced.
func (t *turn) mergeState(s calls.State) {
	if len(s.Reads) > 0 && t.state.Reads == nil {
		t.state.Reads = map[string]calls.FileStamp{}
	}
	for _, k := range workflow.DeterministicKeys(s.Reads) {
		t.state.Reads[k] = s.Reads[k]
	}
	t.state.Tasks = s.Tasks
}

// stoppedResult is the result of a call an interrupt cancelled while it
// ran (nil when it was not): what it printed until it stopped comes with
// the cancellation (ToolProgress); a fast-path call reports none.
func (t *turn) stoppedResult(s *slot, err error) *calls.Result {
	var ce *temporal.CanceledError
	if err == nil || !t.stopped() || !errors.As(err, &ce) {
		return nil
	}
	var prog ToolProgress
	if ce.HasDetails() {
		_ = ce.Details(&prog)
	}
	return interrupted(s.Call, t.interruptWhy(), true, prog.Output)
}

func isActivityFailure(err error) bool {
	var actErr *temporal.ActivityError
	return errors.As(err, &actErr)
}

// rootMessage is the failure message of an activity error: the
// application error's own message (with the context the activity wrapped
// around it), else the innermost error's.
func rootMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
