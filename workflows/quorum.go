package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"
)

// ApproverID is who an answer counts as toward a call's quorum: the
// approver it names (By), else the key it came via (Via); "" for an
// answer that names neither, and all such answers count as one approver.
// On a server with keys By is a name the frontend checked: the key's own
// name, or a user its delegate (the inbox) signed in. On a server without
// keys nothing checks a name, so two names are two approvers: a quorum
// then keeps one name from approving twice but cannot tell one person
// typing two names; give approvers keys or inbox users.
func ApproverID(a Approval) string {
	if a.By != "" {
		return a.By
	}
	return a.Via
}

// QuorumText is "1 of 2" for an entry that needs more than one approver
// and has n of them ("" for one that needs one).
func QuorumText(p Pending, n int) string {
	if p.Quorum < 2 {
		return ""
	}
	return fmt.Sprintf("%d of %d", n, p.Quorum)
}

// CheckAnswerable is the part of an answer's check that needs only the
// listed entry: a reason where the policy requires one, and no
// always_allow where no rule can silence the call or the call needs more
// than one approver. Clients run it before sending (the workflow runs it
// again with the rest of its check).
func CheckAnswerable(p Pending, a Approval) error {
	if err := checkReason(p, a); err != nil {
		return err
	}
	return checkAlways(p, a)
}

// checkReason refuses an answer without a reason to an entry whose policy
// requires one (Pending.ReasonRequired).
func checkReason(p Pending, a Approval) error {
	if p.ReasonRequired && strings.TrimSpace(a.Reason) == "" {
		return fmt.Errorf("call %s needs a reason with every answer (the policy's require_reason): answer again with a reason (--reason TEXT, or the inbox's reason field)", a.CallID)
	}
	return nil
}

// checkAlways refuses always_allow where no rule can silence the call
// (a bypass-immune ask, such as a safety check's) and where the call
// needs more than one approver (a rule would let one approver silence
// the quorum rule).
func checkAlways(p Pending, a Approval) error {
	if a.Decision != DecisionAlwaysAllow {
		return nil
	}
	if p.BypassImmune {
		return fmt.Errorf("always_allow refused for call %s: it asks by a safety check that no allow rule silences (%s), so a rule would change nothing; allow it once", a.CallID, p.Reason)
	}
	if p.Quorum > 1 {
		return fmt.Errorf("always_allow refused for call %s: it needs %d distinct approvers (a quorum rule) and a rule would let one approver silence that; allow it once", a.CallID, p.Quorum)
	}
	return nil
}

// checkQuorum checks an allow toward an entry that needs more than one
// approver: the turn's requester never counts, an approver counts once
// (ApproverID), and one key counts as one approver: a key that allowed
// as itself cannot allow again naming someone else, nor the reverse (only
// a delegate, such as the inbox, names others, and then each user it
// signed in counts). A deny is not checked here: any approver's deny
// answers at once.
func (t *turn) checkQuorum(p Pending, a Approval) error {
	if p.Quorum < 2 || a.Decision == DecisionDeny {
		return nil
	}
	id := ApproverID(a)
	if t.in.Requester != "" && id == t.in.Requester {
		return fmt.Errorf("call %s needs %d distinct approvers and %q started this turn: the requester's allow never counts", a.CallID, p.Quorum, id)
	}
	for _, b := range p.Approvals {
		if ApproverID(b) == id {
			return fmt.Errorf("call %s needs %d distinct approvers and %s already allowed it (%s): another approver must allow it", a.CallID, p.Quorum, nameOrAnon(id), QuorumText(p, len(p.Approvals)))
		}
		if a.Via != "" && b.Via == a.Via && (a.By == a.Via) != (b.By == b.Via) {
			return fmt.Errorf("call %s needs %d distinct approvers and key %q already allowed it under another name: one key counts as one approver (only a delegate such as the inbox answers for the users it signs in)", a.CallID, p.Quorum, a.Via)
		}
	}
	return nil
}

func nameOrAnon(id string) string {
	if id == "" {
		return "an approver naming nobody"
	}
	return fmt.Sprintf("%q", id)
}

// partialAllow records an allow that does not yet make its entry's
// quorum: it is kept in Pending.Approvals and recorded as an answered
// event ("1 of 2"), and the entry stays open. It reports false for an
// answer that answers the entry (a deny, the quorum-th allow, an entry
// that needs one approver), which the caller records as the answer.
// Runs recorded before versionQuorum had no quorum entries.
func (t *turn) partialAllow(ctx workflow.Context, a Approval) bool {
	i := t.pendingIndex(a.CallID)
	if i < 0 || t.pending[i].Quorum < 2 || a.Decision == DecisionDeny {
		return false
	}
	if workflow.GetVersion(ctx, versionQuorum, workflow.DefaultVersion, 1) < 1 {
		return false
	}
	p := &t.pending[i]
	if len(p.Approvals)+1 >= p.Quorum {
		return false
	}
	p.Approvals = append(p.Approvals, a)
	t.emit(ctx, Event{Type: EventAnswered, CallID: a.CallID,
		Text: answerText(a) + fmt.Sprintf(" (%s approvals; %d more needed)", QuorumText(*p, len(p.Approvals)), p.Quorum-len(p.Approvals)) + reasonText(a)})
	t.indexDirty = true
	t.notifyProgress(ctx, *p)
	return true
}

// answerText is "allow by alice via inbox".
func answerText(a Approval) string {
	text := string(a.Decision)
	if a.By != "" {
		text += " by " + a.By
	}
	if a.Via != "" && a.Via != a.By {
		text += " via " + a.Via
	}
	return text
}

func reasonText(a Approval) string {
	if a.Reason == "" {
		return ""
	}
	return ": " + a.Reason
}
