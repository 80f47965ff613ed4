package audit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// toolHistory is a run with one regular tool activity (call c1):
// scheduled, then the events end adds (ids from 3).
func toolHistory(t *testing.T, end func(id int64) []*historypb.HistoryEvent) []*historypb.HistoryEvent {
	t.Helper()
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	in := workflows.ToolInput{Key: "turn/c1", Call: model.ToolCall{ID: "c1", Name: "Bash", Input: json.RawMessage(`{"command":"make deploy"}`)}}
	evs := []*historypb.HistoryEvent{
		{EventId: 1, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, EventTime: timestamppb.New(t0),
			Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
				Input: toPayloads(t, workflows.TurnInput{})}}},
		{EventId: 2, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, EventTime: timestamppb.New(t0.Add(time.Second)),
			Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
				ActivityType: &commonpb.ActivityType{Name: workflows.ActivityTool}, Input: toPayloads(t, in)}}},
	}
	for i, e := range end(2) {
		e.EventId, e.EventTime = int64(3+i), timestamppb.New(t0.Add(time.Duration(20+i)*time.Second))
		evs = append(evs, e)
	}
	return evs
}

func heartbeatTimeout() *failurepb.Failure {
	return &failurepb.Failure{Message: "activity Heartbeat timeout", FailureInfo: &failurepb.Failure_TimeoutFailureInfo{
		TimeoutFailureInfo: &failurepb.TimeoutFailureInfo{TimeoutType: enumspb.TIMEOUT_TYPE_HEARTBEAT}}}
}

func started(id int64, attempt int32, last *failurepb.Failure) *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED,
		Attributes: &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{
			ScheduledEventId: id, Attempt: attempt, LastFailure: last}}}
}

func completed(t *testing.T, id int64) *historypb.HistoryEvent {
	out := workflows.ToolOutput{Result: tools.Result{CallID: "c1", Name: "Bash", Content: "deployed"}}
	return &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
		Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
			ScheduledEventId: id, Result: toPayloads(t, out)}}}
}

// headNote is the side effect a run records with its chain head.
func headNote(t *testing.T, format int) *historypb.HistoryEvent {
	n := workflows.AuditNote{Head: &workflows.HeadNote{RunID: "run-1", Seq: 2, Hash: "h", Format: format}}
	return &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_MARKER_RECORDED,
		Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
			MarkerName: "SideEffect", Details: map[string]*commonpb.Payloads{"data": toPayloads(t, n)}}}}
}

// executions lists a call's execution records as "decision: reason".
func executions(rs []Record) []string {
	var out []string
	for _, r := range rs {
		if r.Kind == KindExecution && r.CallID == "c1" {
			out = append(out, r.Decision+": "+r.Reason)
		}
	}
	return out
}

// TestExtractCutOff: a tool call whose worker was killed mid-run reads
// as such, not as a call that ran: cut_off when its activity stopped
// heartbeating for good, cut_off then the attempt that ran it again
// when it was retried, retried for an attempt that failed otherwise.
// Controls: a call that ran once has only its ran record; a run whose
// chain head was recorded by the audit before (a head without its
// format) is read as then, so that head still holds.
func TestExtractCutOff(t *testing.T) {
	tests := []struct {
		name string
		end  func(id int64) []*historypb.HistoryEvent
		want [][]string // per execution record, what it says
	}{
		{"ran once", func(id int64) []*historypb.HistoryEvent {
			return []*historypb.HistoryEvent{started(id, 1, nil), completed(t, id)}
		}, [][]string{{"ran: "}}},
		{"killed, not retried", func(id int64) []*historypb.HistoryEvent {
			return []*historypb.HistoryEvent{{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
				Attributes: &historypb.HistoryEvent_ActivityTaskTimedOutEventAttributes{ActivityTaskTimedOutEventAttributes: &historypb.ActivityTaskTimedOutEventAttributes{
					ScheduledEventId: id, Failure: heartbeatTimeout()}}}}
		}, [][]string{{"ran: "}, {"cut_off: cut off while it ran: no heartbeat"}}},
		{"killed, retried", func(id int64) []*historypb.HistoryEvent {
			return []*historypb.HistoryEvent{started(id, 2, heartbeatTimeout()), completed(t, id)}
		}, [][]string{{"ran: "}, {"cut_off: attempt 1 cut off while it ran: no heartbeat", "; attempt 2 ran it again"}}},
		{"failed, retried", func(id int64) []*historypb.HistoryEvent {
			return []*historypb.HistoryEvent{started(id, 3, &failurepb.Failure{Message: "docker: connection refused"}), completed(t, id)}
		}, [][]string{{"ran: "}, {"retried: attempt 2 failed: docker: connection refused; attempt 3 ran it again"}}},
		{"killed, retried, head recorded before", func(id int64) []*historypb.HistoryEvent {
			return []*historypb.HistoryEvent{started(id, 2, heartbeatTimeout()), completed(t, id), headNote(t, 0)}
		}, [][]string{{"ran: "}}},
		{"killed, retried, head of this format", func(id int64) []*historypb.HistoryEvent {
			return []*historypb.HistoryEvent{started(id, 2, heartbeatTimeout()), completed(t, id), headNote(t, HeadFormat)}
		}, [][]string{{"ran: "}, {"cut_off: attempt 1"}}},
	}
	for _, tt := range tests {
		rs, err := Extract("turn", toolHistory(t, tt.end))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := executions(rs)
		if len(got) != len(tt.want) {
			t.Errorf("%s: execution records %q, want %d", tt.name, got, len(tt.want))
			continue
		}
		for i, parts := range tt.want {
			for _, w := range parts {
				if !strings.Contains(got[i], w) {
					t.Errorf("%s: record %d %q, want it to contain %q", tt.name, i, got[i], w)
				}
			}
		}
	}
	// A later run's old head covers the runs before it.
	runs := []Run{{ID: "r1", Events: toolHistory(t, func(id int64) []*historypb.HistoryEvent {
		return []*historypb.HistoryEvent{started(id, 2, heartbeatTimeout()), completed(t, id)}
	})}, {ID: "r2", Events: []*historypb.HistoryEvent{headNote(t, 0)}}}
	rs, err := ExtractChain("turn", runs)
	if err != nil {
		t.Fatal(err)
	}
	if got := executions(rs); len(got) != 1 {
		t.Errorf("a run before an old head: %q, want its ran record only", got)
	}
}
