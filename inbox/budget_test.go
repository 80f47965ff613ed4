package inbox

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/workflows"
)

// budgetServer is an inbox with an unrestricted user alice, a user fin
// whose role covers budget approvals, and a user kube whose role covers
// kubectl commands only.
func budgetServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Config{Client: client.New(nil, "unused"), Users: map[string]config.InboxUser{
		"alice": {Token: "tok-alice"},
		"fin":   {Token: "tok-fin", Roles: []string{"budget"}},
		"kube":  {Token: "tok-kube", Roles: []string{"k8s"}},
	}, Roles: map[string]config.InboxRole{"budget": {Allow: []string{workflows.BudgetTool}}, "k8s": {Allow: []string{"Bash(kubectl:*)"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// budgetEntry is a listed budget approval of turn t1.
func budgetEntry(req workflows.BudgetRequest) client.PendingEntry {
	in, _ := json.Marshal(req)
	return client.PendingEntry{WorkflowID: "t1", Pending: workflows.Pending{Kind: workflows.PendingBudget, CallID: "budget_1",
		Tool: workflows.BudgetTool, Input: in, Hash: "h1", Reason: "budget " + req.Kind,
		Message: "budget " + req.Kind + " reached: " + req.Spent + " of " + req.Limit + " spent; the turn was about to " + req.Next + "."}}
}

// TestMayAnswerBudget: budget approvals are answered by users without
// roles and by those whose role names the Budget tool; a role that
// covers commands does not cover them.
func TestMayAnswerBudget(t *testing.T) {
	s := budgetServer(t)
	in := budgetEntry(workflows.BudgetRequest{Kind: "cost", Spent: "5.01", Limit: "5"}).Input
	for user, want := range map[string]bool{"alice": true, "fin": true, "kube": false, "mallory": false} {
		if got := s.may(user, workflows.BudgetTool, in, nil, "", nil); got != want {
			t.Errorf("may(%s, Budget) = %v, want %v", user, got, want)
		}
	}
}

// TestBudgetEntryRendered: a budget approval renders as one (a budget
// badge, what was spent and the limit, not "external" and no "complete"
// box) with a raise form pre-filled with its bound's limit once more and
// a deny, for the users who may answer it; a user whose roles do not
// cover it gets neither form, and a note.
func TestBudgetEntryRendered(t *testing.T) {
	s := budgetServer(t)
	cases := []struct {
		req        workflows.BudgetRequest
		field, val string
	}{
		{workflows.BudgetRequest{Kind: "cost", Spent: "5.01", Limit: "5", Next: "call the model"}, "cost", "5"},
		{workflows.BudgetRequest{Kind: "tokens", Spent: "1200", Limit: "1000", Next: "run 1 tool call(s): Bash"}, "tokens", "1000"},
		{workflows.BudgetRequest{Kind: "tool_calls:Bash", Spent: "50", Limit: "50", Next: "run 1 tool call(s): Bash"}, "per_tool", "Bash=50"},
		{workflows.BudgetRequest{Kind: "time", Spent: "8h0m1s", Limit: "8h0m0s", Next: "call the model"}, "time", "8h0m0s"},
		{workflows.BudgetRequest{Kind: "agent ops daily cost", Spent: "2", Limit: "2", Next: "call the model", Agent: "ops",
			Window: workflows.WindowDaily, Store: "warden-budget-ops"}, "cost", "2"},
	}
	for _, c := range cases {
		for _, user := range []string{"alice", "fin"} {
			out, err := s.render([]client.PendingEntry{budgetEntry(c.req)}, user, query{})
			if err != nil {
				t.Fatal(err)
			}
			h := out.Items[0].HTML
			main := `data-bound="` + c.field + `" value="` + c.val + `"`
			for _, want := range []string{`<span class="badge">budget</span>`, "reached: " + c.req.Spent + " of " + c.req.Limit, main,
				`data-act="raise"`, `data-act="budget-deny"`, "raise other bounds"} {
				if !strings.Contains(h, want) {
					t.Errorf("%s, %s: the entry lacks %q:\n%s", c.req.Kind, user, want, h)
				}
			}
			if strings.Contains(h, "external") || strings.Contains(h, `data-act="complete"`) || strings.Contains(h, `data-act="allow"`) {
				t.Errorf("%s, %s: shown as another kind:\n%s", c.req.Kind, user, h)
			}
			if c.req.Window != "" && !strings.Contains(h, "agent budget:</b> ops, daily bound") {
				t.Errorf("%s: the agent budget is not named:\n%s", c.req.Kind, h)
			}
		}
	}
	out, err := s.render([]client.PendingEntry{budgetEntry(cases[0].req)}, "kube", query{})
	if err != nil {
		t.Fatal(err)
	}
	if h := out.Items[0].HTML; strings.Contains(h, `data-act="raise"`) || strings.Contains(h, `data-act="budget-deny"`) ||
		!strings.Contains(h, "Your roles do not cover budget approvals") {
		t.Errorf("kube is offered the budget form:\n%s", h)
	}
}

// TestBudgetAnswerChecks: POST /api/budget takes the other answers'
// sign-in and CSRF checks, and refuses a malformed answer before it asks
// the turn: an allow without a raise or with a bad one, a deny with a
// raise, another decision.
func TestBudgetAnswerChecks(t *testing.T) {
	s := budgetServer(t)
	ok := BudgetAnswerRequest{WorkflowID: "t1", CallID: "budget_1", Hash: "h1", Decision: workflows.DecisionAllow, Raise: "cost=+2"}
	if w := do(s, "POST", "/api/budget", "", ok); w.Code != http.StatusUnauthorized {
		t.Errorf("no sign-in: %d", w.Code)
	}
	r := do(s, "GET", "/api/budget", "tok-fin", nil)
	if r.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", r.Code)
	}
	for name, c := range map[string]struct {
		req  BudgetAnswerRequest
		want string
	}{
		"allow without a raise": {BudgetAnswerRequest{WorkflowID: "t1", CallID: "budget_1", Decision: workflows.DecisionAllow}, "needs a raise"},
		"a bad raise":           {BudgetAnswerRequest{WorkflowID: "t1", CallID: "budget_1", Decision: workflows.DecisionAllow, Raise: "cost=-2"}, "raise: budget item"},
		"a raise of nothing":    {BudgetAnswerRequest{WorkflowID: "t1", CallID: "budget_1", Decision: workflows.DecisionAllow, Raise: "cost"}, "NAME=VALUE"},
		"a deny with a raise":   {BudgetAnswerRequest{WorkflowID: "t1", CallID: "budget_1", Decision: workflows.DecisionDeny, Raise: "cost=+2"}, "a deny raises nothing"},
		"always_allow":          {BudgetAnswerRequest{WorkflowID: "t1", CallID: "budget_1", Decision: workflows.DecisionAlwaysAllow, Raise: "cost=+2"}, "want allow (with a raise) or deny"},
	} {
		w := do(s, "POST", "/api/budget", "tok-fin", c.req)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s: %d %s, want 400 %q", name, w.Code, w.Body.String(), c.want)
		}
	}
	// Without the CSRF header: refused before anything else.
	b, _ := json.Marshal(ok)
	req := httptest.NewRequest("POST", "/api/budget", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer tok-fin")
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusForbidden {
		t.Errorf("no CSRF header: %d", w.Code)
	}
}

// TestEntryShowsDeadlineAndInput: a waiting call's entry states its
// deadline in the page (not only in a tooltip) and shows its input as
// typed: a Bash command with >> and && reads so (HTML-escaped once),
// and a JSON input without Go's \u003e escapes.
func TestEntryShowsDeadlineAndInput(t *testing.T) {
	s := budgetServer(t)
	bash, _ := json.Marshal(map[string]string{"command": "echo up >> /var/log/deploy && kubectl get pods"})
	other, _ := json.Marshal(map[string]string{"query": "a > b && c < d"})
	deadline := time.Now().Add(90 * time.Minute)
	for _, c := range []struct {
		tool string
		in   json.RawMessage
		want string
	}{
		{"Bash", bash, "echo up &gt;&gt; /var/log/deploy &amp;&amp; kubectl get pods"},
		{"Query", other, "a &gt; b &amp;&amp; c &lt; d"},
	} {
		e := client.PendingEntry{WorkflowID: "t1", Pending: workflows.Pending{Kind: workflows.PendingApproval, CallID: "call_1",
			Tool: c.tool, Input: c.in, Hash: "h1", Message: "Permission required for " + c.tool, Deadline: deadline}}
		out, err := s.render([]client.PendingEntry{e}, "alice", query{})
		if err != nil {
			t.Fatal(err)
		}
		h := out.Items[0].HTML
		if !strings.Contains(h, c.want) || strings.Contains(h, `\u00`) {
			t.Errorf("%s: the input is not shown as typed (want %q):\n%s", c.tool, c.want, h)
		}
		if !strings.Contains(h, `deadline in <b class="left">1h29m`) && !strings.Contains(h, `deadline in <b class="left">1h30m`) {
			t.Errorf("%s: the deadline is not stated in the page:\n%s", c.tool, h)
		}
	}
}
