package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// TestFailingExampleRefusesToLoad: a config or a policy file whose rule
// examples fail does not load, and the error names the rule and the
// example; ReadPolicy (for `starter policy test`) still reads it.
func TestFailingExampleRefusesToLoad(t *testing.T) {
	t.Parallel()
	bad := "allow:\n  - Bash(ls)\n  - rule: Bash(npm run:*)\n    match: [\"npm run build\", \"npm install\"]\n"
	_, err := Parse([]byte("permission:\n" + indent(bad)))
	var ee *tools.ExampleError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), `permission: 1 rule example(s) fail: allow rule 2 Bash(npm run:*): match example "npm install" does not match`) {
		t.Errorf("config: %v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPolicy(file); !errors.As(err, &ee) || !strings.Contains(err.Error(), `"npm install"`) || !strings.Contains(err.Error(), file) {
		t.Errorf("policy file: %v", err)
	}
	p, err := ReadPolicy(file)
	if err != nil || len(p.Examples) != 1 {
		t.Errorf("ReadPolicy: %+v %v", p, err)
	}
	good := strings.Replace(bad, `, "npm install"]`, `]`+"\n    not_match: [\"npm install\"]", 1)
	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := LoadPolicy(file); err != nil || len(p.Examples) != 1 || len(p.Examples[0].NotMatch) != 1 {
		t.Errorf("passing examples: %+v %v", p, err)
	}
	// Path examples resolve against worker.workdir in a config.
	c, err := Parse([]byte("worker: {workdir: /srv/app}\npermission:\n  allow:\n    - {rule: \"Edit(/srv/app/src/**)\", match: [src/main.go]}\n"))
	if err != nil || len(c.Permission.Examples) != 1 {
		t.Errorf("workdir-relative example: %v", err)
	}
}

// TestShippedConfigHasExamples: the shipped temporal-dev.yaml carries
// examples for each of its own rules, and ReadPolicy reads a config
// file's permission section.
func TestShippedConfigHasExamples(t *testing.T) {
	t.Parallel()
	c, err := Load("../temporal-dev.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := c.Permission
	have := map[string]bool{}
	for _, ex := range p.Examples {
		if len(ex.Match) == 0 || len(ex.NotMatch) == 0 {
			t.Errorf("%s rule %d %s: want both match and not_match examples", ex.List, ex.Index, ex.Rule)
		}
		have[ex.List+"\x00"+ex.Rule] = true
	}
	for list, rules := range map[string][]string{permission.ListAllow: p.Allow, permission.ListAsk: p.Ask, permission.ListDeny: p.Deny} {
		for _, r := range rules {
			if !have[list+"\x00"+r] {
				t.Errorf("%s rule %s has no examples", list, r)
			}
		}
	}
	if len(p.Allow)+len(p.Deny) == 0 {
		t.Error("the shipped config has no rules")
	}
	rp, err := ReadPolicy("../temporal-dev.yaml")
	if err != nil || len(rp.Examples) != len(p.Examples) {
		t.Errorf("ReadPolicy of the config: %d examples, %v", len(rp.Examples), err)
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}
