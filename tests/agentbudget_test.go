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
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// agentScript makes six model calls of 1000 input tokens each (cost 1
// at the test's price of 1000 per million), five of them asking for a
// tool call.
const agentScript = `steps:
  - tool_calls: [{name: Bash, input: {command: "true"}}]
    usage: {input_tokens: 1000}
  - tool_calls: [{name: Bash, input: {command: "true"}}]
    usage: {input_tokens: 1000}
  - tool_calls: [{name: Bash, input: {command: "true"}}]
    usage: {input_tokens: 1000}
  - tool_calls: [{name: Bash, input: {command: "true"}}]
    usage: {input_tokens: 1000}
  - tool_calls: [{name: Bash, input: {command: "true"}}]
    usage: {input_tokens: 1000}
  - text: done
    usage: {input_tokens: 1000}
`

// TestAgentBudgetConcurrent: an agent with a daily cost budget of 3 runs
// two turns at once, each of which would spend 6. Together they never
// pass the bound by more than one step (a model call, cost 1) each: both
// park on an agent budget approval, with the store's spend between 3 and
// 5. The worker is SIGKILLed while they wait and another takes over. `starter
// budget list` and `show` report the spend; one turn's approval raises the
// agent's daily bound by 10 and it runs to its answer; the other is
// denied and ends with the reason. The store's spend is then exactly the
// two turns' cost. Control: a turn of an agent without a budget runs to
// its answer, and `starter budget set … none` clears a bound. An agent
// budget declared in the worker config is in its store once the worker
// runs.
func TestAgentBudgetConcurrent(t *testing.T) {
	bin, sbin := buildWorker(t), buildStarter(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	cfgAgent := "cfg-" + tag()
	conf := "middleware:\n  logging: {level: error}\nprices:\n  scripted: {input: 1000, output: 1000}\n" + contentConfig() +
		"budgets:\n  agents:\n    " + cfgAgent + ": {total: \"tool_calls=7\"}\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	queue := "tq-agent-budget-" + tag()
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
	starter := func(args ...string) string {
		t.Helper()
		out, err := runStarter(t, sbin, dir, append([]string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default", "--task-queue", queue}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ctx := ctxT(t, 180*time.Second)
	cl := startWorkerless(queue)
	first := startProc()
	agent, free := "ops-"+tag(), "free-"+tag()
	in := func(agent string) workflows.TurnInput {
		return workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, agentScript)},
			Permission: permission.Context{Mode: permission.ModeBypass}, Workdir: dir, Agent: agent}
	}

	// The worker applies the config's agent budget when it starts.
	waitFor(t, ctx, func() bool { _, err := cl.AgentBudget(ctx, cfgAgent); return err == nil })
	if out := starter("budget", "show", cfgAgent); !strings.Contains(out, "total: bound tool_calls 7") || !strings.Contains(out, "set by config") {
		t.Errorf("budget show of the config's agent:\n%s", out)
	}
	// The control: no budget for this agent, the turn runs to its answer.
	ctl := "agent-budget-control-" + tag()
	if _, err := cl.Start(ctx, ctl, in(free)); err != nil {
		t.Fatal(err)
	}
	if res, err := cl.Result(ctx, ctl); err != nil || res.Answer != "done" || res.Usage.CostOr0() != 6 {
		t.Fatalf("control: %+v, %v", res, err)
	}

	if out := starter("budget", "set", agent, "daily", "cost=3"); !strings.Contains(out, "bound cost 3") {
		t.Fatalf("budget set:\n%s", out)
	}
	a, b := "agent-budget-a-"+tag(), "agent-budget-b-"+tag()
	for _, id := range []string{a, b} {
		if _, err := cl.Start(ctx, id, in(agent)); err != nil {
			t.Fatal(err)
		}
	}
	pa, pb := waitPendingCall(t, cl, a, "budget_1"), waitPendingCall(t, cl, b, "budget_1")
	t.Logf("parked: %s", pa.Message)
	for _, p := range []workflows.Pending{pa, pb} {
		if p.Kind != workflows.PendingBudget || !strings.Contains(p.Message, "budget agent "+agent+" daily cost reached") {
			t.Errorf("entry %+v", p)
		}
	}
	st, err := cl.AgentBudget(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.Today.Usage.CostOr0(); c < 3 || c > 3+2 {
		t.Errorf("the two turns spent %g of a daily bound of 3 (at most one step, cost 1, past it each)", c)
	}
	t.Logf("spent together when both parked: %g", st.Today.Usage.CostOr0())

	// The worker dies while both wait; another takes over.
	_ = syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
	_ = first.Wait()
	second := startProc()
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()

	if out := starter("budget", "list"); !strings.Contains(out, agent) || !strings.Contains(out, "cost 3") {
		t.Errorf("budget list:\n%s", out)
	}
	if out := starter("budget", "show", agent); !strings.Contains(out, "bound cost 3") || !strings.Contains(out, fmt.Sprintf("cost %s", model.FormatCost(st.Today.Usage.CostOr0()))) {
		t.Errorf("budget show:\n%s", out)
	}
	raise, err := client.ParseBudget("cost=+10", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ApproveListed(ctx, a, pa, workflows.Approval{Decision: workflows.DecisionAllow, By: "owner", Raise: &raise}); err != nil {
		t.Fatal(err)
	}
	resA, err := cl.Result(ctx, a)
	if err != nil || resA.Answer != "done" {
		t.Fatalf("raised turn: %+v, %v", resA, err)
	}
	if _, err := cl.ApproveListed(ctx, b, pb, workflows.Approval{Decision: workflows.DecisionDeny, By: "owner", Reason: "enough for today"}); err != nil {
		t.Fatal(err)
	}
	resB, err := cl.Result(ctx, b)
	if err != nil || resB.Stopped != "budget" || !strings.Contains(resB.StopReason, "enough for today") || !strings.Contains(resB.StopReason, "agent "+agent+" daily cost") {
		t.Fatalf("denied turn: %+v, %v", resB, err)
	}
	t.Logf("denied: %s", resB.StopReason)
	st, err = cl.AgentBudget(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Today.Usage.CostOr0(), resA.Usage.CostOr0()+resB.Usage.CostOr0(); got != want || st.DailyBound().Cost != 13 {
		t.Errorf("store spent %g (the turns %g), today's bound %+v", got, want, st.DailyBound())
	}
	if out := starter("budget", "set", agent, "daily", "none"); !strings.Contains(out, "daily "+st.Day+" UTC: bound none") {
		t.Errorf("budget set none:\n%s", out)
	}
}
