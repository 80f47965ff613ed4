package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// execute runs cmd with args and stdin, and returns what it printed
// (stdout and stderr together).
func execute(t *testing.T, cmd *cobra.Command, stdin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func runPerm(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	return execute(t, newPermissionCmd(), stdin, args...)
}

// TestPermissionCheck: the command's flags reach tools.Check and
// tools.CheckJSONL (tested in tools), and their output is printed.
func TestPermissionCheck(t *testing.T) {
	wd := t.TempDir()
	out, err := runPerm(t, "", "check", "--tool", "Bash", "--input", `{"command":"rm -rf /"}`, "--workdir", wd)
	if err != nil || !strings.Contains(out, "Decision:    ASK\nDecided by:  Safety check: dangerous command pattern") {
		t.Errorf("human: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Sandbox:") {
		// A dangerous pattern asks; the profile is shown with it.
		t.Errorf("no sandbox line:\n%s", out)
	}
	out, err = runPerm(t, "", "check", "--tool", "Bash", "--input", `{"command":"make"}`, "--workdir", wd)
	if err != nil || !strings.Contains(out, "Sandbox:     write "+wd+" (read-only: "+wd+"/.git/hooks, "+wd+"/.git/config), network off") {
		t.Errorf("sandbox line: %v\n%s", err, out)
	}
	out, err = runPerm(t, "", "check", "--tool", "Bash", "--input", `{"command":"ls"}`, "--workdir", wd)
	if err != nil || !strings.Contains(out, "Sandbox:     read-only, network off") {
		t.Errorf("read-only sandbox line: %v\n%s", err, out)
	}
	rules := filepath.Join(wd, "rules.yaml")
	if err := os.WriteFile(rules, []byte("mode: default\nallow: [\"Bash(npm run:*)\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runPerm(t, "", "check", "--tool", "Bash", "--input", `{"command":"npm run build"}`, "--workdir", wd, "--rules", rules)
	if err != nil || !strings.Contains(out, "Decision:    ALLOW") || !strings.Contains(out, "Rule: Bash(npm run:*)") {
		t.Errorf("rules file: %v\n%s", err, out)
	}
	out, err = runPerm(t, `{"tool":"Bash","input":{"command":"git commit -m x"}}`+"\n", "check", "--jsonl", "--mode", "bypass", "--workdir", wd)
	if err != nil || !strings.Contains(out, `"behavior":"allow"`) || !strings.Contains(out, `"mode":"bypass"`) {
		t.Errorf("jsonl: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"check", "--tool", "Bash"},
		{"check", "--tool", "Bash", "--input", `{"command":"ls"}`, "--mode", "yolo"},
		{"check", "--jsonl", "--tool", "Bash"},
		{"check", "--tool", "Bash", "--input", `{"command":"ls"}`, "--rules", filepath.Join(wd, "missing.yaml")},
	} {
		if _, err := runPerm(t, "", args...); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
