package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// TestWindowLimitConcurrent: a window limit of the agent scope (3 calls
// of Bash(touch:*) per hour) holds across two concurrent turns of one
// agent and a worker SIGKILL. Each turn makes 4 such calls under a rule
// that allows them; together they start exactly 3 before both wait on a
// window approval (layer window, naming the limit). The worker is
// SIGKILLed while they wait and another takes over; one approval runs
// its call past the bound (4 files), every other call is denied. The
// files on disk and the agent's budget store both count 4: never more
// than the bound without a person's allow. Control: the same two turns
// without the limit make all 8 calls.
func TestWindowLimitConcurrent(t *testing.T) {
	bin := buildWorker(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("middleware:\n  logging: {level: error}\n"+contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	queue := "tq-window-" + tag()
	startProc := func() *exec.Cmd {
		cmd := exec.Command(bin, "--config", cfg, "--temporal-address", env.srv.Addr(), "--namespace", "default",
			"--task-queue", queue, "--metrics-addr", "", "--workdir", dir)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	ctx := ctxT(t, 4*time.Minute)
	cl := startWorkerless(queue)
	first := startProc()
	killed := false
	defer func() {
		if !killed {
			_ = first.Process.Signal(syscall.SIGTERM)
			_ = first.Wait()
		}
	}()
	agent := "window-" + tag()
	turn := func(label string, limited bool) (string, string) {
		out := filepath.Join(dir, label)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		s := &model.Script{}
		for i := range 4 {
			s.Steps = append(s.Steps, model.Step{ToolCalls: []model.ScriptedCall{{Name: "Bash",
				Input: map[string]any{"command": fmt.Sprintf("touch %s/%s-%d", out, label, i+1)}}}})
		}
		s.Steps = append(s.Steps, model.Step{Text: "done"})
		p := permission.Policy{Allow: []string{"Bash(touch:*)"}}
		if limited {
			p.Limits = []permission.WindowLimit{{Rule: "Bash(touch:*)", Max: 3, Per: time.Hour, Scope: permission.ScopeAgent}}
		}
		id := "window-" + label + "-" + tag()
		if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
			Permission: policy(t, p), Workdir: dir, Agent: agent, ApprovalTimeout: 10 * time.Minute}); err != nil {
			t.Fatal(err)
		}
		return id, out
	}
	files := func(dirs ...string) int {
		n := 0
		for _, d := range dirs {
			es, _ := os.ReadDir(d)
			n += len(es)
		}
		return n
	}

	// Control: no limit, all 8 calls run.
	c1, cd1 := turn("ctl-a", false)
	c2, cd2 := turn("ctl-b", false)
	for _, id := range []string{c1, c2} {
		if _, err := cl.Result(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := files(cd1, cd2); n != 8 {
		t.Fatalf("control: %d files, want 8", n)
	}

	a, da := turn("a", true)
	b, db := turn("b", true)
	var pa, pb workflows.Pending
	waitFor(t, ctx, func() bool {
		psa, err1 := cl.Pending(ctx, a)
		psb, err2 := cl.Pending(ctx, b)
		if err1 != nil || err2 != nil || len(psa) != 1 || len(psb) != 1 {
			return false
		}
		pa, pb = psa[0], psb[0]
		return true
	})
	for _, p := range []workflows.Pending{pa, pb} {
		if !strings.Contains(p.Reason, "Window: Bash(touch:*) reached its bound of 3 calls per 1h0m0s (agent scope") {
			t.Errorf("pending %s: reason %q", p.CallID, p.Reason)
		}
	}
	if n := files(da, db); n != 3 {
		t.Fatalf("%d calls ran before both turns waited, want exactly 3 (the bound)", n)
	}
	t.Logf("both turns wait: %s at %s, %s at %s; 3 files", a, pa.CallID, b, pb.CallID)

	// The worker dies while both wait; another takes over.
	_ = syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
	_ = first.Wait()
	killed = true
	second := startProc()
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()

	if _, err := cl.Approve(ctx, a, workflows.Approval{CallID: pa.CallID, Decision: workflows.DecisionAllow, Hash: pa.Hash, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	// Every later call waits on the bound again: deny each.
	for _, id := range []string{a, b} {
		done := make(chan error, 1)
		go func() { _, err := cl.Result(ctx, id); done <- err }()
	answer:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				break answer
			case <-time.After(200 * time.Millisecond):
			}
			ps, err := cl.Pending(ctx, id)
			if err != nil {
				continue
			}
			for _, p := range ps {
				if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: p.CallID, Decision: workflows.DecisionDeny, Hash: p.Hash, By: "ops",
					Reason: "window reached"}); err != nil && !strings.Contains(err.Error(), "not waiting") {
					t.Logf("deny %s: %v", p.CallID, err)
				}
			}
		}
	}
	if n := files(da, db); n != 4 {
		t.Errorf("%d files, want 4: the bound of 3 and the one call a person allowed past it", n)
	}
	st, err := cl.AgentBudget(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Windows) != 4 {
		t.Errorf("the agent's store counts %d calls in the window, want 4: %+v", len(st.Windows), st.Windows)
	}
}
