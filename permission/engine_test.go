package permission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// fakeTool has a fixed read-only flag and tool decision; rule contents
// match when they equal the input string.
type fakeTool struct {
	ro    bool
	check Decision
	err   error
}

func (fakeTool) Name() string { return "T" }
func (f fakeTool) CheckPermissions(context.Context, json.RawMessage, *Context) (Decision, error) {
	return f.check, f.err
}
func (f fakeTool) CheckReadOnly(context.Context, json.RawMessage) (bool, error) { return f.ro, nil }
func (fakeTool) MatchRule(_ context.Context, content string, input json.RawMessage) (bool, error) {
	var s string
	_ = json.Unmarshal(input, &s)
	return s == content, nil
}
func (fakeTool) GenerateSuggestions(context.Context, json.RawMessage) ([]Rule, error) {
	return []Rule{{Tool: "T", Content: "sugg", Behavior: Allow, Source: "suggested"}}, nil
}

var (
	tPass   = Decision{Behavior: Passthrough}
	tAsk    = Decision{Behavior: Ask, Message: "tool asks"}
	tSafety = Decision{Behavior: Ask, Message: "safety", Reason: "Safety check: x", BypassImmune: true}
	tAllow  = Decision{Behavior: Allow, Message: "tool allows"}
	tDeny   = Decision{Behavior: Deny, Message: "tool denies"}
)

func TestEvaluate(t *testing.T) {
	t.Parallel()
	rules := Context{
		Deny:  []Rule{{Tool: "Other", Behavior: Deny}, {Tool: "T", Content: "d", Behavior: Deny}},
		Ask:   []Rule{{Tool: "T", Content: "a", Behavior: Ask}},
		Allow: []Rule{{Tool: "T", Content: "l", Behavior: Allow}, {Tool: "T", Content: "d", Behavior: Allow}},
	}
	type tc struct {
		mode   Mode
		input  string
		tool   fakeTool
		want   Behavior
		reason string // prefix of the reason
		sugg   bool
		immune bool
	}
	cases := []tc{}
	// Deny rules win in every mode, even over read-only and allow rules.
	for _, m := range []Mode{ModeDefault, ModeAcceptEdits, ModeExplore, ModeBypass, ModeDontAsk} {
		cases = append(cases, tc{m, "d", fakeTool{ro: true, check: tAllow}, Deny, "Rule: T(d)", false, false})
		// Read-only allows in every mode once the tool's own check has no
		// objection; a tool DENY (a read a rule forbids) wins over it.
		cases = append(cases, tc{m, "x", fakeTool{ro: true, check: tPass}, Allow, "Read-only", false, false})
		cases = append(cases, tc{m, "x", fakeTool{ro: true, check: tDeny}, Deny, "Tool check: T", false, false})
	}
	cases = append(cases,
		// Ask rules: ASK with suggestions, DENY in dont_ask (suggestions kept).
		tc{ModeDefault, "a", fakeTool{ro: true}, Ask, "Rule: T(a)", true, false},
		tc{ModeExplore, "a", fakeTool{}, Ask, "Rule: T(a)", true, false},
		tc{ModeBypass, "a", fakeTool{}, Ask, "Rule: T(a)", true, false},
		tc{ModeDontAsk, "a", fakeTool{}, Deny, "DONT_ASK mode converted ASK to DENY. Original reason: Rule: T(a)", true, false},
		// Tool ALLOW/DENY returned as-is (not in explore).
		tc{ModeDefault, "l", fakeTool{check: tDeny}, Deny, "Tool check: T", false, false},
		tc{ModeAcceptEdits, "x", fakeTool{check: tAllow}, Allow, "Tool check: T", false, false},
		tc{ModeBypass, "x", fakeTool{check: tDeny}, Deny, "Tool check: T", false, false},
		tc{ModeExplore, "x", fakeTool{check: tAllow}, Deny, "Explore mode does not allow modifications", false, false},
		tc{ModeExplore, "l", fakeTool{check: tPass}, Deny, "Explore mode", false, false},
		// Safety ASK: immune to allow rules; skipped in bypass; DENY in dont_ask.
		tc{ModeDefault, "l", fakeTool{check: tSafety}, Ask, "Safety check: x", true, true},
		tc{ModeAcceptEdits, "l", fakeTool{check: tSafety}, Ask, "Safety check: x", true, true},
		tc{ModeBypass, "x", fakeTool{check: tSafety}, Allow, "Mode: bypass", false, false},
		tc{ModeBypass, "l", fakeTool{check: tSafety}, Allow, "Rule: T(l)", false, false},
		tc{ModeDontAsk, "l", fakeTool{check: tSafety}, Deny, "DONT_ASK mode converted ASK to DENY. Original reason: Safety check: x", true, false},
		// A read-only call with a safety ASK (a sensitive path, a read
		// outside the working directories) asks; explore cannot ask, so it
		// denies; bypass reads.
		tc{ModeDefault, "x", fakeTool{ro: true, check: tSafety}, Ask, "Safety check: x", true, true},
		tc{ModeExplore, "x", fakeTool{ro: true, check: tSafety}, Deny, "Explore mode converted ASK to DENY", true, false},
		tc{ModeBypass, "x", fakeTool{ro: true, check: tSafety}, Allow, "Read-only", false, false},
		// Non-safety ASK and PASSTHROUGH go on to allow rules and fallback.
		tc{ModeDefault, "l", fakeTool{check: tAsk}, Allow, "Rule: T(l)", false, false},
		tc{ModeDefault, "x", fakeTool{check: tAsk}, Ask, "Mode: default", true, false},
		tc{ModeAcceptEdits, "x", fakeTool{check: tPass}, Ask, "Mode: accept_edits", true, false},
		tc{ModeDontAsk, "l", fakeTool{check: tAsk}, Allow, "Rule: T(l)", false, false},
		tc{ModeDontAsk, "x", fakeTool{check: tAsk}, Deny, "Mode: dont_ask", true, false},
		tc{ModeBypass, "x", fakeTool{check: tAsk}, Allow, "Mode: bypass", false, false},
		tc{"", "x", fakeTool{check: tPass}, Ask, "Mode: default", true, false},
	)
	seen := map[string]bool{}
	for _, c := range cases {
		name := fmt.Sprintf("%s/%s/ro=%v/%s", c.mode, c.input, c.tool.ro, c.tool.check.Message)
		if seen[name] {
			t.Fatalf("duplicate case %s", name)
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			pc := rules
			pc.Mode = c.mode
			in, _ := json.Marshal(c.input)
			d, err := Evaluate(context.Background(), &pc, c.tool, in)
			if err != nil {
				t.Fatal(err)
			}
			if d.Behavior != c.want || !strings.HasPrefix(d.Reason, c.reason) || d.BypassImmune != c.immune {
				t.Fatalf("got %s %q (immune %v), want %s %q (immune %v)", d.Behavior, d.Reason, d.BypassImmune, c.want, c.reason, c.immune)
			}
			if got := len(d.Suggestions) > 0; got != c.sugg {
				t.Errorf("suggestions %v, want %v", d.Suggestions, c.sugg)
			}
		})
	}
}

func TestEvaluateMessages(t *testing.T) {
	t.Parallel()
	in, _ := json.Marshal("x")
	cases := []struct {
		mode Mode
		msg  string
	}{
		{ModeDefault, "Permission required for T (mode default, no allow rule matches)"},
		{ModeExplore, "Permission denied for T (explore mode is read-only)"},
		{ModeBypass, "Permission granted for T (bypass mode)"},
		{ModeDontAsk, "Permission denied for T (dont_ask mode - user not available; no allow rule matches)"},
	}
	for _, c := range cases {
		d, err := Evaluate(context.Background(), &Context{Mode: c.mode}, fakeTool{check: tPass}, in)
		if err != nil || d.Message != c.msg {
			t.Errorf("%s: %q, %v; want %q", c.mode, d.Message, err, c.msg)
		}
	}
	d, _ := Evaluate(context.Background(), &Context{Mode: ModeDontAsk}, fakeTool{check: tSafety}, in)
	if d.Message != "Permission denied for T (dont_ask mode - ASK converted to DENY, user not available)" {
		t.Errorf("dont_ask conversion message %q", d.Message)
	}
	d, _ = Evaluate(context.Background(), nil, fakeTool{ro: true, check: tPass}, in)
	if d.Message != "Permission granted for T (read-only invocation)" {
		t.Errorf("read-only message %q", d.Message)
	}
	d, _ = Evaluate(context.Background(), &Context{Allow: []Rule{{Tool: "T", Behavior: Allow}}}, fakeTool{check: tPass}, in)
	if d.Behavior != Allow || d.Message != "Permission granted for T by the allow rule T" || string(d.UpdatedInput) != string(in) || d.Reason != "Rule: T" {
		t.Errorf("tool-level allow rule: %+v", d)
	}
}

func TestEvaluateErrors(t *testing.T) {
	t.Parallel()
	in, _ := json.Marshal("x")
	if _, err := Evaluate(context.Background(), &Context{Mode: "yolo"}, fakeTool{}, in); err == nil {
		t.Error("unknown mode: no error")
	}
	boom := errors.New("boom")
	if _, err := Evaluate(context.Background(), nil, fakeTool{err: boom}, in); !errors.Is(err, boom) {
		t.Errorf("tool error not wrapped: %v", err)
	}
}

// behaviorTool records the rule behaviour the engine passes to MatchRule.
type behaviorTool struct {
	fakeTool
	seen *[]Behavior
}

func (b behaviorTool) MatchRule(ctx context.Context, _ string, _ json.RawMessage) (bool, error) {
	bh, ok := RuleBehaviorFrom(ctx)
	if !ok {
		return false, errors.New("no behaviour in context")
	}
	*b.seen = append(*b.seen, bh)
	return false, nil
}

func TestRuleBehaviorPassed(t *testing.T) {
	t.Parallel()
	var seen []Behavior
	pc := &Context{
		Deny:  []Rule{{Tool: "T", Content: "1", Behavior: Deny}},
		Ask:   []Rule{{Tool: "T", Content: "2", Behavior: Ask}},
		Allow: []Rule{{Tool: "T", Content: "3", Behavior: Allow}},
	}
	if _, err := Evaluate(context.Background(), pc, behaviorTool{fakeTool{check: tPass}, &seen}, json.RawMessage(`"x"`)); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[deny ask allow]" {
		t.Errorf("behaviours %v", seen)
	}
	if b, ok := RuleBehaviorFrom(context.Background()); ok || b != Allow {
		t.Errorf("default behaviour %v %v", b, ok)
	}
}

// TestVerdictFields: every verdict carries the read-only flag (even when
// a rule decides before the read-only layer), the layer, the rule and
// the policy it was decided under.
func TestVerdictFields(t *testing.T) {
	t.Parallel()
	pc := &Context{Mode: ModeAcceptEdits, WorkingDirs: []string{"/w"},
		Ask: []Rule{{Tool: "T", Content: "a", Behavior: Ask}}}
	v, err := Evaluate(context.Background(), pc, fakeTool{ro: true, check: tPass}, json.RawMessage(`"a"`))
	if err != nil {
		t.Fatal(err)
	}
	if !v.ReadOnly || v.Layer != LayerAskRule || v.Rule == nil || v.Rule.String() != "T(a)" ||
		v.Mode != ModeAcceptEdits || len(v.WorkingDirs) != 1 || len(v.Suggestions) == 0 {
		t.Errorf("verdict %+v", v)
	}
	v, _ = Evaluate(context.Background(), pc, fakeTool{check: tSafety}, json.RawMessage(`"x"`))
	if v.Layer != LayerSafety || v.Tool.Behavior != Ask || !v.BypassImmune {
		t.Errorf("safety verdict %+v", v)
	}
}
