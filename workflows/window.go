package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/permission"
)

// Window limits (permission.WindowLimit) bound how many calls a rule's
// matches make per window: "Bash(git push:*)", at most 5 per hour. A
// call counts when it is about to run (a running call counts), once per
// limit, by its key (workflow id/call id/limit). A limit of the turn
// scope counts in the turn's state (a session's turns share it); one of
// the agent scope counts in the agent's budget store, whose Update
// serializes the concurrent turns of the agent: across them, never more
// than max calls start in a window unless a person allowed the extra
// ones. A call that would pass the bound asks, as a budget does; its
// approval runs and counts it. A call a person approved for another
// reason counts without asking again.

// Names of the window reservations.
const (
	// UpdateWindowReserve counts a call against a window limit in an
	// agent's budget store (a WindowReserve, answered with a
	// WindowVerdict).
	UpdateWindowReserve = "window-reserve"
	// ActivityWindowReserve runs UpdateWindowReserve for a turn,
	// starting the agent's store when it does not run yet.
	ActivityWindowReserve = "warden.WindowReserve"
	// MetricWindowReached counts the calls a window limit found at its
	// bound (tags "scope": turn or agent, "enforced": true or false).
	MetricWindowReached = "warden_window_reached"
)

// WindowUse is one call counted against a window limit.
type WindowUse struct {
	// Limit identifies the limit (WindowID).
	Limit string    `json:"limit"`
	Key   string    `json:"key"`
	At    time.Time `json:"at"`
	// Per is the limit's window: the use is dropped once it is older.
	Per time.Duration `json:"per"`
}

// WindowReserve asks an agent's budget store to count a call against a
// window limit.
type WindowReserve struct {
	Store string `json:"store"`
	Agent string `json:"agent,omitempty"`
	// TaskQueue is where the store runs when the activity starts it.
	TaskQueue string                 `json:"task_queue"`
	Limit     permission.WindowLimit `json:"limit"`
	// Key is the call's key (workflow id/call id): a retried reservation
	// is counted once.
	Key string `json:"key"`
	// Force counts the call even at the bound: a person allowed it.
	Force bool `json:"force,omitempty"`
}

// WindowVerdict is the answer to a reservation: OK (counted), or the
// bound reached, with the calls counted in the window and when the
// oldest of them leaves it.
type WindowVerdict struct {
	OK    bool      `json:"ok"`
	Count int       `json:"count"`
	Next  time.Time `json:"next,omitzero"`
}

// WindowNote is a window limit found at its bound for a call (an audit
// note): the call asked (Enforced) or, log-only, ran anyway.
type WindowNote struct {
	CallID   string                 `json:"call_id"`
	Tool     string                 `json:"tool"`
	Limit    permission.WindowLimit `json:"limit"`
	Count    int                    `json:"count"`
	Next     time.Time              `json:"next,omitzero"`
	Enforced bool                   `json:"enforced"`
}

// WindowID identifies a limit among the uses: its rule and window.
func WindowID(l permission.WindowLimit) string { return l.Rule + "/" + l.Per.String() }

// windowScope is the limit's scope, turn by default.
func windowScope(l permission.WindowLimit) string {
	if l.Scope == "" {
		return permission.ScopeTurn
	}
	return l.Scope
}

// reserveUse counts the call key against l at now in uses: already
// counted (a retry) or under the bound (or forced), it is counted; at
// the bound it is refused with the count and when the oldest use leaves
// the window. uses are first pruned of the uses past their window.
func reserveUse(uses []WindowUse, l permission.WindowLimit, key string, now time.Time, force bool) ([]WindowUse, WindowVerdict) {
	id := WindowID(l)
	kept := uses[:0:0]
	for _, u := range uses {
		if u.At.Add(u.Per).After(now) {
			kept = append(kept, u)
		}
	}
	n := 0
	var oldest time.Time
	for _, u := range kept {
		if u.Limit != id {
			continue
		}
		if u.Key == key {
			return kept, WindowVerdict{OK: true, Count: n}
		}
		n++
		if oldest.IsZero() || u.At.Before(oldest) {
			oldest = u.At
		}
	}
	if n >= l.Max && !force {
		return kept, WindowVerdict{Count: n, Next: oldest.Add(l.Per)}
	}
	return append(kept, WindowUse{Limit: id, Key: key, At: now, Per: l.Per}), WindowVerdict{OK: true, Count: n}
}

// reserveWindow is UpdateWindowReserve in the budget store.
func (s *AgentBudgetState) reserveWindow(ctx workflow.Context, r WindowReserve) (WindowVerdict, error) {
	var v WindowVerdict
	s.Windows, v = reserveUse(s.Windows, r.Limit, r.Key, workflow.Now(ctx), r.Force)
	return v, nil
}

func validateWindowReserve(r WindowReserve) error {
	if r.Key == "" {
		return fmt.Errorf("window reservation without a key")
	}
	return r.Limit.Check()
}

// windowsOn reports whether the run counts the slot's call against
// window limits (versionWindows); calls whose verdict names none never
// ask for the change.
func (t *turn) windowsOn(ctx workflow.Context, s *slot) bool {
	return len(s.Prep.Windows) > 0 && workflow.GetVersion(ctx, versionWindows, workflow.DefaultVersion, 1) >= 1
}

// reserve counts the slot's call against l (force: at the bound too).
func (t *turn) reserve(ctx workflow.Context, s *slot, l permission.WindowLimit, force bool) (WindowVerdict, error) {
	key := t.wfid + "/" + s.Call.ID
	if windowScope(l) != permission.ScopeAgent {
		var v WindowVerdict
		t.WindowUses, v = reserveUse(t.WindowUses, l, key, workflow.Now(ctx), force)
		return v, nil
	}
	in := WindowReserve{Store: AgentBudgetStore(t.in.Agent), Agent: t.in.Agent, TaskQueue: workflow.GetInfo(ctx).TaskQueueName,
		Limit: l, Key: key, Force: force}
	var v WindowVerdict
	if err := workflow.ExecuteLocalActivity(chargeOptions(ctx), ActivityWindowReserve, in).Get(ctx, &v); err != nil {
		return v, fmt.Errorf("window limit %s (agent %q): %w", l.Rule, t.in.Agent, err)
	}
	return v, nil
}

// countWindows counts a call about to run against its window limits
// before it runs. A limit at its bound records a WindowNote and, when
// enforced, makes the call ask (layer window) as a budget does: the
// slot is parked and is no longer ready. A log-only limit lets it run.
// A mode that never asks (dont_ask) denies it instead.
func (t *turn) countWindows(ctx workflow.Context, s *slot, now time.Time, text string) error {
	if !s.Ready || !t.windowsOn(ctx, s) {
		return nil
	}
	for _, l := range s.Prep.Windows {
		v, err := t.reserve(ctx, s, l, false)
		if err != nil {
			return err
		}
		if v.OK {
			continue
		}
		workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"scope": windowScope(l), "enforced": fmt.Sprint(l.Enforced())}).
			Counter(MetricWindowReached).Inc(1)
		why := fmt.Sprintf("Window: %s reached its bound of %d calls per %s (%s scope, %d counted); the oldest leaves the window at %s",
			l.Rule, l.Max, l.Per, windowScope(l), v.Count, v.Next.UTC().Format(time.RFC3339))
		if err := recordNote(ctx, AuditNote{Window: &WindowNote{CallID: s.Call.ID, Tool: s.Call.Name, Limit: l, Count: v.Count,
			Next: v.Next, Enforced: l.Enforced()}}); err != nil {
			return err
		}
		if !l.Enforced() {
			t.emit(ctx, Event{Type: EventDecision, CallID: s.Call.ID, Tool: s.Call.Name, Text: "log-only: would ask: " + why})
			continue
		}
		s.Ready = false
		if t.perm.Mode == permission.ModeDontAsk {
			s.Result = denied(s.Call, why)
			return nil
		}
		s.Prep.Decision = permission.Decision{Behavior: permission.Ask, Reason: why,
			Message: "Permission required: " + why + ". Allowing it runs this call and counts it past the bound."}
		s.Prep.Layer = permission.LayerWindow
		t.classify(ctx, s, now, text)
		return nil
	}
	return nil
}

// countApproved counts a call a person allowed against its window
// limits, at the bound too: the person saw it.
func (t *turn) countApproved(ctx workflow.Context, s *slot) error {
	if !t.windowsOn(ctx, s) {
		return nil
	}
	for _, l := range s.Prep.Windows {
		if _, err := t.reserve(ctx, s, l, true); err != nil {
			return err
		}
	}
	return nil
}
