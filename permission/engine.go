package permission

import (
	"context"
	"encoding/json"
	"fmt"
)

// Layer names the layer of the engine that decided a call, as a verdict
// records it. Two pairs of the engine's steps record the same layer:
// "tool deny" and "tool allow" record LayerTool, "explore mode" and
// "mode" record LayerMode.
type Layer string

// The layers a verdict can name.
const (
	LayerDenyRule Layer = "deny rule"
	LayerAskRule  Layer = "ask rule"
	// LayerSafety is a bypass-immune ASK of the tool's own check (a
	// sensitive path, a read or write outside the working directories,
	// a command that cannot be analysed, network hosts nothing grants);
	// LayerTool any other verdict of that check.
	LayerSafety    Layer = "safety check"
	LayerTool      Layer = "tool check"
	LayerReadOnly  Layer = "read-only"
	LayerAllowRule Layer = "allow rule"
	LayerMode      Layer = "mode"
	// LayerSandbox is an ASK of the mode turned into an ALLOW because
	// the call runs confined in the local sandbox (sandbox.auto_allow;
	// decided by package tools, after the engine).
	LayerSandbox Layer = "sandbox"
	// LayerRemembered is an ALLOW by a remembered approval of the turn's
	// policy store, and LayerQuorum an ASK a quorum rule (two-person
	// rule) made of another verdict: both decided by the worker after
	// the engine, and recorded with the verdict (workflows.Prepared).
	LayerRemembered Layer = "remembered"
	LayerQuorum     Layer = "quorum"
	// LayerSession is an ASK or DENY of a session rule (trifecta, Rule
	// of Two: SessionPolicy) and LayerWindow one of a window limit
	// (WindowLimit); LayerLogOnly names a log-only rule in Would.
	LayerSession Layer = "session"
	LayerWindow  Layer = "window"
	LayerLogOnly Layer = "log-only"
)

// Verdict is the full answer for one call: the decision, whether the call
// only reads, the layer that decided, and the policy it was decided
// under. It is what the worker records, what the CLI prints and what the
// inbox checks roles with.
type Verdict struct {
	Decision
	// ReadOnly reports that the call changes nothing (it may still ask:
	// a read of a sensitive path or outside the working directories).
	ReadOnly bool `json:"read_only"`
	// Layer is the layer that decided.
	Layer Layer `json:"layer"`
	// Rule is the rule that decided, for the rule layers.
	Rule *Rule `json:"rule,omitempty"`
	// Tool is the tool's own check, as it answered (Passthrough when it
	// had no opinion; zero when a rule decided before it was asked).
	Tool Decision `json:"tool_check"`
	// Mode and WorkingDirs are the policy the verdict was decided under.
	Mode        Mode     `json:"mode"`
	WorkingDirs []string `json:"working_dirs,omitempty"`
	// The layers decide adds after the engine's (decide.Layers):
	// Remembered is the id of the remembered approval that allowed the
	// call (layer remembered); Quorum the distinct approvers an ASK needs
	// (the most any quorum rule that matches the call asks for; 0: no
	// rule matched) and QuorumRule that rule; RequireReason says every
	// answer must carry a reason (the policy's require_reason or the
	// quorum rule's).
	Remembered    string `json:"remembered,omitempty"`
	Quorum        int    `json:"quorum,omitempty"`
	QuorumRule    string `json:"quorum_rule,omitempty"`
	RequireReason bool   `json:"require_reason,omitempty"`
	// Touches are the legs the call adds to its session when it runs
	// (decide's session layer finds them; the turn records them as the
	// call completes); Clears is the leg an approval of a session
	// rule's ASK clears for the rest of the session.
	Touches []Touch `json:"touches,omitempty"`
	Clears  Leg     `json:"clears,omitempty"`
	// WouldBe are the verdicts of log-only rules that would have
	// changed this one (recorded, never applied).
	WouldBe []Would `json:"would_be,omitempty"`
	// Windows are the window limits whose rule matches the call: the
	// turn counts it against each when it runs, and asks when one is
	// reached (decided by the turn, which holds the counts).
	Windows []WindowLimit `json:"windows,omitempty"`
}

// Evaluate is the permission engine: it decides whether t may run with
// input under pc by walking its layers in order - deny rule, ask rule,
// tool deny, safety check, read-only, explore mode, tool allow, allow
// rule, mode (see steps) - and the first that decides wins; the verdict
// records that step's layer. Callers that hold a tool call (the worker,
// the CLI, the inbox's role check, what-if) go through decide.Verdict,
// which binds the tool to the call's workspace and then runs Evaluate.
//
// Before the walk the engine asks t.CheckReadOnly, whose answer every
// verdict carries. Inside each rule list the first rule for t.Name()
// that matches wins. A nil pc means a default Context. The verdict's
// Reason names the layer and what in the call made it decide; Message is
// the text a human and the model read. On error the Verdict is zero and
// must be treated as a refusal, never as an allow.
func Evaluate(ctx context.Context, pc *Context, t Tool, input json.RawMessage) (Verdict, error) {
	e, err := newEvaluation(ctx, pc, t, input)
	if err != nil {
		return Verdict{}, err
	}
	for _, s := range steps() {
		d, ok, err := s.decide(ctx, e)
		if err != nil {
			return Verdict{}, err
		}
		if ok {
			return e.verdict(d, s.layer), nil
		}
	}
	// Unreachable: the last step, the mode, always decides.
	return Verdict{}, fmt.Errorf("permission: %s: no layer decided", e.name)
}

// step is one step of the engine's walk: its name (as docs/permissions.md
// lists it), the layer a verdict it decides records, and the function that
// runs it, which returns the decision and true when the step decides,
// false when it has no opinion.
type step struct {
	name   string
	layer  Layer
	decide func(ctx context.Context, e *evaluation) (Decision, bool, error)
}

// steps returns the steps Evaluate walks, in order:
//
//  1. deny rule: a deny rule matches (DENY);
//  2. ask rule: an ask rule matches (ASK with suggestions; DENY in
//     ModeDontAsk);
//  3. tool deny: the tool's own check denies (DENY, in every mode);
//  4. safety check: the tool's own check asks bypass-immune - a
//     sensitive path, a read or write outside the working directories,
//     a command that cannot be analysed (ASK with suggestions; DENY in
//     ModeDontAsk and ModeExplore; skipped in ModeBypass);
//  5. read-only: t.CheckReadOnly (ALLOW, in every mode);
//  6. explore mode: ModeExplore denies everything else;
//  7. tool allow: the tool's own check allows (e.g. accept_edits inside
//     the working directories);
//  8. allow rule: an allow rule matches (ALLOW);
//  9. mode: the mode's fallback, ASK (default, accept_edits), DENY
//     (dont_ask) or ALLOW (bypass).
//
// Context.RulesOnly skips read-only and tool allow. docs/permissions.md
// ("Permissions and threat model") lists the same names in the same
// order (TestStepsMatchREADME).
func steps() []step {
	return []step{
		{"deny rule", LayerDenyRule, denyRule},
		{"ask rule", LayerAskRule, askRule},
		{"tool deny", LayerTool, toolDeny},
		{"safety check", LayerSafety, safetyCheck},
		{"read-only", LayerReadOnly, readOnly},
		{"explore mode", LayerMode, exploreMode},
		{"tool allow", LayerTool, toolAllow},
		{"allow rule", LayerAllowRule, allowRule},
		{"mode", LayerMode, modeFallback},
	}
}

// evaluation is what the steps of one Evaluate share: the call, the
// policy, and what earlier steps found.
type evaluation struct {
	pc    *Context
	t     Tool
	input json.RawMessage
	name  string
	mode  Mode
	ro    bool
	// tool is the tool's own check, once a step asked for it.
	tool *Decision
	// rule is the rule that decided, for the rule steps.
	rule *Rule
}

// newEvaluation resolves the mode of pc (nil: a default Context) and
// asks t whether the call only reads.
func newEvaluation(ctx context.Context, pc *Context, t Tool, input json.RawMessage) (*evaluation, error) {
	if pc == nil {
		pc = &Context{}
	}
	mode := pc.Mode
	if mode == "" {
		mode = ModeDefault
	}
	if !ValidMode(mode) {
		return nil, fmt.Errorf("permission: unknown mode %q", pc.Mode)
	}
	e := &evaluation{pc: pc, t: t, input: input, name: t.Name(), mode: mode}
	// The read-only flag is part of every verdict (it decides retries
	// and the fast path of an approved call), so it is known first.
	ro, err := t.CheckReadOnly(ctx, input)
	if err != nil {
		return nil, fmt.Errorf("permission: %s read-only check: %w", e.name, err)
	}
	e.ro = ro
	return e, nil
}

// verdict is the Verdict of decision d at layer l.
func (e *evaluation) verdict(d Decision, l Layer) Verdict {
	v := Verdict{Decision: d, ReadOnly: e.ro, Layer: l, Rule: e.rule, Mode: e.mode, WorkingDirs: e.pc.WorkingDirs}
	if e.tool != nil {
		v.Tool = *e.tool
	}
	return v
}

// toolCheck returns the tool's own check, asking the tool the first
// time. The returned Decision is a copy the caller may change.
func (e *evaluation) toolCheck(ctx context.Context) (Decision, error) {
	if e.tool == nil {
		td, err := e.t.CheckPermissions(ctx, e.input, e.pc)
		if err != nil {
			return Decision{}, fmt.Errorf("permission: %s check: %w", e.name, err)
		}
		e.tool = &td
	}
	return *e.tool, nil
}

// suggest sets d's suggestions to the tool's for the call.
func (e *evaluation) suggest(ctx context.Context, d Decision) (Decision, error) {
	s, err := suggestions(ctx, e.t, e.input)
	if err != nil {
		return Decision{}, err
	}
	d.Suggestions = s
	return d, nil
}
