package client

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/wardenhq/warden/workflows"
)

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
	if _, err := cl.follow(ctx, workflowID, 0, nil, fn, out); err != nil {
		return workflows.TurnResult{}, err
	}
	return cl.Result(ctx, workflowID)
}

// FollowTurn follows a session's current turn from cursor (an events
// cursor, 0 for the whole stream kept) until it answers, fails or is
// cancelled, or the workflow closes: unlike Follow it does not wait for
// the workflow's result, which a session gives only when it ends. It
// returns the cursor after the last event it passed to fn.
func (cl *Client) FollowTurn(ctx context.Context, workflowID string, cursor int, fn func(workflows.Event), out func(call RunningCall, fresh string)) (int, error) {
	return cl.follow(ctx, workflowID, cursor, func(e workflows.Event) bool {
		return e.Type == workflows.EventFinal || e.Type == workflows.EventFailed
	}, fn, out)
}

// follow passes events from cursor on to fn until one for which last
// says so, the turn is done (last == nil), or the workflow closed.
func (cl *Client) follow(ctx context.Context, workflowID string, cursor int, last func(workflows.Event) bool,
	fn func(workflows.Event), out func(call RunningCall, fresh string)) (int, error) {
	f := &follower{cl: cl, workflowID: workflowID, fn: fn, out: out, seen: map[string]int64{}, shown: map[string]time.Time{}}
	every := cl.PollInterval
	if every <= 0 {
		every = 250 * time.Millisecond
	}
	for {
		f.checkStuck(ctx)
		page, err := cl.Events(ctx, workflowID, cursor)
		if err == nil {
			for _, e := range page.Events {
				if fn != nil {
					fn(e)
				}
				cursor = e.Seq + 1
				if last != nil && last(e) {
					return cursor, nil
				}
			}
			cursor = max(cursor, page.Next)
			if page.Done && last == nil {
				return cursor, nil
			}
			if page.Done {
				if done, _ := cl.closed(ctx, workflowID); done {
					return cursor, nil
				}
			}
			f.reportRunning(ctx)
		} else if done, _ := cl.closed(ctx, workflowID); done {
			return cursor, nil
		}
		select {
		case <-ctx.Done():
			return cursor, ctx.Err()
		case <-time.After(every):
		}
	}
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
