// Evidence: what a call did when it ran: its execution with the input it
// ran with, the connections its processes asked the egress proxy for and
// a limit that ended it.

package audit

import (
	"encoding/json"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/workflows"
)

// execution records a call that ran (once, even when a fast-path call is
// rescheduled as a regular activity).
func (x *extractor) execution(t time.Time, id, tool string, input json.RawMessage, layer string) {
	c := x.calls[id]
	if c == nil {
		c = x.newCall(model.ToolCall{ID: id, Name: tool, Input: input})
		c.prepared = true
	}
	if c.ran {
		return
	}
	c.ran = true
	x.record(Record{Time: t, CallID: id, Tool: c.tool, Kind: KindExecution, Decision: "ran", By: "worker",
		Layer: layer, ProposedInput: c.proposed, ApprovedInput: c.approved, EffectiveInput: input})
}

// toolEnded records how a tool activity that did not complete ended
// (decision failed, timed_out, or interrupted: its activity was
// cancelled), after the record that says it ran: a call killed mid-run
// does not read as one that ran to its end.
func (x *extractor) toolEnded(t time.Time, scheduledID int64, decision, why string) {
	s, ok := x.sched[scheduledID]
	if !ok || s.name != workflows.ActivityTool {
		return
	}
	var in workflows.ToolInput
	if x.decode(s.input, &in) != nil {
		return
	}
	x.record(Record{Time: t, CallID: in.Call.ID, Tool: in.Call.Name, Kind: KindExecution, Decision: decision, By: "worker",
		Layer: "activity", Reason: why, EffectiveInput: in.Call.Input})
}

// Decisions of execution records beyond ran, failed, timed_out and
// interrupted.
const (
	// ExecutionCutOff: the tool activity stopped heartbeating while it
	// ran (its worker was killed or lost): its processes may have done
	// part of the work. Recorded for the last attempt, or for an
	// attempt another one ran again.
	ExecutionCutOff = "cut_off"
	// ExecutionRetried: an attempt failed and another ran the call
	// again.
	ExecutionRetried = "retried"
)

// cutOff is the decision and reason of an activity that timed out
// because it stopped heartbeating ("" for other failures).
func cutOff(f *failurepb.Failure) (string, string) {
	if f.GetTimeoutFailureInfo().GetTimeoutType() != enumspb.TIMEOUT_TYPE_HEARTBEAT {
		return "", ""
	}
	return ExecutionCutOff, "cut off while it ran: no heartbeat (its worker was killed or lost), so it may have done part of its work"
}

// toolRetried records that a tool activity's earlier attempt ended with
// failure f and attempt ran the call again: cut_off when the attempt
// stopped heartbeating (a worker killed mid-run), else retried.
func (x *extractor) toolRetried(t time.Time, scheduledID int64, attempt int32, f *failurepb.Failure) {
	d, why := cutOff(f)
	if d == "" {
		d, why = ExecutionRetried, "failed: "+f.GetMessage()
	}
	x.toolEnded(t, scheduledID, d, fmt.Sprintf("attempt %d %s; attempt %d ran it again", attempt-1, why, attempt))
}

// evidence records what a call's result says its processes did beyond
// their output: each connection the egress proxy saw
// (Metadata["connections"]) and the limit that ended the call
// (Metadata["limit"]). A connection is also kept with the call's
// verdict, for what-if.
func (x *extractor) evidence(t time.Time, res calls.Result) {
	conns := Connections(res.Metadata)
	limit, _ := res.Metadata["limit"].(string)
	if len(conns) == 0 && limit == "" {
		return
	}
	tool := res.Name
	c := x.calls[res.CallID]
	if c != nil && tool == "" {
		tool = c.tool
	}
	for _, conn := range conns {
		d := ConnectionRefused
		if conn.Allowed {
			d = ConnectionAllowed
		}
		x.record(Record{Time: t, CallID: res.CallID, Tool: tool, Kind: KindConnection, Decision: d, By: "proxy",
			Reason: conn.String(), Layer: "egress", Connection: &conn})
		if c != nil && c.dec != nil {
			c.dec.Connections = append(c.dec.Connections, conn)
		}
	}
	if limit != "" {
		x.record(Record{Time: t, CallID: res.CallID, Tool: tool, Kind: KindLimit, Decision: "ended", By: "worker",
			Reason: limit, Layer: "limits"})
	}
}

// Connections reads the connections of a tool result's metadata
// (Metadata["connections"]: []calls.Connection, or what a JSON round
// trip makes of it); entries that do not decode are left out.
func Connections(md map[string]any) []calls.Connection {
	v, ok := md["connections"]
	if !ok || v == nil {
		return nil
	}
	if cs, ok := v.([]calls.Connection); ok {
		return cs
	}
	list, ok := v.([]any)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil || json.Unmarshal(b, &list) != nil {
			return nil
		}
	}
	var out []calls.Connection
	for _, e := range list {
		b, err := json.Marshal(e)
		if err != nil {
			continue
		}
		var c calls.Connection
		if json.Unmarshal(b, &c) == nil && c.Host != "" {
			out = append(out, c)
		}
	}
	return out
}
