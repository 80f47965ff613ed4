package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/wardenhq/warden/permission"
)

// layer is one layer of the decision: it takes the verdict of the layers
// before it and returns it, changed or not.
type layer struct {
	name  string
	apply func(ctx context.Context, d *decision, v permission.Verdict) (permission.Verdict, error)
}

// decision is one call being decided: the call, its policy (with the
// workspace among the working directories) and its tool bound to both,
// with the call's parse memo (Verdict sets Call.Memo, so a layer that
// binds the call under another policy, d.c.bind, shares it).
type decision struct {
	c  Call
	pc *permission.Context
	b  bound
}

// layers are the decision's layers in order: the permission engine's
// (permission.Evaluate walks its own steps), the sandbox auto-allow,
// the remembered approvals, the session rules, the quorum rules, the
// window limits (which name the limits that count the call: the turn
// holds the counts), then the log-only rules, which only record what
// they would decide. The call's sandbox
// profile follows from the verdict they give (Profile).
func layers() []layer {
	return []layer{
		{"permission engine", func(ctx context.Context, d *decision, _ permission.Verdict) (permission.Verdict, error) {
			return permission.Evaluate(ctx, d.pc, d.b, d.c.Input)
		}},
		{"sandbox auto-allow", func(ctx context.Context, d *decision, v permission.Verdict) (permission.Verdict, error) {
			return autoAllow(ctx, d.b, d.c, d.pc, v), nil
		}},
		{"remembered approvals", remembered},
		{"session rules", session},
		{"quorum rules", quorum},
		{"window limits", windows},
		{"log-only rules", logOnly},
	}
}

// Layers names the decision's layers in the order Verdict walks them.
func Layers() []string {
	var out []string
	for _, l := range layers() {
		out = append(out, l.name)
	}
	return out
}

// remembered tries the call's remembered approvals (Call.Remembered) on
// a call the layers before ask about (never a deny, nor a safety check
// no allow rule silences): the first active one whose scope covers the
// turn and that allows the call decides it. One of the input scope
// allows exactly its input, never over an ask rule; one with a rule
// allows the call when the engine, with that rule added to the allow
// rules, allows it by that rule. The verdict names the approval; a
// single-use one is spent by the caller (the worker's Prepare), which
// decides again without it when another call spent it first.
func remembered(ctx context.Context, d *decision, base permission.Verdict) (permission.Verdict, error) {
	c := d.c
	if len(c.Remembered) == 0 || base.Behavior != permission.Ask && base.Behavior != permission.Passthrough || base.BypassImmune {
		return base, nil
	}
	name := c.Tool.Info().Name
	for _, r := range c.Remembered {
		if r.Tool != name || !r.Active(c.Now, c.Turn.Key()) || !r.Applies(c.Turn.WorkflowID, c.Turn.Agent) {
			continue
		}
		v := base
		if r.Input != nil {
			if canonical(r.Input) != canonical(c.Input) || (base.Rule != nil && base.Rule.Behavior == permission.Ask) {
				continue
			}
			v.Decision = permission.Decision{Behavior: permission.Allow, Message: "Permission granted for " + name + " by a remembered approval of this exact input"}
		} else {
			rule, err := permission.ParseRule(r.Rule, permission.Allow)
			if err != nil {
				continue // the store checked it when it was remembered
			}
			rule.Source = "remembered:" + r.ID
			pc := *d.pc
			pc.Allow = append(slices.Clone(pc.Allow), rule)
			nv, err := permission.Evaluate(ctx, &pc, d.c.bind(&pc), c.Input)
			if err != nil || nv.Behavior != permission.Allow || nv.Rule == nil || nv.Rule.Source != rule.Source {
				continue
			}
			v = nv
		}
		v.Reason = fmt.Sprintf("Remembered: %s by %s (%s scope): %s", r.ID, r.By, r.Scope, r.What())
		v.Suggestions = nil
		v.Layer, v.Remembered = permission.LayerRemembered, r.ID
		return v, nil
	}
	return base, nil
}

// quorum applies the policy's quorum rules (permission.Context.Quorum):
// a rule matches a call as a deny rule would (one simple command of a
// Bash line is enough), and the most approvals any matching rule asks
// for is the call's quorum. A call with a quorum asks unless it is
// denied: no allow rule, mode, auto-allow or remembered approval passes
// a call that needs that many people. Such an ask offers no rule to
// remember. The verdict says whether answers need a
// reason (the policy's require_reason or a matching rule's).
func quorum(ctx context.Context, d *decision, v permission.Verdict) (permission.Verdict, error) {
	pc := d.pc
	v.RequireReason = pc.RequireReason
	for _, q := range pc.Quorum {
		r, err := permission.ParseRule(q.Rule, permission.Deny)
		if err != nil {
			continue // checked when the policy was read
		}
		qc := permission.Context{Mode: permission.ModeDefault, WorkingDirs: pc.WorkingDirs, Deny: []permission.Rule{r}}
		m, err := permission.Evaluate(ctx, &qc, d.c.bind(&qc), d.c.Input)
		if err != nil || m.Layer != permission.LayerDenyRule {
			continue
		}
		if q.Approvals > v.Quorum {
			v.Quorum, v.QuorumRule = q.Approvals, q.Rule
		}
		v.RequireReason = v.RequireReason || q.RequireReason
	}
	if n := v.Quorum; n >= 1 && v.Behavior != permission.Deny && v.Behavior != permission.Ask {
		msg := fmt.Sprintf("Permission required: this call needs %d distinct approvers (quorum rule %s)", n, v.QuorumRule)
		if n == 1 {
			msg = "Permission required: quorum rule " + v.QuorumRule + " makes this call ask"
		}
		v.Decision = permission.Decision{Behavior: permission.Ask, Message: msg,
			Reason: fmt.Sprintf("Quorum: %d approvers by %s (was %s: %s)", n, v.QuorumRule, v.Behavior, v.Reason), UpdatedInput: v.UpdatedInput}
		v.Layer, v.Remembered = permission.LayerQuorum, ""
	}
	if v.Quorum > 1 {
		// A rule remembered would let a single approver pass a quorum
		// rule: offer none.
		v.Suggestions = nil
	}
	return v, nil
}

// canonical is a JSON input with its keys sorted and no spaces, so equal
// inputs compare equal however they were written.
func canonical(in json.RawMessage) string {
	var v any
	if json.Unmarshal(in, &v) != nil {
		return string(in)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(in)
	}
	return string(b)
}

// logOnly tries the policy's log-only rules (permission.Context.LogOnly)
// on the call: each is put first in its list and the engine decides
// again; when that rule decides, and differently from the verdict, what
// it would decide is recorded in Verdict.WouldBe. Nothing else changes.
// A log-only allow is not recorded over a verdict a later layer made
// (session, quorum): an allow rule does not pass those.
func logOnly(ctx context.Context, d *decision, v permission.Verdict) (permission.Verdict, error) {
	for _, r := range d.pc.LogOnly {
		if r.Behavior == permission.Allow && (v.Layer == permission.LayerSession || v.Layer == permission.LayerQuorum || v.BypassImmune) {
			continue
		}
		r.Source = "log-only"
		pc := *d.pc
		pc.LogOnly = nil
		switch r.Behavior {
		case permission.Allow:
			pc.Allow = append([]permission.Rule{r}, pc.Allow...)
		case permission.Ask:
			pc.Ask = append([]permission.Rule{r}, pc.Ask...)
		case permission.Deny:
			pc.Deny = append([]permission.Rule{r}, pc.Deny...)
		}
		nv, err := permission.Evaluate(ctx, &pc, d.c.bind(&pc), d.c.Input)
		if err != nil || nv.Rule == nil || nv.Rule.Source != r.Source || nv.Behavior == v.Behavior {
			continue
		}
		v.WouldBe = append(v.WouldBe, permission.Would{Layer: permission.LayerLogOnly + " " + permission.Layer(r.Behavior) + " rule",
			Rule: r.String(), Behavior: nv.Behavior, Reason: nv.Reason})
	}
	return v, nil
}

// windows names the policy's window limits whose rule matches the call
// (as a deny rule would match it) in Verdict.Windows: a call that runs
// counts against each, and the turn asks when one is reached. A denied
// call counts against none.
func windows(ctx context.Context, d *decision, v permission.Verdict) (permission.Verdict, error) {
	if v.Behavior == permission.Deny {
		return v, nil
	}
	for _, w := range d.pc.Limits {
		if matches(ctx, d, w.Rule) {
			v.Windows = append(v.Windows, w)
		}
	}
	return v, nil
}
