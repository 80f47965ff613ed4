// Reading a running turn for the audit stream: only what its workflow
// tasks have completed, so that the records read now are the first
// records of those read later (the stream sends each once, by number).

package audit

import (
	"context"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	tclient "go.temporal.io/sdk/client"
)

// Settled reads a turn's records as Workflow does, but of a run still
// open only the events up to its last completed workflow task, and says
// whether the turn has closed (then its records are final). Records
// read from a turn's settled history are the first records of any later
// read (TestSettledRecordsArePrefixes).
func Settled(ctx context.Context, c tclient.Client, workflowID string) ([]Record, bool, error) {
	runs, err := Chain(ctx, c, workflowID)
	if err != nil {
		return nil, false, err
	}
	closed := false
	if n := len(runs); n > 0 {
		closed = closedRun(runs[n-1].Events)
		if !closed {
			runs[n-1].Events = settled(runs[n-1].Events)
		}
	}
	recs, err := linked(workflowID, runs)
	if err != nil {
		return nil, false, err
	}
	return recs, closed, nil
}

// closedRun says whether evs end with the run's close (completed,
// failed, timed out, canceled, terminated or continued as new).
func closedRun(evs []*historypb.HistoryEvent) bool {
	if len(evs) == 0 {
		return false
	}
	switch evs[len(evs)-1].GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return true
	}
	return false
}

// settled is evs up to and including the last completed workflow task
// (with the events its completion recorded, which follow it).
func settled(evs []*historypb.HistoryEvent) []*historypb.HistoryEvent {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			// The commands of the task (activities scheduled, markers,
			// timers) follow its completion, up to the next event that
			// is not one of them.
			j := i + 1
			for j < len(evs) && commandEvent(evs[j].GetEventType()) {
				j++
			}
			return evs[:j]
		}
	}
	return nil
}

// commandEvent says whether an event of type t is written by a workflow
// task's completion (one of its commands or messages).
func commandEvent(t enumspb.EventType) bool {
	switch t {
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
		enumspb.EVENT_TYPE_MARKER_RECORDED, enumspb.EVENT_TYPE_TIMER_STARTED, enumspb.EVENT_TYPE_TIMER_CANCELED,
		enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
		enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
		enumspb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
		return true
	}
	return false
}
