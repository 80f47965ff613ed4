package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/permission"
)

// TestReadPolicyKeepsExamples: ReadPolicy reads a policy file with its
// examples, failing ones included (the tools check them: `starter policy
// test` reports them one by one, the worker refuses to start).
func TestReadPolicyKeepsExamples(t *testing.T) {
	t.Parallel()
	bad := "allow:\n  - Bash(ls)\n  - rule: Bash(npm run:*)\n    match: [\"npm run build\", \"npm install\"]\n"
	file := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := ReadPolicy(file)
	if err != nil || len(p.Examples) != 1 || len(p.Examples[0].Match) != 2 {
		t.Errorf("ReadPolicy: %+v %v", p, err)
	}
	if c, err := Parse([]byte("permission:\n" + indent(bad))); err != nil || len(c.Permission.Examples) != 1 {
		t.Errorf("config with examples: %v", err)
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
