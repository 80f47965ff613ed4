// The order matcher, for histories recorded before Prepare results named
// their call (workflows.Prepared.CallID) and the layer that decided
// (Prepared.Layer): turns recorded by workers of earlier releases, which
// may still be in flight or read long after, and every history in
// tests/testdata. A verdict recorded as a local-activity marker without a
// call id is matched to its call by the order the workflow prepares calls
// in (nextPrepared), and its layer is read from its reason (Layer).
//
// Nothing else uses it: verdicts that name their call are matched by id
// (verdictCall, verdicts.go), as are those of regular activities
// (tool-queue turns), whose recorded input names the call.
//
// Verdicts that name their call but were recorded before their kind was
// (workflows.Prepared.Kind, since versionAuditNotes) have their kind
// guessed from the call's state (guessKind); so do all verdicts matched
// by order.

package audit

import "strings"

// legacyOrder is what the order matcher keeps beyond the calls: whether
// an always_allow was accepted (the next verdicts without a call are
// re-checks of the open asks) and the asks the current re-check round
// has yet to re-check.
type legacyOrder struct {
	recheck bool
	round   []*call
}

// nextPrepared picks the call a local-activity marker's verdict that
// names no call is about, by the order the workflow prepares calls in:
// the calls of each model answer in order (the markers of one task are
// sorted by activity id, which follows that order), then, after an
// always_allow, one re-check of every open ask in the order they
// started waiting, then an edited input. tool is the verdict's tool,
// empty in verdicts recorded with only the tool's flags.
func (x *extractor) nextPrepared(tool string) (*call, string) {
	if len(x.batch) > 0 && (tool == "" || x.batch[0].tool == tool) {
		c := x.batch[0]
		x.batch = x.batch[1:]
		return c, KindPermission
	}
	if x.legacy.recheck && x.legacy.round == nil {
		// One round re-checks every open ask once, in the order they
		// started waiting.
		for _, c := range x.seq {
			if c.asked && !c.answered {
				x.legacy.round = append(x.legacy.round, c)
			}
		}
		if len(x.legacy.round) == 0 {
			x.legacy.recheck = false
		}
	}
	if len(x.legacy.round) > 0 && (tool == "" || x.legacy.round[0].tool == tool) {
		c := x.legacy.round[0]
		x.legacy.round = x.legacy.round[1:]
		if len(x.legacy.round) == 0 {
			x.legacy.round, x.legacy.recheck = nil, false
		}
		return c, KindRecheck
	}
	for _, c := range x.seq {
		if c.edit && (tool == "" || c.tool == tool) {
			return c, KindEdit
		}
	}
	return nil, ""
}

// guessKind says what a verdict without a recorded kind on an already
// known call is: its first check, else an edit when an approver's edit
// awaits its verdict, else a re-check.
func (x *extractor) guessKind(c *call) string {
	switch {
	case !c.prepared:
		return KindPermission
	case c.edit:
		return KindEdit
	default:
		return KindRecheck
	}
}

// Layer names the part of the policy that decided, from a decision's
// reason ("Rule: Bash(ls:*)" → "rule", "Read-only: ..." → "read-only"):
// how the audit reads the layer of verdicts recorded before Prepare
// recorded the engine's own (which says "deny rule" or "allow rule"
// where this says "rule").
func Layer(reason string) string {
	head, _, ok := strings.Cut(reason, ":")
	if !ok || head == "" || len(head) > 40 {
		if reason == "" {
			return "policy"
		}
		return "engine"
	}
	return strings.ToLower(strings.TrimSpace(head))
}
