package permission

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, tool, content, err string
	}{
		{in: "Bash", tool: "Bash"},
		{in: "Bash(npm run:*)", tool: "Bash", content: "npm run:*"},
		{in: " Edit(src/**) ", tool: "Edit", content: "src/**"},
		{in: "Bash(echo (a))", tool: "Bash", content: "echo (a)"},
		{in: "Read()", tool: "Read"},
		{in: "", err: "empty"},
		{in: "Bash(ls", err: "missing closing parenthesis"},
		{in: "(ls)", err: "missing tool name"},
		{in: "Bash)", err: "unbalanced"},
		{in: "Ba sh(ls)", err: "invalid tool name"},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.in] {
			t.Fatalf("duplicate case %q", c.in)
		}
		seen[c.in] = true
		r, err := ParseRule(c.in, Deny)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseRule(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || r.Tool != c.tool || r.Content != c.content || r.Behavior != Deny {
			t.Errorf("ParseRule(%q) = %+v, %v", c.in, r, err)
		}
		if back, _ := ParseRule(r.String(), Deny); back != r {
			t.Errorf("round trip of %q via %q gave %+v", c.in, r.String(), back)
		}
	}
	if _, err := ParseRule("Bash", Passthrough); err == nil {
		t.Error("passthrough rule accepted")
	}
}

func TestAddRule(t *testing.T) {
	t.Parallel()
	var c Context
	for _, b := range []Behavior{Allow, Ask, Deny, Passthrough, ""} {
		c.AddRule(Rule{Tool: "T", Behavior: b})
	}
	if len(c.Allow) != 1 || len(c.Ask) != 1 || len(c.Deny) != 1 {
		t.Errorf("AddRule: %+v", c)
	}
}

func TestPolicyContext(t *testing.T) {
	t.Parallel()
	src := `
mode: accept_edits
working_dirs: [/src]
allow: ["Bash(git status)", "Read"]
ask: ["Bash(git push:*)"]
deny: ["Bash(rm:*)"]
dangerous_files: []
`
	var p Policy
	if err := yaml.Unmarshal([]byte(src), &p); err != nil {
		t.Fatal(err)
	}
	c, err := p.Context()
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeAcceptEdits || len(c.Allow) != 2 || c.Allow[1].Tool != "Read" || c.Deny[0].Content != "rm:*" ||
		c.Ask[0].Source != PolicySource || c.DangerousFiles == nil || len(*c.DangerousFiles) != 0 || c.DangerousDirs != nil {
		t.Errorf("context %+v", c)
	}
	// JSON is YAML too.
	if err := yaml.Unmarshal([]byte(`{"mode":"dont_ask","deny":["Write"]}`), &p); err != nil {
		t.Fatal(err)
	}
	if c, err := (Policy{}).Context(); err != nil || c.Mode != ModeDefault {
		t.Errorf("empty policy: %+v %v", c, err)
	}
	bad := []struct {
		p   Policy
		err string
	}{
		{Policy{Mode: "yolo"}, `unknown mode "yolo"`},
		{Policy{Deny: []string{"Bash", "Bash(rm"}}, `deny rule 2: rule "Bash(rm": missing closing parenthesis`},
		{Policy{Allow: []string{""}}, "allow rule 1"},
	}
	for _, b := range bad {
		if _, err := b.p.Context(); err == nil || !strings.Contains(err.Error(), b.err) {
			t.Errorf("%+v: error %v, want %q", b.p, err, b.err)
		}
	}
}
