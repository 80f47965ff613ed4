package permission

import (
	"bytes"
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const longForm = `
mode: default
allow:
  - Bash(git status)
  - rule: Bash(npm run:*)
    match: ["npm run build", "npm run test"]
    not_match: ["npm install"]
  - {rule: "Edit(src/**)", match: [src/a.go]}
ask:
  - {rule: "Bash(git push:*)", not_match: ["git pull"]}
deny: ["Bash(rm:*)"]
dangerous_commands:
  - {rule: "terraform destroy:*", match: ["terraform destroy -auto-approve"]}
sandbox: {network: false}
`

func wantLongForm(t *testing.T, p Policy) {
	t.Helper()
	if !slices.Equal(p.Allow, []string{"Bash(git status)", "Bash(npm run:*)", "Edit(src/**)"}) ||
		!slices.Equal(p.Ask, []string{"Bash(git push:*)"}) || !slices.Equal(p.Deny, []string{"Bash(rm:*)"}) ||
		!slices.Equal(p.DangerousCommands, []string{"terraform destroy:*"}) {
		t.Fatalf("rules: %+v", p)
	}
	want := []RuleExamples{
		{List: "allow", Index: 2, Rule: "Bash(npm run:*)", Match: []string{"npm run build", "npm run test"}, NotMatch: []string{"npm install"}},
		{List: "allow", Index: 3, Rule: "Edit(src/**)", Match: []string{"src/a.go"}},
		{List: "ask", Index: 1, Rule: "Bash(git push:*)", NotMatch: []string{"git pull"}},
		{List: "dangerous_commands", Index: 1, Rule: "terraform destroy:*", Match: []string{"terraform destroy -auto-approve"}},
	}
	got := slices.Clone(p.Examples)
	slices.SortStableFunc(got, func(a, b RuleExamples) int { return cmp.Or(strings.Compare(a.List, b.List), a.Index-b.Index) })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("examples:\n got %+v\nwant %+v", got, want)
	}
	c, err := p.Context()
	if err != nil || len(c.Allow) != 3 || c.Allow[1].Content != "npm run:*" || !slices.Equal(c.DangerousCommands, []string{"terraform destroy:*"}) {
		t.Errorf("context %+v %v", c, err)
	}
}

// TestPolicyLongForm: a rule is a string or {rule, match, not_match}, in
// YAML and in JSON; the examples are kept in Examples, and marshalling
// writes them back in the long form.
func TestPolicyLongForm(t *testing.T) {
	t.Parallel()
	var p Policy
	dec := yaml.NewDecoder(strings.NewReader(longForm))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		t.Fatal(err)
	}
	wantLongForm(t, p)

	// YAML round trip.
	b, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "rule: Bash(npm run:*)") || !strings.Contains(string(b), "- Bash(git status)") {
		t.Errorf("marshalled YAML:\n%s", b)
	}
	var back Policy
	if err := yaml.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	wantLongForm(t, back)

	// JSON, and its round trip.
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js, []byte(`{"rule":"Bash(npm run:*)","match":["npm run build","npm run test"],"not_match":["npm install"]}`)) {
		t.Errorf("marshalled JSON: %s", js)
	}
	var pj Policy
	if err := json.Unmarshal(js, &pj); err != nil {
		t.Fatal(err)
	}
	wantLongForm(t, pj)
	// JSON read as YAML (the --rules file may be either).
	var py Policy
	if err := yaml.Unmarshal(js, &py); err != nil {
		t.Fatal(err)
	}
	wantLongForm(t, py)

	// Plain policies stay as they were.
	var plain Policy
	if err := yaml.Unmarshal([]byte(`allow: ["Read"]`), &plain); err != nil || !slices.Equal(plain.Allow, []string{"Read"}) || plain.Examples != nil {
		t.Errorf("plain: %+v %v", plain, err)
	}
	if b, _ := json.Marshal(Policy{Allow: []string{"Read"}}); string(b) != `{"allow":["Read"]}` {
		t.Errorf("plain JSON: %s", b)
	}
}

// TestPolicyMarshalChangedLists: examples whose rule has moved since
// reading (a rule prepended to the list) do not replace the rule now at
// their index; every rule is written, in YAML and in JSON.
func TestPolicyMarshalChangedLists(t *testing.T) {
	t.Parallel()
	var p Policy
	if err := json.Unmarshal([]byte(`{"allow":[{"rule":"Bash(npm run:*)","match":["npm run x"]}]}`), &p); err != nil {
		t.Fatal(err)
	}
	p.Allow = append([]string{"Bash(rm:*)"}, p.Allow...)
	want := []string{"Bash(rm:*)", "Bash(npm run:*)"}

	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var pj Policy
	if err := json.Unmarshal(js, &pj); err != nil || !slices.Equal(pj.Allow, want) {
		t.Errorf("JSON %s: allow %q %v, want %q", js, pj.Allow, err, want)
	}
	b, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var py Policy
	if err := yaml.Unmarshal(b, &py); err != nil || !slices.Equal(py.Allow, want) {
		t.Errorf("YAML:\n%s\nallow %q %v, want %q", b, py.Allow, err, want)
	}
}

// TestPolicyFileErrors: unknown keys are refused at any depth (with the
// line in YAML) and in the long form, whose rule is required.
func TestPolicyFileErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ src, want string }{
		{"alow: []", "line 1: field alow not found in type permission.Policy"},
		{"mode: default\nsandbox:\n  netwrk: true", "line 3: field netwrk not found in type permission.Sandbox"},
		{"allow:\n  - {rule: Read, mach: [x]}", `allow rule 1: line 2: unknown key "mach"`},
		{"deny:\n  - Read\n  - {match: [x]}", "deny rule 2: line 3: the long form needs its rule"},
		{"allow:\n  - {rule: Read, match: x}", "allow rule 1: line 2"},
		{"[1, 2]", "a policy is a mapping"},
	} {
		var p Policy
		if err := yaml.Unmarshal([]byte(c.src), &p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
	for _, c := range []struct{ src, want string }{
		{`{"alow":[]}`, `unknown field "alow"`},
		{`{"allow":[{"rule":"Read","mach":["x"]}]}`, `allow rule 1: json: unknown field "mach"`},
		{`{"ask":[{"match":["x"]}]}`, "ask rule 1: the long form needs its rule"},
		{`{"deny":[1]}`, "deny rule 1: a rule is a string or {rule, match, not_match, enforce}"},
	} {
		var p Policy
		if err := json.Unmarshal([]byte(c.src), &p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.src, err, c.want)
		}
	}
}

// TestPolicyDecodeKeepsDefaults: decoding over a policy keeps what the
// document does not set, examples included, as the decoder does for any
// struct (a config file decodes over the defaults).
func TestPolicyDecodeKeepsDefaults(t *testing.T) {
	t.Parallel()
	p := Policy{Mode: ModeAcceptEdits, Allow: []string{"Read(x)"},
		Examples: []RuleExamples{{List: "allow", Index: 1, Rule: "Read(x)", Match: []string{"x"}}}}
	if err := yaml.Unmarshal([]byte("deny: [Write]"), &p); err != nil {
		t.Fatal(err)
	}
	if p.Mode != ModeAcceptEdits || !slices.Equal(p.Allow, []string{"Read(x)"}) || len(p.Examples) != 1 || !slices.Equal(p.Deny, []string{"Write"}) {
		t.Errorf("after decode: %+v", p)
	}
	if err := yaml.Unmarshal([]byte("allow: [Glob]"), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Examples) != 0 {
		t.Errorf("examples of a replaced list kept: %+v", p.Examples)
	}
}
