// Answers: approvals and denials (the approve update or signal),
// external results, and the re-decisions of waiting calls after a policy
// store change.

package audit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// answer records an approval or external result. Answers the workflow
// ignores (unknown or already answered calls) are skipped.
func (x *extractor) answer(t time.Time, name string, args *commonpb.Payloads, path string) error {
	switch name {
	case workflows.SignalPolicyChanged:
		var n workflows.PolicyNotice
		if x.decode(args, &n) == nil && n.Store == x.turn.LivePolicy && n.TeamVersion > x.team {
			x.team = n.TeamVersion
		}
		return nil
	case workflows.UpdateMessage:
		var m workflows.SessionMessage
		if err := x.decode(args, &m); err != nil {
			return fmt.Errorf("decode message: %w", err)
		}
		x.record(Record{Time: t, Kind: KindMessage, Decision: string(m.Mode), By: m.By, Identity: m.Via, Path: path,
			Reason: m.Text, Layer: "session"})
		return nil
	case workflows.UpdateControl:
		var c workflows.SessionControl
		if err := x.decode(args, &c); err != nil {
			return fmt.Errorf("decode control: %w", err)
		}
		x.record(Record{Time: t, Kind: KindControl, Decision: string(c.Action), By: c.By, Identity: c.Via, Path: path,
			Reason: c.Reason, Layer: "session"})
		return nil
	case workflows.UpdateApprove:
		var a workflows.Approval
		if err := x.decode(args, &a); err != nil {
			return fmt.Errorf("decode approval: %w", err)
		}
		c := x.calls[a.CallID]
		if c == nil && strings.HasPrefix(a.CallID, "budget_") {
			// A budget approval's answer: its outcome is recorded
			// where the turn applies it (notes.go).
			x.budgetAnswer(a.CallID, path)
			return nil
		}
		if c == nil || !c.asked {
			return nil
		}
		// A call answered already takes no further answer, except an
		// Update the turn accepted after another approver's allow: a
		// partial answer of a two-person rule (quorum), whose every
		// approval is recorded; the latest is what came of the call.
		// (A signal is in history even when the turn refused it.)
		if c.answered && (path != PathUpdate || c.approvals == 0) {
			return nil
		}
		c.answered = true
		c.approvals++
		r := Record{Time: t, CallID: a.CallID, Tool: c.tool, Kind: KindApproval, Decision: string(a.Decision),
			By: a.By, Identity: a.Via, Path: path, Reason: a.Reason, Layer: "approver", Rules: a.Rules, ProposedInput: c.proposed,
			TeamVersion: x.team}
		if a.Decision == workflows.DecisionAlwaysAllow {
			r.Scope, r.TTL, r.SingleUse = string(a.Scope), a.TTL, a.SingleUse
		}
		if a.Decision != workflows.DecisionDeny {
			r.ApprovedInput = c.waiting
			if len(a.Input) > 0 && string(a.Input) != string(c.waiting) {
				r.ApprovedInput, r.Edited = a.Input, true
				c.approved, c.edit = a.Input, true
			}
		}
		x.record(r)
		if c.approvals > 1 && c.dec != nil {
			r.WorkflowID, r.RunID = x.wf, x.run
			c.dec.Answer = &r
		} else {
			x.answered(c, r)
		}
		if a.Decision == workflows.DecisionAlwaysAllow {
			x.legacy.recheck = true // the order matcher's re-check round
			rules := a.Rules
			if len(rules) == 0 {
				rules = c.suggestions
			}
			for _, s := range rules {
				if rule, err := permission.ParseRule(s, permission.Allow); err == nil {
					rule.Source = "session"
					x.addSession(rule)
				}
			}
		}
	case workflows.UpdateExternalResult:
		var r workflows.ExternalResult
		if err := x.decode(args, &r); err != nil {
			return fmt.Errorf("decode external result: %w", err)
		}
		c := x.calls[r.CallID]
		if c == nil || !c.external || c.answered {
			return nil
		}
		c.answered = true
		d := "completed"
		if r.IsError {
			d = "error"
		}
		x.record(Record{Time: t, CallID: r.CallID, Tool: c.tool, Kind: KindExternal, Decision: d,
			By: r.By, Identity: r.Via, Path: path, Reason: firstLine(r.Content), Layer: "external", ProposedInput: c.proposed})
	}
	return nil
}

// redecisions records the re-decisions a side-effect marker holds (the
// turn's record of waiting calls decided again after a policy store
// change, with both versions). Other side effects do not decode as
// re-decisions and are skipped.
func (x *extractor) redecisions(e *historypb.HistoryEvent) {
	a := e.GetMarkerRecordedEventAttributes()
	if a.GetMarkerName() != "SideEffect" {
		return
	}
	var recs []workflows.Redecision
	if x.decode(a.GetDetails()["data"], &recs) != nil {
		return
	}
	t := e.GetEventTime().AsTime()
	for _, rd := range recs {
		c := x.calls[rd.CallID]
		if rd.CallID == "" || rd.To == 0 || c == nil || !c.asked {
			continue
		}
		reason := rd.Reason
		if rd.Behavior == permission.Deny && rd.Message != "" {
			reason = rd.Message
		}
		r := Record{Time: t, CallID: c.id, Tool: c.tool, Kind: KindLivePolicy, Decision: string(rd.Behavior),
			By: fmt.Sprintf("policy v%d", rd.To), Path: PathRule, Reason: reason, Layer: layerOf(rd.Layer, rd.Reason),
			PolicyVersion: rd.To, FromVersion: rd.From, Remembered: rd.Remembered, ProposedInput: c.proposed}
		if rd.Behavior != permission.Allow && rd.Behavior != permission.Deny {
			x.record(r) // still waiting, under the new version
			continue
		}
		if c.answered {
			// The re-check round of an always_allow took the same
			// verdict first: this record says it better.
			if !x.replaceRecheck(c) {
				continue
			}
		}
		c.answered = true
		x.record(r)
		r.WorkflowID, r.RunID = x.wf, x.run
		if c.dec != nil {
			c.dec.Answer = &r
		}
	}
}

// replaceRecheck drops c's recheck record (its answer by a rule added
// later), which a live-policy re-decision replaces; false when c was
// answered otherwise.
func (x *extractor) replaceRecheck(c *call) bool {
	for i := len(x.out) - 1; i >= 0; i-- {
		r := x.out[i]
		if r.CallID != c.id || r.WorkflowID != x.wf {
			continue
		}
		if r.Kind != KindRecheck {
			return false
		}
		x.out = slices.Delete(x.out, i, i+1)
		return true
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
