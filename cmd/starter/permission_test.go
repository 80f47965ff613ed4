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
	return execute(t, newPermissionCmd(&conn{}), stdin, args...)
}

// TestPermissionCheck: the command's flags reach decide.Check and
// decide.CheckJSONL (tested in tools), and their output is printed.
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

// TestPermissionCheckWorkerOwnPaths: the check protects the worker's own
// files as the worker runs with them: the data directory named by
// --worker-data-dir (the worker's --data-dir) and the key file named by
// WARDEN_KEY_FILE are denied even in bypass mode; the same read of a
// file beside them is allowed (the control).
func TestPermissionCheckWorkerOwnPaths(t *testing.T) {
	wd := t.TempDir()
	data, key := filepath.Join(wd, "srv-data"), filepath.Join(wd, "keys", "w.key")
	t.Setenv("WARDEN_KEY_FILE", key)
	cfg := filepath.Join(wd, "cfg.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(p string) string {
		t.Helper()
		out, err := runPerm(t, "", "check", "--tool", "Read", "--input", `{"file_path":"`+p+`"}`, "--workdir", wd,
			"--mode", "bypass", "--worker-config", cfg, "--worker-data-dir", data)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	for _, p := range []string{filepath.Join(data, "auth", "operator.key"), key} {
		if out := check(p); !strings.Contains(out, "Decision:    DENY") {
			t.Errorf("Read %s in bypass: want DENY\n%s", p, out)
		}
	}
	if out := check(filepath.Join(wd, "notes.txt")); !strings.Contains(out, "Decision:    ALLOW") {
		t.Errorf("control: Read of an ordinary file in bypass: want ALLOW\n%s", out)
	}
}

// TestPermissionCheckHosts: the check shows the hosts a call's network
// reaches and what granted them: a network_for rule's hosts (rules
// file), the worker config's tools.Bash.network_hosts, and hosts the
// call asks for that nothing grants, which make it ask and go to the
// approval.
func TestPermissionCheckHosts(t *testing.T) {
	wd := t.TempDir()
	rules := filepath.Join(wd, "rules.yaml")
	if err := os.WriteFile(rules, []byte(`mode: default
allow: ["Bash(npm install:*)"]
sandbox:
  network_for:
    - {rule: "Bash(npm install:*)", hosts: [npm.example.internal, "*.example.org"]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(wd, "cfg.yaml")
	if err := os.WriteFile(cfg, []byte("tools:\n  per_tool:\n    Bash: {network_hosts: [proxy.golang.org]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(wd, "empty.yaml")
	if err := os.WriteFile(empty, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(input, config string) string {
		t.Helper()
		out, err := runPerm(t, "", "check", "--tool", "Bash", "--input", input, "--workdir", wd, "--rules", rules, "--worker-config", config)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	out := check(`{"command":"npm install left-pad"}`, empty)
	if !strings.Contains(out, "Decision:    ALLOW") || !strings.Contains(out, ", network to npm.example.internal, *.example.org (sandbox.network_for rule Bash(npm install:*))") {
		t.Errorf("rule's hosts:\n%s", out)
	}
	out = check(`{"command":"go mod download"}`, cfg)
	if !strings.Contains(out, ", network to proxy.golang.org (tools.Bash.network_hosts)") {
		t.Errorf("tool's hosts:\n%s", out)
	}
	// Control: without the config's hosts, no network.
	if out := check(`{"command":"go mod download"}`, empty); !strings.Contains(out, "network off") {
		t.Errorf("control:\n%s", out)
	}
	out = check(`{"command":"npm install left-pad","network_hosts":["registry.npmjs.org"]}`, empty)
	if !strings.Contains(out, "Decision:    ASK") || !strings.Contains(out, "Decided by:  Safety check: network hosts no rule grants: registry.npmjs.org") ||
		!strings.Contains(out, "network to npm.example.internal, *.example.org, registry.npmjs.org (sandbox.network_for rule Bash(npm install:*); network_hosts approved by a person: registry.npmjs.org)") {
		t.Errorf("asked hosts:\n%s", out)
	}
}

// TestPermissionCheckMethodsPaths: a network_for rule with methods and
// paths shows them with the verdict's sandbox.
func TestPermissionCheckMethodsPaths(t *testing.T) {
	wd := t.TempDir()
	rules := filepath.Join(wd, "rules.yaml")
	if err := os.WriteFile(rules, []byte(`mode: default
allow: ["Bash(gh api:*)"]
sandbox:
  network_for:
    - {rule: "Bash(gh api:*)", hosts: [api.github.com], methods: [GET, HEAD], paths: ["/repos/**"]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(wd, "empty.yaml")
	if err := os.WriteFile(empty, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runPerm(t, "", "check", "--tool", "Bash", "--input", `{"command":"gh api repos/o/r"}`, "--workdir", wd, "--rules", rules, "--worker-config", empty)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "network to api.github.com (sandbox.network_for rule Bash(gh api:*)), requests to api.github.com held to methods GET, HEAD; paths /repos/**") {
		t.Errorf("methods and paths:\n%s", out)
	}
}
