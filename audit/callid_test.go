package audit

import (
	"encoding/json"
	"maps"
	"strconv"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	updatepb "go.temporal.io/api/update/v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// verdictTurn builds a turn's history: one model answer with four Bash
// calls (a is denied by a rule, b only reads, c and d ask), an
// always_allow of c by Update, and the re-check of d that the added rule
// allows. Each verdict is a Prepare local-activity marker; named records
// the first four as a worker that names the call and layer does (and
// recheckNamed the re-check), and order is the order of the verdicts'
// activity ids (which the workflow requests in call order: a, b, c, d).
func verdictTurn(t *testing.T, named, recheckNamed bool, order []string) []*historypb.HistoryEvent {
	t.Helper()
	payloads := func(v any) *commonpb.Payloads { return toPayloads(t, v) }
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var evs []*historypb.HistoryEvent
	add := func(typ enumspb.EventType) *historypb.HistoryEvent {
		e := &historypb.HistoryEvent{EventId: int64(len(evs) + 1), EventType: typ, EventTime: timestamppb.New(at.Add(time.Duration(len(evs)) * time.Second))}
		evs = append(evs, e)
		return e
	}
	activityID := 0
	marker := func(typ string, result any) {
		activityID++
		e := add(enumspb.EVENT_TYPE_MARKER_RECORDED)
		data := struct {
			ActivityID   string
			ActivityType string
			ReplayTime   time.Time
		}{strconv.Itoa(activityID), typ, e.GetEventTime().AsTime()}
		e.Attributes = &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
			MarkerName: "LocalActivity", Details: map[string]*commonpb.Payloads{"data": payloads(data), "result": payloads(result)}}}
	}
	verdict := func(named bool, id string, b permission.Behavior, layer permission.Layer, reason string) workflows.Prepared {
		p := workflows.Prepared{Decision: permission.Decision{Behavior: b, Reason: reason}, Flags: &workflows.ToolFlags{}}
		if named {
			p.CallID, p.Layer = id, layer
		}
		return p
	}
	verdicts := map[string]workflows.Prepared{
		"a": verdict(named, "a", permission.Deny, permission.LayerDenyRule, "Rule: Bash(rm -rf:*)"),
		"b": verdict(named, "b", permission.Allow, permission.LayerReadOnly, "Read-only: the call only reads"),
		"c": verdict(named, "c", permission.Ask, permission.LayerMode, "Mode: default"),
		"d": verdict(named, "d", permission.Ask, permission.LayerMode, "Mode: default"),
	}
	input := func(cmd string) json.RawMessage { b, _ := json.Marshal(map[string]string{"command": cmd}); return b }

	started := add(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
	started.Attributes = &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
		Input: payloads(workflows.TurnInput{})}}
	add(enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED)
	marker(workflows.ActivityModelStep, map[string]any{"tool_calls": []model.ToolCall{
		{ID: "a", Name: "Bash", Input: input("rm -rf build")}, {ID: "b", Name: "Bash", Input: input("ls")},
		{ID: "c", Name: "Bash", Input: input("touch one")}, {ID: "d", Name: "Bash", Input: input("touch two")}}})
	add(enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED)
	for _, id := range order {
		marker(workflows.ActivityPrepare, verdicts[id])
	}
	add(enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED)
	up := add(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED)
	up.Attributes = &historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes{WorkflowExecutionUpdateAcceptedEventAttributes: &historypb.WorkflowExecutionUpdateAcceptedEventAttributes{
		AcceptedRequest: &updatepb.Request{Input: &updatepb.Input{Name: workflows.UpdateApprove, Args: payloads(workflows.Approval{
			CallID: "c", Decision: workflows.DecisionAlwaysAllow, Rules: []string{"Bash(touch:*)"}, By: "carol"})}}}}
	marker(workflows.ActivityPrepare, verdict(recheckNamed, "d", permission.Allow, permission.LayerAllowRule, "Rule: Bash(touch:*)"))
	return evs
}

// layers maps call/kind to the decision and layer of its records.
func layers(t *testing.T, evs []*historypb.HistoryEvent) map[string]string {
	t.Helper()
	recs, err := Extract("verdicts", evs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range recs {
		if r.Kind != KindModel {
			out[r.CallID+"/"+r.Kind] = r.Decision + " " + r.Layer
		}
	}
	return out
}

func sameLayers(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: records %q, want %q", what, got, want)
		return
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s = %q, want %q (all: %q)", what, k, got[k], w, got)
		}
	}
}

// TestVerdictsMatchedByCallID: verdicts that name their call are matched
// to it by id, whatever order their markers are in, and their records
// report the layer the engine named ("deny rule", "allow rule"), the
// re-check after an always_allow included. Verdicts of the old shape
// (no call id, no layer: every history in tests/testdata) go through the
// order matcher and report the layer their reason names ("rule"), as
// before. A turn whose worker was upgraded between its model answer and
// the always_allow has both. Control: the named verdicts' markers out of call order, their
// ids left out, are matched by order, to the wrong calls.
func TestVerdictsMatchedByCallID(t *testing.T) {
	t.Parallel()
	inOrder := []string{"a", "b", "c", "d"}
	shuffled := []string{"c", "a", "d", "b"}
	want := map[string]string{
		"a/permission": "deny deny rule", "b/permission": "allow read-only", "c/permission": "ask mode", "d/permission": "ask mode",
		"c/approval": "always_allow approver", "d/recheck": "allow allow rule",
	}
	sameLayers(t, "by call id, in call order", layers(t, verdictTurn(t, true, true, inOrder)), want)
	sameLayers(t, "by call id, out of call order", layers(t, verdictTurn(t, true, true, shuffled)), want)

	old := map[string]string{
		"a/permission": "deny rule", "b/permission": "allow read-only", "c/permission": "ask mode", "d/permission": "ask mode",
		"c/approval": "always_allow approver", "d/recheck": "allow rule",
	}
	sameLayers(t, "old shape, by order", layers(t, verdictTurn(t, false, false, inOrder)), old)

	mixed := maps.Clone(old)
	mixed["d/recheck"] = "allow allow rule"
	sameLayers(t, "old shape, then named", layers(t, verdictTurn(t, false, true, inOrder)), mixed)

	if got := layers(t, verdictTurn(t, false, false, shuffled)); got["a/permission"] == old["a/permission"] {
		t.Errorf("control: verdicts without call ids out of order matched a to its own verdict: %q", got)
	}
}
