package main

import (
	"os"
	"path/filepath"
	"strconv"
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

// TestPolicyApplyRefusesImpossibleQuorum: a policy file with a quorum
// rule the config's approvers can never meet is refused before anything
// is sent, naming the rule, the number and who could answer; a file
// whose quorum they can meet only with roles gets a warning and goes on
// (to dial, which fails here: nothing listens on the port).
func TestPolicyApplyRefusesImpossibleQuorum(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	team := "temporal: {address: \"127.0.0.1:1\"}\ninbox:\n  users:\n    alice: {token: a}\n    dev: {token: d, roles: [git]}\n    kube: {token: k, roles: [ops]}\n" +
		"  roles:\n    git: {allow: [\"Bash(git:*)\"]}\n    ops: {allow: [\"Bash(kubectl:*)\"]}\n"
	if err := os.WriteFile(cfg, []byte(team), 0o600); err != nil {
		t.Fatal(err)
	}
	policy := func(n int) string {
		f := filepath.Join(dir, "p.yaml")
		src := "allow: [\"Bash(npm run:*)\"]\nquorum:\n  - {rule: \"Bash(kubectl delete:*)\", approvals: " + strconv.Itoa(n) + "}\n"
		if err := os.WriteFile(f, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	apply := func(n int) (string, error) {
		return execute(t, newPolicyCmd(&conn{config: cfg}), "", "apply", policy(n))
	}
	out, err := apply(4)
	want := `quorum rule "Bash(kubectl delete:*)" needs 4 distinct approvers, but only 3 could ever allow its calls (alice: no roles; operator: no roles; kube: roles cover it); the roles of dev cover none of them`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("apply: %v, want %q\n%s", err, want, out)
	}
	out, err = apply(3)
	if !strings.Contains(out, "warning: policy") || !strings.Contains(out, "a safety check asks about") || err == nil || strings.Contains(err.Error(), "quorum rule") {
		t.Errorf("apply 3: %v\n%s", err, out)
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
