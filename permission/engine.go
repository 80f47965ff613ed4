package permission

import (
	"context"
	"encoding/json"
	"fmt"
)

// Evaluate decides whether t may run with input under pc, following
// AgentScope's engine (spec §1.2). The layers run in this order, and the
// first one that decides wins:
//
//  1. deny rules (DENY);
//  2. ask rules (ASK with suggestions; DENY in ModeDontAsk);
//  3. read-only fast path: t.CheckReadOnly (ALLOW, in every mode);
//  4. the tool's own check, except in ModeExplore: ALLOW and DENY are
//     returned as they are, a bypass-immune (safety) ASK is returned with
//     suggestions (converted to DENY in ModeDontAsk, ignored in ModeBypass),
//     any other ASK and PASSTHROUGH go on;
//  5. allow rules (ALLOW), except in ModeExplore;
//  6. the mode's fallback: ASK (default, accept_edits), DENY (explore,
//     dont_ask) or ALLOW (bypass).
//
// Inside each rule list the first rule for t.Name() that matches wins.
// A nil pc means a default Context. Decision.Reason always names the
// deciding layer. On error the Decision is zero and must be treated as a
// refusal, never as an allow.
func Evaluate(ctx context.Context, pc *Context, t Tool, input json.RawMessage) (Decision, error) {
	if pc == nil {
		pc = &Context{}
	}
	mode := pc.Mode
	if mode == "" {
		mode = ModeDefault
	}
	if !ValidMode(mode) {
		return Decision{}, fmt.Errorf("permission: unknown mode %q", pc.Mode)
	}
	name := t.Name()

	// 1. Deny rules.
	r, ok, err := firstMatch(ctx, t, pc.Deny, Deny, input)
	if err != nil {
		return Decision{}, err
	}
	if ok {
		return Decision{
			Behavior: Deny,
			Message:  fmt.Sprintf("Permission to use %s has been denied", name),
			Reason:   "Rule: " + r.String(),
		}, nil
	}

	// 2. Ask rules.
	r, ok, err = firstMatch(ctx, t, pc.Ask, Ask, input)
	if err != nil {
		return Decision{}, err
	}
	if ok {
		d := Decision{
			Behavior: Ask,
			Message:  fmt.Sprintf("Permission required for %s", name),
			Reason:   "Rule: " + r.String(),
		}
		if d.Suggestions, err = suggestions(ctx, t, input); err != nil {
			return Decision{}, err
		}
		if mode == ModeDontAsk {
			return askToDeny(name, d), nil
		}
		return d, nil
	}

	// 3. Read-only fast path, in every mode.
	ro, err := t.CheckReadOnly(ctx, input)
	if err != nil {
		return Decision{}, fmt.Errorf("permission: %s read-only check: %w", name, err)
	}
	if ro {
		return Decision{
			Behavior: Allow,
			Message:  fmt.Sprintf("Permission granted for %s (read-only invocation)", name),
			Reason:   "Read-only: the call only reads",
		}, nil
	}

	if mode == ModeExplore {
		// Explore never asks the tool and allow rules cannot break
		// read-only.
		return Decision{
			Behavior: Deny,
			Message:  fmt.Sprintf("Permission denied for %s (explore mode is read-only)", name),
			Reason:   "Explore mode does not allow modifications",
		}, nil
	}

	// 4. The tool's own check.
	td, err := t.CheckPermissions(ctx, input, pc)
	if err != nil {
		return Decision{}, fmt.Errorf("permission: %s check: %w", name, err)
	}
	switch {
	case td.Behavior == Allow || td.Behavior == Deny:
		if td.Reason == "" {
			td.Reason = "Tool check: " + name
		}
		return td, nil
	case td.Behavior == Ask && td.BypassImmune && mode != ModeBypass:
		if td.Reason == "" {
			td.Reason = "Safety check: " + name
		}
		if td.Suggestions, err = suggestions(ctx, t, input); err != nil {
			return Decision{}, err
		}
		if mode == ModeDontAsk {
			return askToDeny(name, td), nil
		}
		return td, nil
	}

	// 5. Allow rules.
	r, ok, err = firstMatch(ctx, t, pc.Allow, Allow, input)
	if err != nil {
		return Decision{}, err
	}
	if ok {
		return Decision{
			Behavior:     Allow,
			Message:      fmt.Sprintf("Permission granted for %s", name),
			Reason:       "Rule: " + r.String(),
			UpdatedInput: input,
		}, nil
	}

	// 6. Fallback.
	switch mode {
	case ModeBypass:
		return Decision{
			Behavior: Allow,
			Message:  fmt.Sprintf("Permission granted for %s (bypass mode)", name),
			Reason:   "Mode: bypass",
		}, nil
	case ModeDontAsk:
		d := Decision{
			Behavior: Deny,
			Message:  fmt.Sprintf("Permission denied for %s (dont_ask mode - user not available)", name),
			Reason:   "Mode: dont_ask",
		}
		if d.Suggestions, err = suggestions(ctx, t, input); err != nil {
			return Decision{}, err
		}
		return d, nil
	}
	d := Decision{
		Behavior: Ask,
		Message:  fmt.Sprintf("Permission required for %s", name),
		Reason:   "Mode: " + string(mode),
	}
	if d.Suggestions, err = suggestions(ctx, t, input); err != nil {
		return Decision{}, err
	}
	return d, nil
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
