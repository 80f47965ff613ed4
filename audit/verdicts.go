// Verdicts: the permission engine's verdicts (Prepare results) turned
// into permission, recheck and edit records, and into the Decided values
// what-if re-decides.

package audit

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	historypb "go.temporal.io/api/history/v1"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// prepared records a call's verdict from its Prepare activity (a
// regular activity, whose recorded input names the call and, since
// versionAuditNotes, the verdict's kind).
func (x *extractor) prepared(t time.Time, s scheduled, a *historypb.ActivityTaskCompletedEventAttributes) error {
	var in workflows.PrepareInput
	var p workflows.Prepared
	if x.decode(s.input, &in) != nil || x.decode(a.GetResult(), &p) != nil {
		return nil
	}
	k := in.Kind
	if k == "" {
		k = p.Kind
	}
	c, kind, err := x.verdictCall(in.Call.ID, k, "")
	if err != nil {
		return err
	}
	if c == nil {
		c, kind = x.newCall(in.Call), KindPermission
	}
	if kind == KindEdit {
		c.approved = in.Call.Input
	}
	if x.verdictOf(t, c, p, kind, &in) {
		x.fresh = append(x.fresh, c)
	}
	return nil
}

// verdictCall is the call a verdict is about and what the verdict is.
// A verdict with its recorded kind (workflows.Prepared.Kind, runs since
// versionAuditNotes) names its call; the kind says whether it is a first
// check, a re-decision or an edit. In a run that records kinds, a
// verdict without one is an error (ErrNotRecorded), never guessed.
// Verdicts of runs recorded before are read the legacy way (legacy.go):
// by id with a guessed kind, or, before verdicts named their call, by
// order (tool is then the verdict's tool name).
func (x *extractor) verdictCall(id string, k workflows.VerdictKind, tool string) (*call, string, error) {
	if k != "" {
		kind, err := recordKind(k)
		if err != nil {
			return nil, "", fmt.Errorf("verdict on %q: %w", id, err)
		}
		return x.callByID(id), kind, nil
	}
	if x.noted {
		return nil, "", fmt.Errorf("verdict on %q has no kind in a run that records it (%s): %w", id, changeAuditNotes, ErrNotRecorded)
	}
	if id == "" {
		c, kind := x.nextPrepared(tool)
		return c, kind, nil
	}
	c := x.callByID(id)
	if c == nil {
		return nil, "", nil
	}
	return c, x.guessKind(c), nil
}

// recordKind is the record kind of a recorded verdict kind.
func recordKind(k workflows.VerdictKind) (string, error) {
	switch k {
	case workflows.VerdictFirst:
		return KindPermission, nil
	case workflows.VerdictRedecide:
		return KindRecheck, nil
	case workflows.VerdictEdit:
		return KindEdit, nil
	}
	return "", fmt.Errorf("unknown verdict kind %q", k)
}

// callByID is the call a verdict that names it (by id) is about: the
// first call of the latest model answer with that id still without a
// verdict (a model may repeat an id within an answer), else the call the
// turn knows by it; nil for a call the turn never listed.
func (x *extractor) callByID(id string) *call {
	if i := slices.IndexFunc(x.batch, func(c *call) bool { return c.id == id }); i >= 0 {
		c := x.batch[i]
		x.batch = slices.Delete(x.batch, i, i+1)
		return c
	}
	return x.calls[id]
}

// verdict records the engine's verdict on a call and reports whether the
// call now waits for an approval (its clock starts when the batch is in).
func (x *extractor) verdict(t time.Time, c *call, p workflows.Prepared, kind string) bool {
	return x.verdictOf(t, c, p, kind, nil)
}

// verdictOf is verdict, with the Prepare activity's input when it is
// recorded (verdicts of regular activities): the exact policy and
// workdir the call was decided under.
func (x *extractor) verdictOf(t time.Time, c *call, p workflows.Prepared, kind string, in *workflows.PrepareInput) bool {
	x.team = max(x.team, p.TeamVersion)
	if c.tool == "" {
		c.tool = p.Tool.Name
	}
	r := Record{Time: t, CallID: c.id, Tool: c.tool, Kind: kind, By: "policy", Path: PathRule,
		Decision: string(p.Decision.Behavior), Reason: p.Decision.Reason, Layer: layerOf(p.Layer, p.Decision.Reason), ProposedInput: c.proposed}
	if p.Invalid != "" {
		r.Decision, r.Reason, r.Layer = "invalid", p.Invalid, "validation"
	} else if p.Sandbox != nil {
		r.Sandbox = p.Sandbox.String()
	}
	if m := p.Remembered; m != nil {
		r.Remembered, r.RememberedBy = m.ID, m.By
	}
	for _, w := range p.WouldBe {
		r.WouldBe = append(r.WouldBe, w.String())
	}
	r.PolicyVersion = p.PolicyVersion
	switch kind {
	case KindPermission:
		c.prepared = true
		c.waiting = c.proposed
		if len(p.Decision.UpdatedInput) > 0 {
			c.waiting = p.Decision.UpdatedInput
		}
		x.record(r)
		for _, s := range p.Decision.Suggestions {
			c.suggestions = append(c.suggestions, s.String())
		}
		x.decide(c, r, c.proposed, p, in)
		windowAsk := false
		if i := slices.Index(x.windowAsks, c.id); i >= 0 {
			x.windowAsks = slices.Delete(x.windowAsks, i, i+1)
			windowAsk = true
		}
		switch {
		case p.Invalid != "" || p.Decision.Behavior == permission.Deny:
		case p.Decision.Behavior == permission.Allow && !windowAsk:
			if p.ToolFlags().External {
				c.external = true
			}
		default:
			c.asked = true
			c.escalation = p.Policy.Escalation
			c.timeout = x.timeout
			if c.timeout == 0 {
				c.timeout = p.Policy.ApprovalTimeout
			}
			if c.timeout == 0 {
				c.timeout = workflows.DefaultApprovalTimeout
			}
			return true
		}
	case KindRecheck:
		if p.Invalid == "" && p.Decision.Behavior == permission.Allow && c.asked && !c.answered {
			c.answered = true // resolved by the added rule
			x.record(r)
			x.answered(c, r)
		}
	case KindEdit:
		c.edit = false
		r.ApprovedInput = c.approved
		x.record(r)
		x.decide(c, r, c.approved, p, in)
	}
	return false
}

// decide keeps the engine's verdict r on c's input for ExtractCalls.
func (x *extractor) decide(c *call, r Record, input json.RawMessage, p workflows.Prepared, in *workflows.PrepareInput) {
	r.WorkflowID, r.RunID = x.wf, x.run
	d := &Decided{Verdict: r, Input: input, Policy: x.turn.Permission, Session: slices.Clone(x.session),
		Workdir: x.turn.Workdir, Backend: x.turn.Backend, Tools: x.turn.Tools, Remembered: p.Remembered, Agent: x.turn.Agent, Links: p.Links}
	if in != nil {
		d.Policy, d.Workdir, d.Backend, d.Tools = in.Permission, in.Env.Workdir, in.Env.Backend, in.Allowed
	}
	if s := p.Sandbox; s != nil {
		if len(s.Dirs) > 0 {
			d.Workdir = s.Dirs[0]
		}
		d.Sandboxed = !s.Off && (s.Backend == "" || s.Backend == "local")
	}
	if r.Kind == KindEdit && c.dec != nil && c.dec.Answer != nil {
		// The edited input runs on the approval that made it.
		a := *c.dec.Answer
		d.Answer = &a
	}
	c.dec = d
	x.decided = append(x.decided, d)
}

// answered records what came of c's latest verdict (the first answer).
func (x *extractor) answered(c *call, r Record) {
	if c.dec != nil && c.dec.Answer == nil {
		r.WorkflowID, r.RunID = x.wf, x.run
		c.dec.Answer = &r
	}
}

// addSession adds a rule the turn's approvers added (source "session"),
// once.
func (x *extractor) addSession(r permission.Rule) {
	if r.Source != "session" || slices.ContainsFunc(x.session, func(s permission.Rule) bool { return s.String() == r.String() }) {
		return
	}
	x.session = append(x.session, r)
}

// layerOf is the layer that decided a verdict: the one recorded with it
// (workflows.Prepared.Layer, Redecision.Layer), or in verdicts recorded
// before it was, the one its reason names (Layer).
func layerOf(recorded permission.Layer, reason string) string {
	if recorded != "" {
		return string(recorded)
	}
	return Layer(reason)
}
