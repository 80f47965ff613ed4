package workflows

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
)

// slot tracks one call of a model step through the pipeline; it is its
// own carried form.
type slot = SlotState

// runCalls decides every call of one model step, waits for answers to
// ASKs and external calls, then runs the allowed calls in order
// (consecutive concurrency-safe calls in parallel). Results keep call order.
// text is the assistant's text of the step, shown to approvers.
func (t *turn) runCalls(ctx workflow.Context, calls []model.ToolCall, text string) ([]calls.Result, error) {
	slots := make([]*slot, len(calls))
	for i, c := range calls {
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(t.ToolCalls+i+1)
			calls[i] = c
		}
		slots[i] = &slot{Call: c}
		t.emit(ctx, Event{Type: EventToolCall, CallID: c.ID, Tool: c.Name, Input: string(c.Input)})
	}
	t.ToolCalls += len(calls)
	if t.stopped() {
		// Interrupted while the model answered: none of its calls runs.
		t.interruptSlots(slots)
		return t.finishStep(ctx, slots)
	}
	preps, err := t.prepare(ctx, VerdictFirst, calls)
	if err != nil {
		return nil, err
	}
	now := workflow.Now(ctx)
	for i, s := range slots {
		s.Prep = preps[i]
		if t.stopped() {
			continue
		}
		t.classify(ctx, s, now, text)
		if err := t.countWindows(ctx, s, now, text); err != nil {
			return nil, err
		}
	}
	if t.stopped() {
		t.interruptSlots(slots)
	}
	return t.finishStep(ctx, slots)
}

// finishStep waits for the step's pending entries (if any), runs its
// allowed calls and returns the results in call order.
func (t *turn) finishStep(ctx workflow.Context, slots []*slot) ([]calls.Result, error) {
	if len(t.pending) > 0 {
		if err := t.wait(ctx, slots); err != nil {
			return nil, err
		}
	}
	if err := t.execute(ctx, slots); err != nil {
		return nil, err
	}
	out := make([]calls.Result, len(slots))
	for i, s := range slots {
		t.touch(s)
		out[i] = *s.Result
		t.emit(ctx, Event{Type: EventResult, CallID: s.Call.ID, Tool: s.Call.Name, Text: s.Result.Content, Error: s.Result.IsError})
	}
	return out, nil
}

// prepare validates and permission-checks calls as local activities, so
// the verdicts are recorded in history and never re-decided on replay.
//
// kind says why the verdicts are asked for; runs since versionAuditNotes
// record it with them (PrepareInput.Kind).
func (t *turn) prepare(ctx workflow.Context, kind VerdictKind, calls []model.ToolCall) ([]Prepared, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	if q := t.in.ToolQueue; q != "" {
		// The backend lives on the tool queue's workers: check there.
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue: q, StartToCloseTimeout: 30 * time.Second,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
		})
	}
	futs := make([]workflow.Future, len(calls))
	st := t.state
	flags := workflow.GetVersion(ctx, versionPrepareFlags, workflow.DefaultVersion, 1) >= 1
	if !auditNotes(ctx) {
		kind = ""
	}
	for i, c := range calls {
		in := PrepareInput{Call: c, Env: t.env(), Permission: t.perm, Allowed: t.in.Tools, ToolFlags: flags,
			LivePolicy: t.in.LivePolicy, WorkflowID: t.wfid, Agent: t.in.Agent, Kind: kind, Session: t.Touched}
		// Only the stamp of the file the call names, as the calls before
		// it in this step leave the state (a Read then an Edit of the
		// same file in one step is fine).
		cs := stateOf(st, c)
		cs.Tasks = nil
		in.State = &cs
		st = st.Anticipate(c.Name, c.Input)
		if t.in.ToolQueue != "" {
			futs[i] = workflow.ExecuteActivity(ctx, ActivityPrepare, in)
		} else {
			futs[i] = workflow.ExecuteLocalActivity(lctx, ActivityPrepare, in)
		}
	}
	out := make([]Prepared, len(calls))
	for i, f := range futs {
		if err := f.Get(ctx, &out[i]); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", calls[i].ID, err)
		}
		t.adoptTeam(ctx, out[i])
	}
	return out, nil
}

func (t *turn) env() CallEnv { return CallEnv{Backend: t.in.Backend, Workdir: t.in.Workdir} }

// stateFor is the part of the turn's tool state a call needs: the task
// list, and what was read of the file the call names (read-before-write).
// The reads of the whole turn stay in the workflow, so a call's input does
// not grow with every file the turn has read.
func (t *turn) stateFor(c model.ToolCall) calls.State { return stateOf(t.state, c) }

// stateOf is the part of s a call needs: the task list, and the read
// stamp of the file the call names.
func stateOf(s calls.State, c model.ToolCall) calls.State {
	st := calls.State{Tasks: s.Tasks}
	var in struct {
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(c.Input, &in) != nil || in.FilePath == "" {
		return st
	}
	p := path.Clean(in.FilePath)
	if stamp, ok := s.Reads[p]; ok {
		st.Reads = map[string]calls.FileStamp{p: stamp}
	}
	return st
}
