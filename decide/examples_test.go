package decide

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden/permission"
)

func examplesPolicy(list, rule string, match, notMatch []string) permission.Policy {
	p := permission.Policy{Examples: []permission.RuleExamples{{List: list, Index: 1, Rule: rule, Match: match, NotMatch: notMatch}}}
	switch list {
	case permission.ListAllow:
		p.Allow = []string{rule}
	case permission.ListAsk:
		p.Ask = []string{rule}
	case permission.ListDeny:
		p.Deny = []string{rule}
	case permission.ListDangerousCommands:
		p.DangerousCommands = []string{rule}
	}
	return p
}

// TestExamplesMatchLikeTheEngine: examples are matched the way the engine
// matches the rule in its list. A Bash allow rule must cover every
// command of a compound command, a deny rule any command (behind a
// wrapper too); path rules take paths (relative to the workdir) and
// other tools JSON input; a rule of an unknown tool matches by name.
func TestExamplesMatchLikeTheEngine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := ExampleOptions{Workdir: "/w/proj", Home: "/home/u"}
	cases := []struct {
		list, rule     string
		match, notMach []string
	}{
		{"allow", "Bash(npm run:*)", []string{"npm run build", "npm run test -- -v", "npm run build && git status"},
			[]string{"npm install", "npm runx", "npm run build && curl x | sh", "npm run $(x)"}},
		{"deny", "Bash(rm:*)", []string{"rm x", "sudo rm -rf /", "timeout 5 rm x", "bash -c 'rm x'", "ls && rm x"}, []string{"echo rm", "rmdir x"}},
		{"ask", "Bash(git push:*)", []string{"git push", "git push origin main"}, []string{"git pull"}},
		{"allow", "Edit(src/**)", []string{"src/a.go", "/w/proj/src/b/c.go"}, []string{"srcx/a.go", "/etc/passwd", "../proj2/src/a.go"}},
		{"deny", "Read(/etc/**)", []string{"/etc/shadow", "/etc/ssh/sshd_config"}, []string{"/w/proj/etc/x", "etc/x"}},
		{"allow", "Write(*.md)", []string{"README.md"}, []string{"src/README.md"}},
		{"allow", "Grep(src/**)", []string{"src/pkg"}, []string{"."}},
		{"allow", "Read", []string{"/anything"}, nil},
		{"allow", "mcp__gh__create_issue", []string{`{"title":"x"}`}, nil},
		{"dangerous_commands", "terraform destroy:*", []string{"terraform destroy", "cd infra && terraform destroy -auto-approve"}, []string{"terraform plan"}},
	}
	for _, c := range cases {
		p := examplesPolicy(c.list, c.rule, c.match, c.notMach)
		rs, err := TestExamples(ctx, p, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != len(c.match)+len(c.notMach) {
			t.Fatalf("%s: %d results", c.rule, len(rs))
		}
		for _, r := range rs {
			if !r.OK() {
				t.Errorf("%s %s: %s", c.list, c.rule, r)
			}
		}
		// The same examples the other way round fail, each of them.
		swapped := examplesPolicy(c.list, c.rule, c.notMach, c.match)
		err = CheckExamples(ctx, swapped, o)
		var ee *ExampleError
		if c.rule == "Read" || c.rule == "mcp__gh__create_issue" {
			if !errors.As(err, &ee) || len(ee.Failed) != len(c.match) {
				t.Errorf("%s swapped: %v", c.rule, err)
			}
			continue
		}
		if !errors.As(err, &ee) || len(ee.Failed) != len(c.match)+len(c.notMach) {
			t.Errorf("%s swapped: %v", c.rule, err)
		}
	}
}

// TestExampleErrors: a failing example is an *ExampleError that names
// the list, the rule's position, the rule and the example; an example
// that is not a call of its tool is an error too.
func TestExampleErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := permission.Policy{
		Allow: []string{"Bash(git status)", "Bash(npm run:*)", "TaskCreate(x)"},
		Examples: []permission.RuleExamples{
			{List: "allow", Index: 2, Rule: "Bash(npm run:*)", Match: []string{"npm run build", "npm install"}, NotMatch: []string{"npm run lint"}},
			{List: "allow", Index: 3, Rule: "TaskCreate(x)", Match: []string{"not json"}},
		},
	}
	err := CheckExamples(ctx, p, ExampleOptions{Workdir: "/w"})
	var ee *ExampleError
	if !errors.As(err, &ee) || len(ee.Failed) != 3 {
		t.Fatalf("error %v", err)
	}
	for _, want := range []string{
		`allow rule 2 Bash(npm run:*): match example "npm install" does not match`,
		`allow rule 2 Bash(npm run:*): not_match example "npm run lint" matches`,
		`allow rule 3 TaskCreate(x): match example "not json": an example of TaskCreate is its JSON input`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if err := CheckExamples(ctx, permission.Policy{Allow: []string{"Bash(ls)"}}, ExampleOptions{}); err != nil {
		t.Errorf("no examples: %v", err)
	}
	if _, err := TestExamples(ctx, permission.Policy{Allow: []string{"Bash(ls"}}, ExampleOptions{}); err == nil {
		t.Error("a policy that does not parse was tested")
	}
}
