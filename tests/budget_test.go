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

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// budgetScript uses 1200 tokens in its first model call, then asks for
// one call and two more.
const budgetScript = `steps:
  - tool_calls: [{name: Bash, input: {command: "touch one"}}]
    usage: {input_tokens: 1000, output_tokens: 200}
  - tool_calls: [{name: Bash, input: {command: "touch two"}}, {name: Bash, input: {command: "touch three"}}]
    usage: {input_tokens: 1100, output_tokens: 100}
  - text: done
`

// TestBudgetParks: a turn with a budget of 1000 tokens and one tool call
// parks on a budget approval once its first model call used 1200 tokens,
// before the tool call it was about to run; the worker is SIGKILLed while
// it waits and another takes over; an allow without a raise is refused;
// a raise lets it go on; the two calls of the next step would pass the
// tool-call bound, so it parks again, and a deny ends the turn with the
// reason, before those calls ran. Control: the same turn without a
// budget runs every call and answers.
func TestBudgetParks(t *testing.T) {
	bin := buildWorker(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("middleware:\n  logging: {level: error}\n"+contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	queue := "tq-budget-" + fmt.Sprint(time.Now().UnixNano())
	ws := t.TempDir()
	startProc := func() *exec.Cmd {
		cmd := exec.Command(bin, "--config", cfg, "--temporal-address", env.srv.Addr(), "--namespace", "default",
			"--task-queue", queue, "--metrics-addr", "", "--workdir", ws)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	ctx := ctxT(t, 120*time.Second)
	cl := startWorkerless(queue)
	first := startProc()

	in := func(b *workflows.Budget) workflows.TurnInput {
		return workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, budgetScript)},
			Permission: permission.Context{Mode: permission.ModeBypass}, Workdir: ws, Budget: b}
	}
	// The control: no budget, every call runs.
	ctl := "budget-control-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, ctl, in(nil)); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, ctl)
	if err != nil || res.Answer != "done" || res.ToolCalls != 3 {
		t.Fatalf("control: %+v, %v", res, err)
	}
	for _, f := range []string{"one", "two", "three"} {
		if err := os.Remove(filepath.Join(ws, f)); err != nil {
			t.Fatalf("control: %v", err)
		}
	}

	b, err := client.ParseBudget("tokens=1000,tool_calls=1", false)
	if err != nil {
		t.Fatal(err)
	}
	id := "budget-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, in(&b)); err != nil {
		t.Fatal(err)
	}
	p := waitPendingCall(t, cl, id, "budget_1")
	t.Logf("parked: %s", p.Message)
	if p.Kind != workflows.PendingBudget || !strings.Contains(p.Message, "budget tokens reached: 1200 of 1000") ||
		!strings.Contains(p.Message, "run 1 tool call(s): Bash") {
		t.Errorf("budget entry %+v", p)
	}
	if _, err := os.Stat(filepath.Join(ws, "one")); err == nil {
		t.Error("the tool call ran past the budget")
	}
	// The worker dies while the turn waits; another takes over.
	_ = syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
	_ = first.Wait()
	second := startProc()
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()

	if _, err := cl.ApproveListed(ctx, id, p, workflows.Approval{CallID: p.CallID, Decision: workflows.DecisionAllow, By: "owner"}); err == nil ||
		!strings.Contains(err.Error(), "must raise the budget") {
		t.Errorf("an allow without a raise: %v", err)
	}
	raise, err := client.ParseBudget("tokens=+10K", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ApproveListed(ctx, id, p, workflows.Approval{CallID: p.CallID, Decision: workflows.DecisionAllow, By: "owner", Raise: &raise}); err != nil {
		t.Fatal(err)
	}
	p2 := waitPendingCall(t, cl, id, "budget_2")
	t.Logf("parked again: %s", p2.Message)
	if !strings.Contains(p2.Message, "budget tool_calls reached: 1 of 1") {
		t.Errorf("second budget entry %+v", p2)
	}
	if _, err := os.Stat(filepath.Join(ws, "one")); err != nil {
		t.Errorf("the raised budget did not let the call run: %v", err)
	}
	if _, err := cl.ApproveListed(ctx, id, p2, workflows.Approval{CallID: p2.CallID, Decision: workflows.DecisionDeny, By: "owner", Reason: "enough for today"}); err != nil {
		t.Fatal(err)
	}
	res, err = cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped %q: %s", res.Stopped, res.StopReason)
	if res.Stopped != "budget" || !strings.Contains(res.StopReason, "enough for today") || !strings.Contains(res.StopReason, "by owner") {
		t.Errorf("result %+v", res)
	}
	for _, f := range []string{"two", "three"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Errorf("%s ran after the budget was denied", f)
		}
	}
}

// waitPendingCall waits until the turn's pending entries include call.
func waitPendingCall(t *testing.T, cl *client.Client, id, call string) workflows.Pending {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ps, err := cl.Pending(t.Context(), id)
		if err == nil {
			for _, p := range ps {
				if p.CallID == call {
					return p
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never waited on %s", id, call)
	return workflows.Pending{}
}
