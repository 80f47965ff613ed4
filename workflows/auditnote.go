package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// VerdictKind says why the workflow asks Prepare for a verdict
// (PrepareInput.Kind, echoed in Prepared.Kind). Runs recorded before
// versionAuditNotes leave it empty.
type VerdictKind string

// The verdict kinds.
const (
	// VerdictFirst is a call's first check.
	VerdictFirst VerdictKind = "first"
	// VerdictRedecide is a waiting call decided again after its policy
	// changed (an approver's rule added, or a live policy store's new
	// version).
	VerdictRedecide VerdictKind = "redecide"
	// VerdictEdit is the check of an input an approver edited (a new
	// call).
	VerdictEdit VerdictKind = "edit"
)

// AuditNote is what a run since versionAuditNotes records for the audit
// where it happens, as a side effect: an escalation at an approval's
// deadline, the answer to a budget approval, the head of the audit
// chain as a run ends, or a window limit found at its bound. Exactly one field is set.
// The audit reads these records and guesses neither.
type AuditNote struct {
	Escalation *EscalationNote `json:"escalation,omitempty"`
	Budget     *BudgetNote     `json:"budget,omitempty"`
	Head       *HeadNote       `json:"head,omitempty"`
	Window     *WindowNote     `json:"window,omitempty"`
}

// HeadNote is the head of the turn's audit chain as a run ends (since
// versionAuditHead): the number and hash of the turn's last audit record
// then, as the audit numbers and chains them, over the history up to the
// run's last completed workflow task. A history changed afterwards (an
// event edited, removed or added before that point) gives records whose
// chain no longer reaches Hash at Seq, and the audit says so.
type HeadNote struct {
	RunID string `json:"run_id"`
	Seq   int    `json:"seq"`
	Hash  string `json:"hash"`
	// Format is how the audit that computed the head reads a history
	// (audit.HeadFormat; 0 before it was recorded).
	Format int `json:"format,omitempty"`
}

// ActivityAuditHead reads a turn's settled history and returns the head
// of its audit chain (a HeadNote; Seq 0 when it has no record yet).
const ActivityAuditHead = "warden.AuditHead"

// recordHead records the head of the turn's audit chain as the run ends
// (versionAuditHead): a local activity, or a regular one on the tool
// queue for a turn that has one. It never fails the turn: a head that cannot be read
// is logged and left unrecorded, and the audit then has no head to check
// this run against.
func (t *turn) recordHead(ctx workflow.Context) {
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	if workflow.GetVersion(ctx, versionAuditHead, workflow.DefaultVersion, 1) < 1 {
		return
	}
	retry := &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3}
	var f workflow.Future
	if q := t.in.ToolQueue; q != "" {
		// Its activities run on the tool queue's workers, like Prepare.
		f = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue: q, StartToCloseTimeout: 30 * time.Second, RetryPolicy: retry,
		}), ActivityAuditHead, t.wfid)
	} else {
		f = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: 30 * time.Second, RetryPolicy: retry,
		}), ActivityAuditHead, t.wfid)
	}
	var h HeadNote
	if err := f.Get(ctx, &h); err != nil {
		workflow.GetLogger(ctx).Warn("the audit chain's head was not recorded", "error", err)
		return
	}
	if h.Seq == 0 {
		return
	}
	// Recorded as a side effect under this change ID alone: asking
	// versionAuditNotes here, in a run that has not asked it yet, would
	// mark the whole run as one that records its notes.
	var out AuditNote
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return AuditNote{Head: &h} }).Get(&out); err != nil {
		workflow.GetLogger(ctx).Warn("the audit chain's head was not recorded", "error", err)
	}
}

// EscalationNote is an approval whose deadline was reached.
type EscalationNote struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// RequestedAt is when the call started waiting and Deadline the
	// deadline reached (the workflow's clock).
	RequestedAt time.Time `json:"requested_at"`
	Deadline    time.Time `json:"deadline"`
	// Action is the escalation applied: deny (the default), allow, or
	// notify (the call keeps waiting, without a deadline).
	Action Escalation `json:"action"`
	// Notified says an approval_escalated notification was sent;
	// Roles are the approver roles it was routed by (those whose rules
	// cover the call), when the turn's approvers have roles.
	Notified bool     `json:"notified,omitempty"`
	Roles    []string `json:"roles,omitempty"`
}

// BudgetNote is the answer a budget approval (PendingBudget) got: a
// raise (Raise, by its approver) or a denial (Reason), which ends the
// turn. An escalation's answer is By "deadline".
type BudgetNote struct {
	CallID string `json:"call_id"`
	// Request is the bound the turn reached (an agent budget's names its
	// agent, window and store).
	Request  BudgetRequest `json:"request"`
	Decision Decision      `json:"decision"`
	// Raise is what an allow added to the bound (nil: nothing, which
	// ends the turn as a denial does).
	Raise  *Budget `json:"raise,omitempty"`
	By     string  `json:"by,omitempty"`
	Via    string  `json:"via,omitempty"`
	Reason string  `json:"reason,omitempty"`
}

// auditNotes reports whether the run records verdict kinds and audit
// notes (versionAuditNotes). Every caller asks the same change ID: its
// marker is recorded where the first of them runs.
func auditNotes(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, versionAuditNotes, workflow.DefaultVersion, 1) >= 1
}

// recordNote records n for the audit (a side effect), in runs since
// versionAuditNotes.
func recordNote(ctx workflow.Context, n AuditNote) error {
	if !auditNotes(ctx) {
		return nil
	}
	var out AuditNote
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return n }).Get(&out); err != nil {
		return fmt.Errorf("record audit note: %w", err)
	}
	return nil
}
