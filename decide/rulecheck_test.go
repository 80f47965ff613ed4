package decide

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

type customerIn struct {
	ID any `json:"id"`
}

func lookupTool(t *testing.T, opts ...tools.FuncOption) tools.Tool {
	t.Helper()
	tool, err := tools.Func("lookup_customer", "Look a customer up.", func(_ context.Context, in customerIn) (string, error) {
		return "found", nil
	}, append([]tools.FuncOption{tools.WithSchema(json.RawMessage(`{"type":"object"}`))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func decideLookup(t *testing.T, tool tools.Tool, input string, allow, deny []string) (permission.Verdict, error) {
	t.Helper()
	pc := permission.Context{Mode: permission.ModeDefault}
	for _, s := range allow {
		r, _ := permission.ParseRule(s, permission.Allow)
		pc.AddRule(r)
	}
	for _, s := range deny {
		r, _ := permission.ParseRule(s, permission.Deny)
		pc.AddRule(r)
	}
	return Verdict(context.Background(), Call{Tool: tool, Input: json.RawMessage(input), Workdir: "/w", Policy: &pc})
}

// TestFuncContentField: with WithContentField a content rule matches the
// field's value (numbers as numbers, strings as text, a trailing *
// as a prefix), deny and allow alike; without the rule the call asks.
func TestFuncContentField(t *testing.T) {
	t.Parallel()
	tool := lookupTool(t, tools.WithContentField("id"))
	allowAll := []string{"lookup_customer"}
	cases := []struct {
		input       string
		allow, deny []string
		want        permission.Behavior
	}{
		{`{"id":42}`, allowAll, []string{"lookup_customer(42)"}, permission.Deny},
		{`{"id":42.0}`, allowAll, []string{"lookup_customer(42)"}, permission.Deny},
		{`{"id":"42"}`, allowAll, []string{"lookup_customer(42)"}, permission.Deny},
		{`{"id":43}`, allowAll, []string{"lookup_customer(42)"}, permission.Allow},
		{`{"id":"EU-7"}`, allowAll, []string{"lookup_customer(EU-*)"}, permission.Deny},
		{`{"id":"US-7"}`, allowAll, []string{"lookup_customer(EU-*)"}, permission.Allow},
		{`{"id":7}`, []string{"lookup_customer(7)"}, nil, permission.Allow},
		{`{"id":8}`, []string{"lookup_customer(7)"}, nil, permission.Ask},
		{`{"other":7}`, []string{"lookup_customer(7)"}, nil, permission.Ask},
		{`{"id":7}`, nil, nil, permission.Ask},
	}
	for _, c := range cases {
		v, err := decideLookup(t, tool, c.input, c.allow, c.deny)
		if err != nil || v.Behavior != c.want {
			t.Errorf("%s allow %v deny %v: %s (%s), %v; want %s", c.input, c.allow, c.deny, v.Behavior, v.Reason, err, c.want)
		}
	}
}

// TestFuncWithMatcher: WithMatcher's function decides content rules.
func TestFuncWithMatcher(t *testing.T) {
	t.Parallel()
	tool := lookupTool(t, tools.WithMatcher(func(input json.RawMessage, content string) bool {
		return strings.Contains(string(input), content)
	}))
	v, err := decideLookup(t, tool, `{"id":"vip-1"}`, []string{"lookup_customer"}, []string{"lookup_customer(vip)"})
	if err != nil || v.Behavior != permission.Deny || v.Rule == nil || v.Rule.Content != "vip" {
		t.Fatalf("verdict %+v, %v; want the deny rule", v, err)
	}
}

// TestUnmatchableRules: a content rule for a tool without a matcher is
// refused by CheckRules, naming the rule and the tool, and a decision
// that meets it fails (DecideOrAsk asks) instead of letting the call
// run; the same policy with a matcher-backed tool loads (control).
func TestUnmatchableRules(t *testing.T) {
	t.Parallel()
	plain := lookupTool(t, tools.WithAllow())
	p := permission.Policy{Allow: []string{"lookup_customer"}, Deny: []string{"lookup_customer(42)"}}
	err := CheckPolicyRules(ToolLookup([]tools.Tool{plain}), p)
	var ue *tools.UnmatchableRuleError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "deny rule lookup_customer(42)") ||
		!strings.Contains(err.Error(), "tool lookup_customer has no content matcher") {
		t.Fatalf("CheckPolicyRules = %v", err)
	}
	if err := CheckPolicyRules(ToolLookup([]tools.Tool{lookupTool(t, tools.WithContentField("id"))}), p); err != nil {
		t.Fatalf("with a matcher: %v", err)
	}
	if err := CheckPolicyRules(ToolLookup(nil), p); err != nil {
		t.Fatalf("unknown tool: %v, want it left to the worker", err)
	}
	for _, rule := range []string{"PowerShell(Remove-Item)", "AskUser(x)"} {
		if err := CheckPolicyRules(ToolLookup(tools.Builtins()), permission.Policy{Ask: []string{rule}}); !errors.As(err, &ue) {
			t.Errorf("%s: %v, want refused", rule, err)
		}
	}
	if err := CheckPolicyRules(ToolLookup(tools.Builtins()), permission.Policy{Deny: []string{"Bash(rm:*)", "Read(/etc/**)"},
		Quorum: []permission.QuorumRule{{Rule: "Bash(kubectl:*)", Approvals: 2}}}); err != nil {
		t.Fatalf("built-in matchers: %v", err)
	}
	if err := CheckPolicyRules(ToolLookup([]tools.Tool{plain}), permission.Policy{Quorum: []permission.QuorumRule{{Rule: "lookup_customer(1)", Approvals: 2}}}); !errors.As(err, &ue) {
		t.Fatalf("quorum rule: %v", err)
	}
	// Where the rule slipped past the load check, the decision fails
	// closed: the call asks (it would have been allowed).
	v, invalid := VerdictOrAsk(context.Background(), Call{Tool: plain, Input: json.RawMessage(`{"id":42}`), Workdir: "/w",
		Policy: &permission.Context{Allow: []permission.Rule{{Tool: "lookup_customer", Behavior: permission.Allow}},
			Deny: []permission.Rule{{Tool: "lookup_customer", Content: "42", Behavior: permission.Deny}}}})
	if invalid != "" || v.Behavior != permission.Ask || !strings.Contains(v.Message, "lookup_customer(42) can never match") {
		t.Fatalf("decision = %+v %q", v, invalid)
	}
}

// TestCallInfoAndRetryable: CallInfo reads what WithCallInfo set, and a
// Retryable error fails the call instead of becoming its result.
func TestCallInfoAndRetryable(t *testing.T) {
	t.Parallel()
	var got tools.CallDetails
	tool, err := tools.Func("keyed", "", func(ctx context.Context, in struct{}) (string, error) {
		var ok bool
		if got, ok = tools.CallInfo(ctx); !ok {
			return "", errors.New("no call info")
		}
		if got.Attempt == 1 {
			return "", tools.Retryable(errors.New("flaky"))
		}
		return got.IdempotencyKey, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d := tools.CallDetails{Tool: "keyed", CallID: "c1", IdempotencyKey: "wf/c1", Attempt: 1, WorkflowID: "wf"}
	if _, err := tools.Collect(tool.Call(tools.WithCallInfo(context.Background(), d), &tools.Env{}, json.RawMessage(`{}`))); err == nil || !strings.Contains(err.Error(), "flaky") {
		t.Fatalf("attempt 1: %v, want the retryable failure", err)
	}
	d.Attempt = 2
	r, err := tools.Collect(tool.Call(tools.WithCallInfo(context.Background(), d), &tools.Env{}, json.RawMessage(`{}`)))
	if err != nil || r.Content != "wf/c1" || got != d {
		t.Fatalf("attempt 2: %+v %v, saw %+v", r, err, got)
	}
	if _, ok := tools.CallInfo(context.Background()); ok {
		t.Fatal("CallInfo outside a call")
	}
}
