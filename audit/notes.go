// Notes: what a run since the workflows' "audit-notes" change records
// for the audit where it happens (workflows.AuditNote side effects): the
// escalation of an approval whose deadline was reached, and the answer to
// a budget approval. A run with the change's marker is read from these
// records alone; what its history should hold and does not is an error
// (ErrNotRecorded), not a guess. Runs recorded before keep the legacy
// reading (legacyescalations.go, legacy.go).

package audit

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	historypb "go.temporal.io/api/history/v1"

	"github.com/wardenhq/warden/workflows"
)

// changeAuditNotes is the change ID of workflows' versionAuditNotes:
// runs whose history has its Version marker record verdict kinds,
// escalations and budget answers.
const changeAuditNotes = "audit-notes"

// ErrNotRecorded is the error of a history whose run says it records
// what the audit reads (the "audit-notes" marker) but lacks a record: a
// verdict without its kind, a budget approval answered (by an Update)
// without its recorded outcome, a call the turn's pending index shows
// escalated without a recorded escalation, or a call that waited for an
// approval in a turn that ended without a recorded answer.
var ErrNotRecorded = errors.New("audit record missing from the history")

// version reads a Version marker: the run records notes from here on.
func (x *extractor) version(e *historypb.HistoryEvent) {
	a := e.GetMarkerRecordedEventAttributes()
	if a.GetMarkerName() != "Version" {
		return
	}
	var id string
	var v int
	if x.decode(a.GetDetails()["change-id"], &id) != nil || x.decode(a.GetDetails()["version"], &v) != nil {
		return
	}
	if id == changeAuditNotes && v >= 1 {
		x.noted = true
		x.due = nil // the run records its escalations
	}
}

// note reads a side effect that is an audit note; other side effects
// (re-decisions, routed roles, answer checks) do not decode as one, or
// decode with neither field set, and are skipped.
func (x *extractor) note(e *historypb.HistoryEvent) {
	a := e.GetMarkerRecordedEventAttributes()
	if a.GetMarkerName() != "SideEffect" {
		return
	}
	var n workflows.AuditNote
	if x.decode(a.GetDetails()["data"], &n) != nil {
		return
	}
	t := e.GetEventTime().AsTime()
	if n.Escalation != nil {
		x.escalated(t, *n.Escalation)
	}
	if n.Budget != nil {
		x.budgetAnswered(t, *n.Budget)
	}
	if n.Head != nil {
		x.heads = append(x.heads, *n.Head)
	}
	if n.Window != nil {
		x.windowed(t, *n.Window)
	}
}

// windowed records a window limit found at its bound for a call.
func (x *extractor) windowed(t time.Time, n workflows.WindowNote) {
	l := n.Limit
	scope := l.Scope
	if scope == "" {
		scope = "turn"
	}
	why := fmt.Sprintf("%s reached its bound of %d calls per %s (%s scope, %d counted)", l.Rule, l.Max, l.Per, scope, n.Count)
	r := Record{Time: t, CallID: n.CallID, Tool: n.Tool, Kind: KindWindow, Decision: "ask", By: "policy", Path: PathRule,
		Reason: "Window: " + why, Layer: "window"}
	if !n.Enforced {
		r.Decision, r.Reason = "allow", "log-only window limit: "+why
		r.WouldBe = []string{"would ask (window " + l.Rule + "): " + why}
	} else if c := x.calls[n.CallID]; c != nil && c.prepared {
		// The call waits for an approval from here (its verdict was
		// read first: a reservation in a later workflow task).
		c.asked, c.timeout = true, workflows.DefaultApprovalTimeout
	} else {
		// Its verdict, read next (in the same workflow task), is read
		// as an ask.
		x.windowAsks = append(x.windowAsks, n.CallID)
	}
	x.record(r)
}

// escalated records a recorded escalation.
func (x *extractor) escalated(t time.Time, n workflows.EscalationNote) {
	waited := n.Deadline.Sub(n.RequestedAt)
	r := Record{Time: t, CallID: n.CallID, Tool: n.Tool, Kind: KindEscalation, Decision: string(n.Action),
		By: "deadline", Path: PathEscalation, Layer: "deadline", Deadline: n.Deadline, EscalatedTo: n.Roles}
	if n.Notified {
		r.Notification = workflows.NotifyApprovalEscalated
	}
	switch n.Action {
	case workflows.EscalateNotify:
		r.Reason = fmt.Sprintf("approval deadline passed after %s; notified, still waiting", waited)
		if !n.Notified {
			r.Reason = fmt.Sprintf("approval deadline passed after %s; still waiting (no notification sent)", waited)
		}
	case workflows.EscalateAllow:
		r.Reason = fmt.Sprintf("approval deadline passed after %s; allowed", waited)
	default:
		r.Reason = fmt.Sprintf("approval timed out after %s", waited)
	}
	c := x.calls[n.CallID]
	if c != nil {
		r.ProposedInput = c.proposed
	}
	x.markEscalated(n.CallID)
	x.record(r)
	if c == nil || n.Action == workflows.EscalateNotify {
		return // a budget approval's outcome is its budget note
	}
	c.answered = true
	x.answered(c, r)
}

// Decisions of budget records.
const (
	BudgetRaised = "raise"
	BudgetDenied = "deny"
)

// budgetAnswer remembers an answer to a budget approval. One the turn
// accepted (an Update) is applied in the workflow task that accepted it,
// whose commands follow it in the history: a run that records notes
// (known by the end of that task: its marker may come with the note)
// records its outcome there (checkBudgetNotes).
func (x *extractor) budgetAnswer(id, path string) {
	if x.budgetPaths == nil {
		x.budgetPaths = map[string]string{}
	}
	x.budgetPaths[id] = path
	if path == PathUpdate && !slices.Contains(x.budgetOpen, id) {
		x.budgetOpen = append(x.budgetOpen, id)
	}
}

// checkBudgetNotes is called where the commands of the workflow task
// that accepted the budget answers still open have all been read (the
// next task's start, the run's end): in a run that records notes each
// has its note by then.
func (x *extractor) checkBudgetNotes() error {
	open := x.budgetOpen
	x.budgetOpen = nil
	if x.noted && len(open) > 0 {
		return fmt.Errorf("budget approval %s answered without its recorded outcome: %w", strings.Join(open, ", "), ErrNotRecorded)
	}
	return nil
}

// markEscalated notes that c's escalation was read (recorded, or
// re-simulated in a legacy run).
func (x *extractor) markEscalated(id string) {
	if x.escalatedIDs == nil {
		x.escalatedIDs = map[string]bool{}
	}
	x.escalatedIDs[id] = true
}

// indexed reads the pending index a run upserted to its memo: an entry
// it shows escalated must have its escalation recorded (in a run that
// records them, before the upsert that follows it).
func (x *extractor) indexed(e *historypb.HistoryEvent) error {
	if !x.noted {
		return nil
	}
	p := e.GetWorkflowPropertiesModifiedEventAttributes().GetUpsertedMemo().GetFields()[workflows.MemoPending]
	if p == nil {
		return nil
	}
	var idx workflows.PendingIndex
	if err := x.dc.FromPayload(p, &idx); err != nil {
		return nil // an index that does not decode says nothing
	}
	for _, en := range idx.Entries {
		if en.Escalated && !x.escalatedIDs[en.CallID] {
			return fmt.Errorf("call %s escalated without a recorded escalation: %w", en.CallID, ErrNotRecorded)
		}
	}
	return nil
}

// budgetAnswered records a budget approval's recorded answer: a raise
// (by how much, by whom, via what) or a denial with its reason.
func (x *extractor) budgetAnswered(t time.Time, n workflows.BudgetNote) {
	x.budgetOpen = slices.DeleteFunc(x.budgetOpen, func(id string) bool { return id == n.CallID })
	req := n.Request
	reached := fmt.Sprintf("budget %s reached (%s of %s)", req.Kind, req.Spent, req.Limit)
	r := Record{Time: t, CallID: n.CallID, Tool: workflows.BudgetTool, Kind: KindBudget, By: n.By, Identity: n.Via,
		Path: x.budgetPaths[n.CallID], Layer: "approver"}
	if n.By == "deadline" {
		r.Path, r.Layer = PathEscalation, "deadline"
	}
	switch {
	case n.Raise != nil:
		raise := *n.Raise
		r.Decision, r.Raise = BudgetRaised, &raise
		r.Reason = reached + "; raised by " + raise.String()
		if req.Window != "" {
			r.Reason += fmt.Sprintf(" (agent budget %s, %s window)", req.Store, req.Window)
		}
		if n.Reason != "" {
			r.Reason += ": " + n.Reason
		}
	case n.Decision == workflows.DecisionDeny:
		reason := n.Reason
		if reason == "" {
			reason = "no reason given"
		}
		r.Decision, r.Reason = BudgetDenied, reached+"; denied: "+reason
	default:
		r.Decision, r.Reason = BudgetDenied, reached+"; the answer raised nothing"
	}
	x.record(r)
}

// checkNoted fails a run that records notes and lacks one at its end:
// an accepted budget answer without its outcome, or (ended, when the
// turn finished) a call still waiting for an approval nobody recorded an
// answer to.
func (x *extractor) checkNoted(ended bool) error {
	if err := x.checkBudgetNotes(); err != nil {
		return err
	}
	if !x.noted || !ended {
		return nil
	}
	for _, c := range x.seq {
		if c.asked && !c.answered {
			return fmt.Errorf("call %s waited for an approval and the turn ended without a recorded answer: %w", c.id, ErrNotRecorded)
		}
	}
	return nil
}
