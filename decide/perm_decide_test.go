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

// TestDecideParsesOnce: however many rules there are, and whichever
// layers run (deny, ask and allow rules, the tool check, read-only,
// suggestions), a Bash command is analysed once per decision.
func TestDecideParsesOnce(t *testing.T) {
	t.Parallel()
	policy := permission.Policy{
		Allow: []string{"Bash(npm run:*)", "Bash(go test:*)", "Bash(make:*)"},
		Ask:   []string{"Bash(git push:*)", "Bash(curl:*)"},
		Deny:  []string{"Bash(rm -rf:*)", "Bash(dd:*)"},
	}
	pc, err := policy.Context()
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"npm run build && make", "git status", "git push origin", "cargo build", "rm -rf /", "echo $(id)"} {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		m := &tools.Memo{}
		env := &tools.Env{Workdir: "/w/proj", Permission: &pc, Home: "/home/u", Memo: m}
		if _, err := permission.Evaluate(context.Background(), &pc, bind(tools.Bash{}, env), in); err != nil {
			t.Fatal(err)
		}
		if m.Parses() != 1 {
			t.Errorf("%q analysed %d times, want once", cmd, m.Parses())
		}
	}
}

// TestDecideNoIO: the decision binds tools to no backend, so a check
// that touched the workspace would fail; every built-in tool decides
// without one.
func TestDecideNoIO(t *testing.T) {
	t.Parallel()
	inputs := map[string]string{
		"Bash": `{"command":"cat ~/.bashrc && ls"}`, "PowerShell": `{"command":"ls"}`,
		"Read": `{"file_path":"/w/proj/a.go"}`, "Write": `{"file_path":"/w/proj/a.go","content":"x"}`,
		"Edit": `{"file_path":"/w/proj/a.go","old_string":"a","new_string":"b"}`,
		"Glob": `{"pattern":"**/*.go"}`, "Grep": `{"pattern":"x"}`,
	}
	for _, tl := range tools.Builtins() {
		name := tl.Info().Name
		in, ok := inputs[name]
		if !ok {
			continue
		}
		v, err := Verdict(context.Background(), Call{Tool: tl, Input: json.RawMessage(in), Workdir: "/w/proj", Home: "/home/u"})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if v.Layer == "" || v.Mode != permission.ModeDefault || v.Reason == "" && v.Behavior != permission.Allow {
			t.Errorf("%s: incomplete verdict %+v", name, v)
		}
	}
}

// TestDecideValidates: an input that does not fit the schema is a
// *ValidationError from Decide and the model's text from DecideOrAsk,
// as in the worker.
func TestDecideValidates(t *testing.T) {
	t.Parallel()
	_, err := Verdict(context.Background(), Call{Tool: tools.Write{}, Input: json.RawMessage(`{"file_path":"/w/a"}`), Workdir: "/w"})
	var ve *tools.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Decide: %v, want a ValidationError", err)
	}
	v, invalid := VerdictOrAsk(context.Background(), Call{Tool: tools.Write{}, Input: json.RawMessage(`{"file_path":"/w/a"}`), Workdir: "/w"})
	if invalid != ve.Error() || v.Behavior != "" {
		t.Errorf("DecideOrAsk: %+v %q", v, invalid)
	}
	// A check that fails (a bad rule pattern) asks, naming the failure.
	pc := permission.Context{Allow: []permission.Rule{{Tool: "Edit", Content: "[", Behavior: permission.Allow}}}
	v, invalid = VerdictOrAsk(context.Background(), Call{Tool: tools.Edit{}, Input: json.RawMessage(`{"file_path":"/w/a","old_string":"a","new_string":"b"}`), Workdir: "/w", Policy: &pc})
	if invalid != "" || v.Behavior != permission.Ask || v.Layer != "check failed" {
		t.Errorf("failed check: %+v %q", v, invalid)
	}
}

// TestPathSuggestionsAllow: a read or write outside the working
// directories suggests the Read or Edit rule for its directory, and
// adding that rule (always allow) allows the same call next time.
func TestPathSuggestionsAllow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ cmd, rule string }{
		{"cat /etc/hosts", "Read(/etc/**)"},
		{"echo x > /var/tmp/out.txt", "Edit(/var/tmp/**)"},
	} {
		pc, _ := permission.Policy{Allow: []string{"Bash(echo:*)"}}.Context()
		in, _ := json.Marshal(map[string]string{"command": c.cmd})
		call := Call{Tool: tools.Bash{}, Input: in, Workdir: "/w/proj", Home: "/home/u", Policy: &pc}
		v, err := Verdict(context.Background(), call)
		if err != nil || v.Behavior != permission.Ask {
			t.Fatalf("%q: %+v %v", c.cmd, v, err)
		}
		found := false
		for _, s := range v.Suggestions {
			if s.String() == c.rule {
				found = true
				r, _ := permission.ParseRule(s.String(), permission.Allow)
				pc.AddRule(r)
			}
		}
		if !found {
			t.Fatalf("%q: suggestions %v lack %s", c.cmd, v.Suggestions, c.rule)
		}
		if v, err = Verdict(context.Background(), call); err != nil || v.Behavior != permission.Allow {
			t.Errorf("%q with %s: %s %q", c.cmd, c.rule, v.Behavior, v.Message)
		}
	}
}

// TestGrepHomeAsks: a search of the home directory (or above it) reads
// its credentials, so it asks even when home is a working directory.
func TestGrepHomeAsks(t *testing.T) {
	t.Parallel()
	pc := permission.Context{WorkingDirs: []string{"/home/u"}}
	for p, want := range map[string]permission.Behavior{"/home/u": permission.Ask, "/home": permission.Ask, "/home/u/src": permission.Allow} {
		in, _ := json.Marshal(map[string]string{"pattern": "KEY", "path": p})
		v, err := Verdict(context.Background(), Call{Tool: tools.Grep{}, Input: in, Workdir: "/home/u/src", Home: "/home/u", Policy: &pc})
		if err != nil || v.Behavior != want {
			t.Errorf("Grep %s: %s %q %v, want %s", p, v.Behavior, v.Message, err, want)
		}
	}
}

// TestDecideValidatesBeforeAsking: a call that would fail without
// running (schema, path form, its input checks, read-before-write where
// the state tells) is an invalid input with the tool error the model
// reads, never an approval request, whatever the policy asks for.
func TestDecideValidatesBeforeAsking(t *testing.T) {
	t.Parallel()
	read := &tools.State{Reads: map[string]tools.FileStamp{"/w/a.go": {Size: 1}}}
	cases := []struct {
		name  string
		tool  tools.Tool
		input string
		state *tools.State
		want  string // a substring of the invalid message
	}{
		{"relative Write", tools.Write{}, `{"file_path":"a.go","content":"x"}`, nil, "/file_path"},
		{"relative Write, dot", tools.Write{}, `{"file_path":"./a.go","content":"x"}`, read, "/file_path"},
		{"Write with NUL", tools.Write{}, `{"file_path":"/w/a\u0000.go","content":"x"}`, nil, "NUL"},
		{"Edit missing new_string", tools.Edit{}, `{"file_path":"/w/a.go","old_string":"a"}`, read, "new_string"},
		{"Edit replace_all not boolean", tools.Edit{}, `{"file_path":"/w/a.go","old_string":"a","new_string":"b","replace_all":"yes"}`, read, "/replace_all"},
		{"Edit unknown field", tools.Edit{}, `{"file_path":"/w/a.go","old_string":"a","new_string":"b","force":true}`, read, "force"},
		{"Edit identical strings", tools.Edit{}, `{"file_path":"/w/a.go","old_string":"a","new_string":"a"}`, read, "identical"},
		{"Edit empty old_string", tools.Edit{}, `{"file_path":"/w/a.go","old_string":"","new_string":"a"}`, read, "must not be empty"},
		{"Edit not read", tools.Edit{}, `{"file_path":"/w/b.go","old_string":"a","new_string":"b"}`, read, "first read it"},
		{"Edit not read, empty state", tools.Edit{}, `{"file_path":"/w/a.go","old_string":"a","new_string":"b"}`, &tools.State{}, "first read it"},
		{"Bash empty", tools.Bash{}, `{"command":"  "}`, nil, "empty command"},
		{"Grep empty pattern", tools.Grep{}, `{"pattern":""}`, nil, "pattern is required"},
		{"Glob NUL", tools.Glob{}, `{"pattern":"*","path":"a\u0000"}`, nil, "NUL"},
		{"AskUser duplicate labels", tools.AskUser{}, `{"questions":[{"question":"Which?","header":"Pick","options":[{"label":"A","description":""},{"label":"A","description":""}]}]}`, nil, "unique"},
	}
	for _, mode := range []permission.Mode{permission.ModeDefault, permission.ModeBypass} {
		// Every rule asks: only an invalid input can escape the ASK.
		pc := permission.Context{Mode: mode, Ask: []permission.Rule{{Tool: "Write"}, {Tool: "Edit"}, {Tool: "Bash"}, {Tool: "Grep"}, {Tool: "Glob"}, {Tool: "AskUser"}}}
		for _, c := range cases {
			v, invalid := VerdictOrAsk(context.Background(), Call{Tool: c.tool, Input: json.RawMessage(c.input), Workdir: "/w", Policy: &pc, State: c.state})
			if invalid == "" || v.Behavior != "" {
				t.Errorf("%s (%s): verdict %s (%s), want an invalid input", c.name, mode, v.Behavior, v.Reason)
				continue
			}
			if !strings.Contains(invalid, c.want) {
				t.Errorf("%s (%s): invalid %q, want it to mention %q", c.name, mode, invalid, c.want)
			}
		}
	}
}

// TestDecideReadBeforeWrite: the read-before-write check only rejects
// what the state proves cannot succeed: an Edit of a file read in this
// turn, of any file when the state is unknown, and a Write of a file
// never read (it may not exist) are decided as usual; so is an Edit
// whose Read comes earlier in the same step (State.Anticipate).
func TestDecideReadBeforeWrite(t *testing.T) {
	t.Parallel()
	pc := permission.Context{Mode: permission.ModeDefault}
	edit := json.RawMessage(`{"file_path":"/w/a.go","old_string":"a","new_string":"b"}`)
	decide := func(tl tools.Tool, input json.RawMessage, s *tools.State) (permission.Verdict, string) {
		return VerdictOrAsk(context.Background(), Call{Tool: tl, Input: input, Workdir: "/w", Policy: &pc, State: s})
	}
	for name, s := range map[string]*tools.State{
		"read":    {Reads: map[string]tools.FileStamp{"/w/a.go": {Size: 3}}},
		"unknown": nil,
		"unclean": {Reads: map[string]tools.FileStamp{"/w/a.go": {Size: 3}}},
	} {
		in := edit
		if name == "unclean" {
			in = json.RawMessage(`{"file_path":"/w/x/../a.go","old_string":"a","new_string":"b"}`)
		}
		if v, invalid := decide(tools.Edit{}, in, s); invalid != "" || v.Behavior != permission.Ask {
			t.Errorf("Edit, state %s: %s %q, want ask", name, v.Behavior, invalid)
		}
	}
	if v, invalid := decide(tools.Write{}, json.RawMessage(`{"file_path":"/w/new.go","content":"x"}`), &tools.State{}); invalid != "" || v.Behavior != permission.Ask {
		t.Errorf("Write of an unread file: %s %q, want ask", v.Behavior, invalid)
	}

	// One step: Read a.go, Edit a.go, Edit b.go, decided before any runs.
	var s tools.State
	step := []struct {
		tool  tools.Tool
		input string
		ok    bool
	}{
		{tools.Read{}, `{"file_path":"/w/a.go"}`, true},
		{tools.Edit{}, `{"file_path":"/w/a.go","old_string":"a","new_string":"b"}`, true},
		{tools.Edit{}, `{"file_path":"/w/b.go","old_string":"a","new_string":"b"}`, false},
	}
	for i, c := range step {
		cur := s
		_, invalid := decide(c.tool, json.RawMessage(c.input), &cur)
		if (invalid == "") != c.ok {
			t.Errorf("step call %d: invalid %q, want ok %v", i, invalid, c.ok)
		}
		s = s.Anticipate(c.tool.Info().Name, json.RawMessage(c.input))
	}
	if len(s.Reads) != 1 {
		t.Errorf("anticipated reads %v, want /w/a.go only", s.Reads)
	}
	var empty tools.State
	_ = empty.Anticipate("Read", json.RawMessage(`{"file_path":"/w/a.go"}`))
	if empty.Reads != nil {
		t.Error("Anticipate changed its receiver")
	}
}
