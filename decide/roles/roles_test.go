package roles

import (
	"encoding/json"
	"testing"

	"github.com/wardenhq/warden/permission"
)

func allow(t *testing.T, rules ...string) []permission.Rule {
	t.Helper()
	var out []permission.Rule
	for _, s := range rules {
		r, err := permission.ParseRule(s, permission.Allow)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestCover(t *testing.T) {
	t.Parallel()
	cases := []struct {
		rules []string
		tool  string
		input string
		want  bool
	}{
		{[]string{"Bash(kubectl:*)"}, "Bash", `{"command":"kubectl get pods"}`, true},
		{[]string{"Bash(kubectl:*)"}, "Bash", `{"command":"kubectl get pods && rm -rf x"}`, false},
		{[]string{"Bash(kubectl:*)"}, "Bash", `{"command":"ls"}`, false}, // read-only is no shortcut
		{[]string{"Bash"}, "Bash", `{"command":"touch build"}`, true},
		// A safety check (here a dangerous pattern) needs an unrestricted approver.
		{[]string{"Bash"}, "Bash", `{"command":"rm -rf build"}`, false},
		{[]string{"Edit(/srv/app/**)"}, "Edit", `{"file_path":"/srv/app/a.go","old_string":"a","new_string":"b"}`, true},
		{[]string{"Edit(/srv/app/**)"}, "Edit", `{"file_path":"/srv/app/../../etc/hosts","old_string":"a","new_string":"b"}`, false},
		{[]string{"Edit(/srv/app/**)"}, "Write", `{"file_path":"/srv/app/a.go","content":"x"}`, false},
		{[]string{"mcp__srv__tool"}, "mcp__srv__tool", `{}`, true},
		{[]string{"mcp__srv__tool(x)"}, "mcp__srv__tool", `{}`, false},
		{nil, "Bash", `{"command":"ls"}`, false},
	}
	for _, c := range cases {
		if got := Cover(allow(t, c.rules...), c.tool, json.RawMessage(c.input), ""); got != c.want {
			t.Errorf("Cover(%v, %s, %s) = %v, want %v", c.rules, c.tool, c.input, got, c.want)
		}
	}
}

func TestWithin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		rule  string
		roles []string
		want  bool
	}{
		{"Bash(kubectl get:*)", []string{"Bash(kubectl:*)"}, true},
		{"Bash(kubectl get pods)", []string{"Bash(kubectl:*)"}, true},
		{"Bash", []string{"Bash(kubectl:*)"}, false},
		{"Bash(*)", []string{"Bash(kubectl:*)"}, false},
		{"Bash(rm:*)", []string{"Bash(kubectl:*)"}, false},
		{"Bash(rm:*)", []string{"Bash"}, true},
		{"Edit(src/a/**)", []string{"Edit(src/**)"}, true},
		{"Edit(src/../**)", []string{"Edit(src/**)"}, false},
		{"Edit(/etc/**)", []string{"Edit(src/**)"}, false},
		{"Write(src/a.go)", []string{"Edit(src/**)"}, false},
	}
	for _, c := range cases {
		r, err := permission.ParseRule(c.rule, permission.Allow)
		if err != nil {
			t.Fatal(err)
		}
		if got := Within(r, allow(t, c.roles...)); got != c.want {
			t.Errorf("Within(%s, %v) = %v, want %v", c.rule, c.roles, got, c.want)
		}
	}
}

// TestCoverBudget: a budget approval (tool Budget) is covered by a role
// rule naming Budget, and by no rule of another tool.
func TestCoverBudget(t *testing.T) {
	in := json.RawMessage(`{"kind":"cost","spent":"5.01","limit":"5","next":"call the model"}`)
	budget, _ := permission.ParseRule("Budget", permission.Allow)
	kube, _ := permission.ParseRule("Bash(kubectl:*)", permission.Allow)
	if !Cover([]permission.Rule{budget}, "Budget", in, "") {
		t.Error("a Budget rule does not cover a budget approval")
	}
	if Cover([]permission.Rule{kube}, "Budget", in, "") {
		t.Error("a Bash rule covers a budget approval")
	}
}

// TestCoverInWorkspace: a role's relative pattern covers a call's
// absolute path inside the turn's workspace, as the worker's decision
// resolves it, and not outside it; without a workspace (a check outside
// any turn) it covers no absolute path.
func TestCoverInWorkspace(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	edit := func(p string) json.RawMessage {
		return json.RawMessage(`{"file_path":"` + p + `","old_string":"a","new_string":"b"}`)
	}
	role := allow(t, "Edit(src/**)")
	for _, c := range []struct {
		input   json.RawMessage
		workdir string
		want    bool
	}{
		{edit(ws + "/src/a.go"), ws, true},
		{edit(ws + "/docs/a.md"), ws, false},
		{edit(ws + "/src/../../etc/hosts"), ws, false},
		{edit(ws + "/src/a.go"), "", false},
	} {
		if got := Cover(role, "Edit", c.input, c.workdir); got != c.want {
			t.Errorf("Cover(Edit(src/**), %s, workdir %q) = %v, want %v", c.input, c.workdir, got, c.want)
		}
	}
}
