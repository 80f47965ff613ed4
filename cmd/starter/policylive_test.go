package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	// A live policy whose examples fail is refused, as the worker refuses it.
	if err := os.WriteFile(f, []byte("allow:\n  - {rule: \"Bash(npm run:*)\", match: [\"npm install\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readLiveRules(f); err == nil || !strings.Contains(err.Error(), "npm install") {
		t.Fatalf("failing example: %v", err)
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
