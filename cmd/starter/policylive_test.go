package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestLivePolicyCmds(t *testing.T) {
	p := &cobra.Command{Use: "policy"}
	addLivePolicyCmds(p, &conn{})
	for _, path := range [][]string{{"apply"}, {"show"}, {"remembered", "list"}, {"remembered", "revoke"}} {
		if c, _, err := p.Find(path); err != nil || c == p {
			t.Errorf("policy %v: %v", path, err)
		}
	}
}

// TestPolicyApplyChecksTheFile: a file whose rules' examples fail is
// refused before anything is sent (the command has no connection here).
func TestPolicyApplyChecksTheFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(f, []byte("allow:\n  - {rule: \"Bash(npm run:*)\", match: [\"npm install\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runPolicy(t, "apply", f); err == nil || !strings.Contains(err.Error(), "npm install") {
		t.Fatalf("apply: %v\n%s", err, out)
	}
}
