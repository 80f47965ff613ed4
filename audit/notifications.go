// Notifications: the webhook notifications about calls, delivered or
// not, across a continue-as-new.

package audit

import (
	"slices"
	"time"

	"github.com/wardenhq/warden/workflows"
)

// notification records a notification's outcome.
func (x *extractor) notification(t time.Time, in workflows.NotifyInput, decision, reason string) {
	p := in.Pending
	x.record(Record{Time: t, CallID: p.CallID, Tool: p.Tool, Kind: KindNotification, Decision: decision,
		By: "worker", Reason: reason, Layer: "webhook", Notification: in.Type, ProposedInput: p.Input})
}

// notifyFailed records a notification activity that failed for good.
func (x *extractor) notifyFailed(t time.Time, scheduledID int64, why string) {
	in, ok := x.notes[scheduledID]
	if !ok {
		return
	}
	delete(x.notes, scheduledID)
	x.notification(t, in, NotificationUndelivered, why)
}

// inFlight takes the current run's notifications in flight, in the order
// they were sent.
func (x *extractor) inFlight() []workflows.NotifyInput {
	ids := make([]int64, 0, len(x.notes))
	for id := range x.notes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]workflows.NotifyInput, 0, len(ids))
	for _, id := range ids {
		out = append(out, x.notes[id])
	}
	clear(x.notes)
	return out
}

// resent settles the notifications in flight when the last run
// continued as new: those the new run carries (r.Notifying) are sent
// again by it, and their outcome comes from its history; the others were
// abandoned.
func (x *extractor) resent(r *workflows.Resume) {
	for _, in := range x.carried {
		if r != nil && slices.ContainsFunc(r.Notifying, func(c workflows.NotifyInput) bool { return sameNotification(c, in) }) {
			continue
		}
		run := x.run
		x.run = x.carriedRun
		x.notification(x.carriedAt, in, NotificationUndelivered, "the run continued as new before it was delivered")
		x.run = run
	}
	x.carried = nil
}

func sameNotification(a, b workflows.NotifyInput) bool {
	return a.Type == b.Type && a.WorkflowID == b.WorkflowID && a.Pending.CallID == b.Pending.CallID &&
		a.Pending.RequestedAt.Equal(b.Pending.RequestedAt) && a.Pending.Escalated == b.Pending.Escalated
}
