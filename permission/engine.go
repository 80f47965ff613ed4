package permission

import (
	"context"
	"encoding/json"
	"fmt"
)

// Layer names the layer of the engine that decided a call.
type Layer string

// The layers, in the order they run.
const (
	LayerDenyRule Layer = "deny rule"
	LayerAskRule  Layer = "ask rule"
	// LayerSafety is a bypass-immune ASK of the tool's own check (a
	// sensitive path, a read or write outside the working directories,
	// a command that cannot be analysed); LayerTool any other verdict of
	// that check.
	LayerSafety    Layer = "safety check"
	LayerTool      Layer = "tool check"
	LayerReadOnly  Layer = "read-only"
	LayerAllowRule Layer = "allow rule"
	LayerMode      Layer = "mode"
	// LayerSandbox is an ASK of the mode turned into an ALLOW because
	// the call runs confined in the local sandbox (sandbox.auto_allow;
	// decided by package tools, after the engine).
	LayerSandbox Layer = "sandbox"
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
	// had no opinion).
	Tool Decision `json:"tool_check"`
	// Mode and WorkingDirs are the policy the verdict was decided under.
	Mode        Mode     `json:"mode"`
	WorkingDirs []string `json:"working_dirs,omitempty"`
}

// Evaluate is Decide without the verdict's extra fields.
func Evaluate(ctx context.Context, pc *Context, t Tool, input json.RawMessage) (Decision, error) {
	v, err := Decide(ctx, pc, t, input)
	return v.Decision, err
}

// Decide decides whether t may run with input under pc. It is the one
// decision function: the worker, the CLI and the inbox all call it
// (through tools.Decide, which binds a tool to its workspace). The
// layers run in this order, and the first one that decides wins:
//
//  1. deny rules (DENY);
//  2. ask rules (ASK with suggestions; DENY in ModeDontAsk);
//  3. the tool's own check, in every mode: DENY is returned as it is; a
//     bypass-immune (safety) ASK - a sensitive path, a read or write
//     outside the working directories, a command that cannot be
//     analysed - is returned with suggestions (DENY in ModeDontAsk and
//     ModeExplore, ignored in ModeBypass);
//  4. read-only: t.CheckReadOnly (ALLOW, in every mode);
//  5. ModeExplore denies everything else;
//  6. the tool's ALLOW (e.g. accept_edits inside the working
//     directories);
//  7. allow rules (ALLOW);
//  8. the mode's fallback: ASK (default, accept_edits), DENY (explore,
//     dont_ask) or ALLOW (bypass).
//
// Inside each rule list the first rule for t.Name() that matches wins.
// A nil pc means a default Context. The verdict's Reason names the layer
// and what in the call made it decide; Message is the text a human and
// the model read. On error the Verdict is zero and must be treated as a
// refusal, never as an allow.
func Decide(ctx context.Context, pc *Context, t Tool, input json.RawMessage) (Verdict, error) {
	if pc == nil {
		pc = &Context{}
	}
	mode := pc.Mode
	if mode == "" {
		mode = ModeDefault
	}
	if !ValidMode(mode) {
		return Verdict{}, fmt.Errorf("permission: unknown mode %q", pc.Mode)
	}
	name := t.Name()
	v := Verdict{Mode: mode, WorkingDirs: pc.WorkingDirs}
	done := func(d Decision, l Layer) (Verdict, error) {
		v.Decision, v.Layer = d, l
		return v, nil
	}

	// The read-only flag is part of every verdict (it decides retries
	// and the fast path of an approved call), so it is known first.
	ro, err := t.CheckReadOnly(ctx, input)
	if err != nil {
		return Verdict{}, fmt.Errorf("permission: %s read-only check: %w", name, err)
	}
	v.ReadOnly = ro

	// 1. Deny rules.
	r, ok, err := firstMatch(ctx, t, pc.Deny, Deny, input)
	if err != nil {
		return Verdict{}, err
	}
	if ok {
		v.Rule = &r
		return done(Decision{
			Behavior: Deny,
			Message:  fmt.Sprintf("Permission to use %s has been denied by the deny rule %s", name, r),
			Reason:   "Rule: " + r.String(),
		}, LayerDenyRule)
	}

	// 2. Ask rules.
	r, ok, err = firstMatch(ctx, t, pc.Ask, Ask, input)
	if err != nil {
		return Verdict{}, err
	}
	if ok {
		v.Rule = &r
		d := Decision{
			Behavior: Ask,
			Message:  fmt.Sprintf("Permission required for %s: the ask rule %s matches", name, r),
			Reason:   "Rule: " + r.String(),
		}
		if d.Suggestions, err = suggestions(ctx, t, input); err != nil {
			return Verdict{}, err
		}
		if mode == ModeDontAsk {
			return done(askToDeny(name, d), LayerAskRule)
		}
		return done(d, LayerAskRule)
	}

	// 3. The tool's own check, in every mode.
	td, err := t.CheckPermissions(ctx, input, pc)
	if err != nil {
		return Verdict{}, fmt.Errorf("permission: %s check: %w", name, err)
	}
	v.Tool = td
	switch {
	case td.Behavior == Deny:
		if td.Reason == "" {
			td.Reason = "Tool check: " + name
		}
		return done(td, LayerTool)
	case td.Behavior == Ask && td.BypassImmune && mode != ModeBypass:
		if td.Reason == "" {
			td.Reason = "Safety check: " + name
		}
		if td.Suggestions, err = suggestions(ctx, t, input); err != nil {
			return Verdict{}, err
		}
		if mode == ModeDontAsk {
			return done(askToDeny(name, td), LayerSafety)
		}
		if mode == ModeExplore {
			return done(Decision{Behavior: Deny, Message: fmt.Sprintf("Permission denied for %s (explore mode cannot ask): %s", name, td.Message),
				Reason: "Explore mode converted ASK to DENY. Original reason: " + td.Reason, Suggestions: td.Suggestions}, LayerSafety)
		}
		return done(td, LayerSafety)
	}

	// 4. Read-only, in every mode.
	if ro && !pc.RulesOnly {
		return done(Decision{
			Behavior: Allow,
			Message:  fmt.Sprintf("Permission granted for %s (read-only invocation)", name),
			Reason:   "Read-only: the call only reads",
		}, LayerReadOnly)
	}

	// 5. Explore allows nothing else; allow rules cannot break read-only.
	if mode == ModeExplore {
		msg := fmt.Sprintf("Permission denied for %s (explore mode is read-only)", name)
		if td.Message != "" && td.Behavior == Passthrough {
			msg += ": " + td.Message
		}
		return done(Decision{Behavior: Deny, Message: msg, Reason: "Explore mode does not allow modifications"}, LayerMode)
	}

	// 6. The tool allows.
	if td.Behavior == Allow && !pc.RulesOnly {
		if td.Reason == "" {
			td.Reason = "Tool check: " + name
		}
		return done(td, LayerTool)
	}

	// 7. Allow rules.
	r, ok, err = firstMatch(ctx, t, pc.Allow, Allow, input)
	if err != nil {
		return Verdict{}, err
	}
	if ok {
		v.Rule = &r
		return done(Decision{
			Behavior:     Allow,
			Message:      fmt.Sprintf("Permission granted for %s by the allow rule %s", name, r),
			Reason:       "Rule: " + r.String(),
			UpdatedInput: input,
		}, LayerAllowRule)
	}

	// 8. Fallback. The tool's message (what about the call is not
	// read-only) tells the human what they are asked about.
	why := ""
	if td.Message != "" && td.Behavior != Allow {
		why = ": " + td.Message
	}
	switch mode {
	case ModeBypass:
		return done(Decision{
			Behavior: Allow,
			Message:  fmt.Sprintf("Permission granted for %s (bypass mode)", name),
			Reason:   "Mode: bypass",
		}, LayerMode)
	case ModeDontAsk:
		d := Decision{
			Behavior: Deny,
			Message:  fmt.Sprintf("Permission denied for %s (dont_ask mode - user not available; no allow rule matches)%s", name, why),
			Reason:   "Mode: dont_ask",
		}
		if d.Suggestions, err = suggestions(ctx, t, input); err != nil {
			return Verdict{}, err
		}
		return done(d, LayerMode)
	}
	d := Decision{
		Behavior: Ask,
		Message:  fmt.Sprintf("Permission required for %s (mode %s, no allow rule matches)%s", name, mode, why),
		Reason:   "Mode: " + string(mode),
	}
	if d.Suggestions, err = suggestions(ctx, t, input); err != nil {
		return Verdict{}, err
	}
	return done(d, LayerMode)
}

// firstMatch returns the first rule of rules for t that matches input.
func firstMatch(ctx context.Context, t Tool, rules []Rule, b Behavior, input json.RawMessage) (Rule, bool, error) {
	name := t.Name()
	mctx := WithRuleBehavior(ctx, b)
	for _, r := range rules {
		if r.Tool != name {
			continue
		}
		if r.Content == "" {
			return r, true, nil
		}
		ok, err := t.MatchRule(mctx, r.Content, input)
		if err != nil {
			return Rule{}, false, fmt.Errorf("permission: %s rule %s: %w", b, r, err)
		}
		if ok {
			return r, true, nil
		}
	}
	return Rule{}, false, nil
}

func suggestions(ctx context.Context, t Tool, input json.RawMessage) ([]Rule, error) {
	s, err := t.GenerateSuggestions(ctx, input)
	if err != nil {
		return nil, fmt.Errorf("permission: %s suggestions: %w", t.Name(), err)
	}
	return s, nil
}

// askToDeny is AgentScope's _convert_ask_to_deny for ModeDontAsk.
func askToDeny(name string, d Decision) Decision {
	return Decision{
		Behavior:    Deny,
		Message:     fmt.Sprintf("Permission denied for %s (dont_ask mode - ASK converted to DENY, user not available)", name),
		Reason:      "DONT_ASK mode converted ASK to DENY. Original reason: " + d.Reason,
		Suggestions: d.Suggestions,
	}
}
