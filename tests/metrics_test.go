package tests

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// TestMetricsEndpoint runs a turn on a worker process and scrapes its
// /metrics: warden's metrics (with HELP) and the SDK's own are there.
func TestMetricsEndpoint(t *testing.T) {
	bin := buildWorker(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	queue := "tq-metrics-" + fmt.Sprint(time.Now().UnixNano())
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("middleware:\n  metrics: true\n  logging: {level: error}\n"+contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg, "--temporal-address", env.srv.Addr(), "--namespace", "default",
		"--task-queue", queue, "--metrics-addr", addr, "--workdir", t.TempDir())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()

	ctx := ctxT(t, 60*time.Second)
	cl := startWorkerless(queue)
	s := script(t, "steps:\n  - tool_calls: [{name: Bash, input: {command: \"echo metrics\"}}, {name: Bash, input: {command: \"touch f\"}}]\n"+
		"  - tool_calls: [{id: asked, name: Bash, input: {command: \"git init -q repo\"}}]\n  - text: ok\n")
	id := "metrics-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: permission.Context{Mode: permission.ModeAcceptEdits}}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "asked", Decision: workflows.DecisionAllow, By: "ops", Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`warden_permission_decisions_total{behavior="allow",tool="Bash"} 2`,
		"# HELP warden_tool_call_duration_seconds",
		"# HELP warden_approvals_pending",
		"# HELP warden_approval_wait_seconds",
		"# HELP warden_approval_escalations_total",
		"# HELP warden_model_calls_total",
		`warden_model_calls_total{model="",outcome="success",provider="scripted"} 3`,
		`warden_tool_calls_total{outcome="success",tool="Bash"} 3`,
		// The answered approval, by channel (how: the answer's via, here
		// none, so "answer") and decision.
		`warden_approval_answers_total{decision="allow",how="answer",kind="approval"} 1`,
		"temporal_",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
