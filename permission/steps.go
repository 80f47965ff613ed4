package permission

import (
	"context"
	"encoding/json"
	"fmt"
)

// The steps of Evaluate, in the order steps lists them. Each returns the
// decision and true when it decides, false when it has no opinion.

// denyRule: the first deny rule that matches denies.
func denyRule(ctx context.Context, e *evaluation) (Decision, bool, error) {
	r, ok, err := firstMatch(ctx, e.t, e.pc.Deny, Deny, e.input)
	if err != nil || !ok {
		return Decision{}, false, err
	}
	e.rule = &r
	return Decision{
		Behavior: Deny,
		Message:  fmt.Sprintf("Permission to use %s has been denied by the deny rule %s", e.name, r),
		Reason:   "Rule: " + r.String(),
	}, true, nil
}

// askRule: the first ask rule that matches asks, with suggestions; in
// ModeDontAsk the ASK becomes a DENY.
func askRule(ctx context.Context, e *evaluation) (Decision, bool, error) {
	r, ok, err := firstMatch(ctx, e.t, e.pc.Ask, Ask, e.input)
	if err != nil || !ok {
		return Decision{}, false, err
	}
	e.rule = &r
	d, err := e.suggest(ctx, Decision{
		Behavior: Ask,
		Message:  fmt.Sprintf("Permission required for %s: the ask rule %s matches", e.name, r),
		Reason:   "Rule: " + r.String(),
	})
	if err != nil {
		return Decision{}, false, err
	}
	if e.mode == ModeDontAsk {
		return askToDeny(e.name, d), true, nil
	}
	return d, true, nil
}

// toolDeny: a DENY of the tool's own check is returned as it is, in
// every mode.
func toolDeny(ctx context.Context, e *evaluation) (Decision, bool, error) {
	td, err := e.toolCheck(ctx)
	if err != nil || td.Behavior != Deny {
		return Decision{}, false, err
	}
	if td.Reason == "" {
		td.Reason = "Tool check: " + e.name
	}
	return td, true, nil
}

// safetyCheck: a bypass-immune ASK of the tool's own check asks, with
// suggestions, whatever the allow rules say; ModeDontAsk and ModeExplore
// turn it into a DENY, and ModeBypass skips it.
func safetyCheck(ctx context.Context, e *evaluation) (Decision, bool, error) {
	td, err := e.toolCheck(ctx)
	if err != nil || td.Behavior != Ask || !td.BypassImmune || e.mode == ModeBypass {
		return Decision{}, false, err
	}
	if td.Reason == "" {
		td.Reason = "Safety check: " + e.name
	}
	if td, err = e.suggest(ctx, td); err != nil {
		return Decision{}, false, err
	}
	switch e.mode {
	case ModeDontAsk:
		return askToDeny(e.name, td), true, nil
	case ModeExplore:
		return Decision{
			Behavior:    Deny,
			Message:     fmt.Sprintf("Permission denied for %s (explore mode cannot ask): %s", e.name, td.Message),
			Reason:      "Explore mode converted ASK to DENY. Original reason: " + td.Reason,
			Suggestions: td.Suggestions,
		}, true, nil
	}
	return td, true, nil
}

// readOnly: a call that only reads is allowed, in every mode (not in a
// rules-only check).
func readOnly(_ context.Context, e *evaluation) (Decision, bool, error) {
	if !e.ro || e.pc.RulesOnly {
		return Decision{}, false, nil
	}
	return Decision{
		Behavior: Allow,
		Message:  fmt.Sprintf("Permission granted for %s (read-only invocation)", e.name),
		Reason:   "Read-only: the call only reads",
	}, true, nil
}

// exploreMode: ModeExplore denies everything that is not read-only, so
// neither the tool nor an allow rule can break it.
func exploreMode(ctx context.Context, e *evaluation) (Decision, bool, error) {
	if e.mode != ModeExplore {
		return Decision{}, false, nil
	}
	td, err := e.toolCheck(ctx)
	if err != nil {
		return Decision{}, false, err
	}
	msg := fmt.Sprintf("Permission denied for %s (explore mode is read-only)", e.name)
	if td.Message != "" && td.Behavior == Passthrough {
		msg += ": " + td.Message
	}
	return Decision{Behavior: Deny, Message: msg, Reason: "Explore mode does not allow modifications"}, true, nil
}

// toolAllow: an ALLOW of the tool's own check (e.g. accept_edits inside
// the working directories) allows (not in a rules-only check).
func toolAllow(ctx context.Context, e *evaluation) (Decision, bool, error) {
	td, err := e.toolCheck(ctx)
	if err != nil || td.Behavior != Allow || e.pc.RulesOnly {
		return Decision{}, false, err
	}
	if td.Reason == "" {
		td.Reason = "Tool check: " + e.name
	}
	return td, true, nil
}

// allowRule: the first allow rule that matches allows.
func allowRule(ctx context.Context, e *evaluation) (Decision, bool, error) {
	r, ok, err := firstMatch(ctx, e.t, e.pc.Allow, Allow, e.input)
	if err != nil || !ok {
		return Decision{}, false, err
	}
	e.rule = &r
	return Decision{
		Behavior:     Allow,
		Message:      fmt.Sprintf("Permission granted for %s by the allow rule %s", e.name, r),
		Reason:       "Rule: " + r.String(),
		UpdatedInput: e.input,
	}, true, nil
}

// modeFallback: the mode decides what no earlier step did: ALLOW in
// ModeBypass, DENY in ModeDontAsk, ASK otherwise (both with
// suggestions). The tool's message (what about the call is not
// read-only) tells the human what they are asked about.
func modeFallback(ctx context.Context, e *evaluation) (Decision, bool, error) {
	td, err := e.toolCheck(ctx)
	if err != nil {
		return Decision{}, false, err
	}
	why := ""
	if td.Message != "" && td.Behavior != Allow {
		why = ": " + td.Message
	}
	var d Decision
	switch e.mode {
	case ModeBypass:
		return Decision{
			Behavior: Allow,
			Message:  fmt.Sprintf("Permission granted for %s (bypass mode)", e.name),
			Reason:   "Mode: bypass",
		}, true, nil
	case ModeDontAsk:
		d = Decision{
			Behavior: Deny,
			Message:  fmt.Sprintf("Permission denied for %s (dont_ask mode - user not available; no allow rule matches)%s", e.name, why),
			Reason:   "Mode: dont_ask",
		}
	default:
		d = Decision{
			Behavior: Ask,
			Message:  fmt.Sprintf("Permission required for %s (mode %s, no allow rule matches)%s", e.name, e.mode, why),
			Reason:   "Mode: " + string(e.mode),
		}
	}
	if d, err = e.suggest(ctx, d); err != nil {
		return Decision{}, false, err
	}
	return d, true, nil
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
