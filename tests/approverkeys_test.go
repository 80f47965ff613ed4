package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestApproverKeyRemembers: an approver's key (keys create --role
// approver), which may read and answer but not start workflows,
// answers a waiting call with "always allow" in the namespace scope on
// the embedded worker: the answer is taken and remembered in the policy
// store the turn's starter made, and a later turn's call the remembered
// rule covers runs without asking. Before, the client started the store
// with ExecuteWorkflow even when it ran, which the approver's key may
// not: "start policy store warden-policy: Request unauthorized".
func TestApproverKeyRemembers(t *testing.T) {
	ctx := ctxT(t, 4*time.Minute)
	wbin, sbin := buildWorker(t), buildStarter(t)
	dir := t.TempDir()
	dataDir, workdir := filepath.Join(dir, "data"), filepath.Join(dir, "work")
	if err := os.MkdirAll(workdir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, fmt.Sprintf("server: {data_dir: %q, port: %d, ui_port: %d}\nworker: {workdir: %q, task_queue: remember}\nmetrics: {addr: \"off\"}\n",
		dataDir, freePort(t), freePort(t), workdir), 0o644)
	proc, _ := startEmbedded(t, wbin, dir, "--config", cfg)
	defer killProcess(t, proc)
	starter := func(args ...string) (string, error) {
		return runStarter(t, sbin, dir, append([]string{"--config", cfg}, args...)...)
	}
	if out, err := starter("keys", "create", "carol", "--role", "approver"); err != nil {
		t.Fatalf("keys create carol: %v\n%s", err, out)
	}
	carol := filepath.Join(dataDir, "auth", "carol.key")
	run := func(id, file string) {
		t.Helper()
		s := filepath.Join(dir, id+".yaml")
		writeFile(t, s, fmt.Sprintf("prompt: remember\nsteps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch %s\"}}]\n  - text: done\n", file), 0o644)
		if out, err := starter("run", "--script", s, "--workflow-id", id, "--detach"); err != nil {
			t.Fatalf("starter run %s: %v\n%s", id, err, out)
		}
	}
	run("remember-1", "remembered-1")
	waitFor(t, ctx, func() bool {
		out, err := starter("--key-file", carol, "approvals", "list", "--workflow", "remember-1")
		return err == nil && strings.Contains(out, "c1")
	})
	out, err := starter("--key-file", carol, "approvals", "approve", "remember-1", "c1", "--always", "--scope", "namespace", "--rule", "Bash(touch remembered-1:*)")
	if err != nil {
		t.Fatalf("carol's always allow (namespace scope) with her approver key: %v\n%s", err, out)
	}
	t.Logf("carol: %s", strings.TrimSpace(out))
	waitFor(t, ctx, func() bool { _, err := os.Stat(filepath.Join(workdir, "remembered-1")); return err == nil })
	list, err := starter("--key-file", carol, "policy", "remembered", "list")
	if err != nil || !strings.Contains(list, "Bash(touch remembered-1:*)") || !strings.Contains(list, "carol") {
		t.Fatalf("the store does not hold carol's remembered approval: %v\n%s", err, list)
	}
	// A later turn's call runs on it, unasked.
	run("remember-2", "remembered-1 remembered-2")
	waitFor(t, ctx, func() bool { _, err := os.Stat(filepath.Join(workdir, "remembered-2")); return err == nil })
	audit, err := starter("audit", "--workflow", "remember-2")
	if err != nil || !strings.Contains(audit, "remembered") {
		t.Errorf("the later call's audit does not name the remembered approval: %v\n%s", err, audit)
	}
}
