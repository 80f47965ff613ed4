package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/workflows"
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

func TestWritePolicyState(t *testing.T) {
	at := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	st := workflows.PolicyState{Version: 6, Rules: &workflows.LiveRules{Allow: []string{"Bash(npm run:*)"}, Deny: []string{"Bash(curl:*)"}},
		SetBy: "ops", SetAt: at, Remembered: []workflows.Remembered{{ID: "r1"}, {ID: "r2", RevokedAt: at}}}
	var b strings.Builder
	if err := writePolicyState(&b, "warden-policy", st, at); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"policy store warden-policy: version 6 (counts every change", "set by ops at " + at.Local().Format("2006-01-02 15:04:05 MST"),
		"  allow:\n    - \"Bash(npm run:*)\"\n", "  ask: []\n", "  deny:\n    - \"Bash(curl:*)\"\n", "remembered approvals: 1 active, 2 in all"} {
		if !strings.Contains(out, want) {
			t.Errorf("policy show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "{") {
		t.Errorf("policy show prints JSON:\n%s", out)
	}
	// Control: a store with no rules says so.
	b.Reset()
	_ = writePolicyState(&b, "s", workflows.PolicyState{}, at)
	if !strings.Contains(b.String(), "version 0") || !strings.Contains(b.String(), "none set") {
		t.Errorf("empty store:\n%s", b.String())
	}
}
