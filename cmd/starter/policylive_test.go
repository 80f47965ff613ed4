package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

func TestReadLiveRules(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(f, []byte("permission:\n  allow:\n    - Bash(npm test:*)\n    - {rule: \"Bash(npm run:*)\", match: [\"npm run build\"]}\n  deny: [\"Bash(curl:*)\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := readLiveRules(f)
	if err != nil || !slices.Equal(r.Allow, []string{"Bash(npm test:*)", "Bash(npm run:*)"}) || !slices.Equal(r.Deny, []string{"Bash(curl:*)"}) {
		t.Fatalf("rules = %+v %v", r, err)
	}
	if err := os.WriteFile(f, []byte("allow: [\"Bash(\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readLiveRules(f); err == nil {
		t.Fatal("a bad rule was read")
	}
}

func TestLivePolicyCmds(t *testing.T) {
	p := &cobra.Command{Use: "policy"}
	addLivePolicyCmds(p, &conn{})
	for _, path := range [][]string{{"apply"}, {"show"}, {"remembered", "list"}, {"remembered", "revoke"}} {
		if c, _, err := p.Find(path); err != nil || c == p {
			t.Errorf("policy %v: %v", path, err)
		}
	}
}
