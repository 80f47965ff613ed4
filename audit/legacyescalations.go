// Legacy escalations, for runs recorded before versionAuditNotes
// ("audit-notes"), which recorded no escalation: the approval deadlines
// of waiting calls are derived from their recorded policy and the
// workflow's clock, and what happened when one passed (deny, allow, or
// notify and keep waiting) is re-simulated. Runs with the marker record
// each escalation where it happens (workflows.EscalationNote), which
// notes.go reads; none of this runs for them.

package audit

import (
	"fmt"
	"time"

	"github.com/wardenhq/warden/workflows"
)

// due is an escalation the workflow applies in a workflow task, unless
// an answer accepted in that task comes first.
type due struct {
	at    time.Time
	calls []*call
}

// startAsks starts the clocks of the batch's asks once every call of
// the batch has its verdict: each deadline is the workflow time the call
// was parked at plus its timeout.
func (x *extractor) startAsks() {
	if x.noted || len(x.batch) > 0 {
		return
	}
	for _, c := range x.fresh {
		if c.timeout > 0 {
			c.deadline = x.now.Add(c.timeout)
		}
	}
	x.fresh = nil
}

// scheduleDue finds the asks whose deadline has passed at a workflow
// task's start; they escalate in that task unless an answer comes first.
func (x *extractor) scheduleDue(now time.Time) {
	if x.noted {
		return
	}
	fired := x.fired
	x.fired = false
	var d []*call
	for _, c := range x.seq {
		if c.asked && !c.answered && !c.deadline.IsZero() && !c.deadline.After(now) {
			d = append(d, c)
		}
	}
	if len(d) == 0 && fired {
		// A deadline timer fired: its ask escalates even if the recorded
		// clock puts the deadline a moment later.
		var first *call
		for _, c := range x.seq {
			if c.asked && !c.answered && !c.deadline.IsZero() && c.deadline.Sub(now) < time.Second &&
				(first == nil || c.deadline.Before(first.deadline)) {
				first = c
			}
		}
		if first != nil {
			d = append(d, first)
		}
	}
	if len(d) > 0 {
		x.due = &due{at: now, calls: d}
	}
}

// flushDue records the escalations of the last workflow task (none in
// runs that record them: their due is never set).
func (x *extractor) flushDue() {
	d := x.due
	x.due = nil
	if d == nil {
		return
	}
	for _, c := range d.calls {
		if !c.asked || c.answered || c.deadline.IsZero() {
			continue
		}
		action := c.escalation
		if action == "" {
			action = workflows.EscalateDeny
		}
		reason := fmt.Sprintf("approval deadline passed after %s", c.timeout)
		switch action {
		case workflows.EscalateNotify:
			c.deadline = time.Time{} // keeps waiting, without a deadline
			reason += "; notified, still waiting"
		case workflows.EscalateAllow:
			c.answered = true
			reason += "; allowed"
		default:
			c.answered = true
			reason = fmt.Sprintf("approval timed out after %s", c.timeout)
		}
		r := Record{Time: d.at, CallID: c.id, Tool: c.tool, Kind: KindEscalation, Decision: string(action),
			By: "deadline", Path: PathEscalation, Reason: reason, Layer: "deadline", ProposedInput: c.proposed}
		x.record(r)
		x.markEscalated(c.id)
		if action != workflows.EscalateNotify {
			x.answered(c, r)
		}
	}
}
