package tests

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/activities"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/chat"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

var update = flag.Bool("update", false, "re-record tests/testdata histories")

func script(t testing.TB, yaml string) *model.Script {
	t.Helper()
	s, err := model.ParseScript([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func policy(t *testing.T, p permission.Policy) permission.Context {
	t.Helper()
	pc, err := p.Context()
	if err != nil {
		t.Fatal(err)
	}
	return pc
}

func toolResults(res workflows.TurnResult) []model.Message {
	var out []model.Message
	for _, m := range conversation(res) {
		if m.Role == model.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// history returns the events of a workflow's run.
func history(t *testing.T, id string) []*historypb.HistoryEvent {
	t.Helper()
	var evs []*historypb.HistoryEvent
	it := env.c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	return evs
}

func TestScriptedTurnRunsBashTwice(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, `
prompt: say hello twice
steps:
  - text: first
    tool_calls:
      - {name: Bash, input: {command: "echo hello-one"}}
  - tool_calls:
      - {name: Bash, input: {command: "echo hello-two"}}
  - text: said hello twice
`)
	id := "bash-twice-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Prompt: s.Prompt, Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: policy(t, permission.Policy{Allow: []string{"Bash(echo:*)"}})}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "said hello twice" || res.Iterations != 3 || res.ToolCalls != 2 {
		t.Fatalf("result = %+v", res)
	}
	rs := toolResults(res)
	if len(rs) != 2 || strings.TrimSpace(rs[0].Content) != "hello-one" || strings.TrimSpace(rs[1].Content) != "hello-two" || rs[0].IsError {
		t.Fatalf("tool results = %+v", rs)
	}
	// Each Bash call was its own activity in history: read-only echo takes
	// the fast path, so it is a local activity whose result is recorded.
	regular, local := toolExecutions(t, history(t, id))
	if regular != 0 || local != 2 {
		t.Errorf("tool executions in history: %d regular, %d local; want 0 and 2", regular, local)
	}
}

// flaky fails with an infrastructure error until its third attempt.
type flaky struct{}

func (flaky) Info() tools.Info {
	return tools.Info{Name: "Flaky", Description: "fails twice",
		InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (flaky) Call(ctx context.Context, _ *tools.Env, _ json.RawMessage) tools.Stream {
	n := activity.GetInfo(ctx).Attempt
	if n < 3 {
		return tools.Fail(fmt.Errorf("transient failure on attempt %d", n))
	}
	return tools.Single(tools.Chunk{Text: fmt.Sprintf("succeeded on attempt %d", n)})
}

// toolExecutions counts tool calls recorded in history as regular
// activities and as local activities (markers).
func toolExecutions(t *testing.T, evs []*historypb.HistoryEvent) (regular, local int) {
	t.Helper()
	for _, e := range evs {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == workflows.ActivityTool {
			regular++
		}
		if m := e.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "LocalActivity" {
			var d struct{ ActivityType string }
			if err := json.Unmarshal(m.GetDetails()["data"].GetPayloads()[0].GetData(), &d); err != nil {
				t.Fatal(err)
			}
			if d.ActivityType == workflows.ActivityTool {
				local++
			}
		}
	}
	return regular, local
}

// TestToolRetriesThroughRetryPolicy configures retries for a
// side-effecting tool (which otherwise runs at most once): the setting
// becomes the activity's RetryPolicy, and the third attempt succeeds.
func TestToolRetriesThroughRetryPolicy(t *testing.T) {
	cl := startWorker(t, warden.Options{Tools: []tools.Tool{flaky{}},
		ToolSettings: map[string]config.ToolSettings{"Flaky": {Retry: config.Retry{MaxAttempts: 3, InitialInterval: 100 * time.Millisecond}}}})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{name: Flaky}]\n  - text: done\n")
	id := "flaky-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != 1 || rs[0].Content != "succeeded on attempt 3" {
		t.Fatalf("tool results = %+v", rs)
	}
	var attempt int32
	for _, e := range history(t, id) {
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			attempt = max(attempt, a.GetAttempt())
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == workflows.ActivityTool {
			if got := a.GetRetryPolicy().GetMaximumAttempts(); got != 3 {
				t.Errorf("retry policy maximum attempts = %d, want 3", got)
			}
		}
	}
	if attempt != 3 {
		t.Errorf("history shows attempt %d, want 3", attempt)
	}
}

// killMidTurn runs a turn on a worker process, SIGKILLs the process while
// the second (slow, side-effecting) call runs, starts a new worker and
// waits for the turn. It returns the result, the side-effect log and the
// audit's execution records of the slow call ("decision: reason").
func killMidTurn(t *testing.T, configYAML string) (workflows.TurnResult, string, []string) {
	bin := buildWorker(t)
	queue := "tq-kill-" + fmt.Sprint(time.Now().UnixNano())
	workdir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(configYAML+contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	startProc := func() *exec.Cmd {
		cmd := exec.Command(bin, "--config", cfg, "--temporal-address", env.srv.Addr(), "--namespace", "default",
			"--task-queue", queue, "--metrics-addr", "off", "--workdir", workdir)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	proc := startProc()
	defer func() { _ = syscall.Kill(-proc.Process.Pid, syscall.SIGKILL); _ = proc.Wait() }()

	ctx := ctxT(t, 120*time.Second)
	cl := startWorkerless(queue)
	s := script(t, `
steps:
  - tool_calls: [{name: Bash, input: {command: "echo one >> log.txt"}}]
  - tool_calls: [{name: Bash, input: {command: "sleep 3; echo two >> log.txt"}}]
  - text: finished after the crash
`)
	id := "kill-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
		t.Fatal(err)
	}
	// Wait until the worker has taken the second (slow) call's activity
	// task, then SIGKILL it: the attempt has started (the tool_call event
	// is emitted before the activity is even scheduled).
	var slow string
	waitFor(t, ctx, func() bool {
		page, err := cl.Events(ctx, id, 0)
		if err != nil {
			return false
		}
		for _, e := range page.Events {
			if e.Type == workflows.EventToolCall && strings.Contains(e.Input, "sleep 3") {
				slow = e.CallID
				return true
			}
		}
		return false
	})
	waitFor(t, ctx, func() bool { return toolAttemptStarted(ctx, id, slow) })
	if err := syscall.Kill(proc.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	killed := time.Now()
	proc = startProc()

	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kill to turn completed: %s", time.Since(killed).Round(time.Millisecond))
	if res.Answer != "finished after the crash" {
		t.Fatalf("answer = %q", res.Answer)
	}
	time.Sleep(3 * time.Second) // a surviving orphan would have written by now
	data, err := os.ReadFile(filepath.Join(workdir, "log.txt"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := audit.Workflow(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	var execs []string
	for _, r := range recs {
		if r.CallID == slow && r.Kind == audit.KindExecution {
			execs = append(execs, r.Decision+": "+r.Reason)
		}
	}
	t.Logf("the killed call's execution records: %q", execs)
	return res, string(data), execs
}

// toolAttemptStarted reports whether the tool activity of a call is
// pending in the started state: a worker took its task.
func toolAttemptStarted(ctx context.Context, id, callID string) bool {
	d, err := env.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return false
	}
	for _, a := range d.GetPendingActivities() {
		if a.GetActivityId() == "tool-"+callID && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
			return true
		}
	}
	return false
}

// TestWorkerKilledMidTurnAtMostOnce: a side-effecting call interrupted by
// a worker crash is not run again (at-most-once by default); the turn goes
// on and the model is told the call failed; the audit says it was cut off
// mid-run.
func TestWorkerKilledMidTurnAtMostOnce(t *testing.T) {
	res, log, execs := killMidTurn(t, "")
	if log != "one\n" {
		t.Errorf("log.txt = %q, want only the first call's effect", log)
	}
	// The audit says the call was cut off mid-run (it said ran, then
	// timed_out as if the call had run too long).
	if len(execs) != 2 || execs[0] != "ran: " || !strings.HasPrefix(execs[1], "cut_off: cut off while it ran") {
		t.Errorf("the killed call's execution records %q, want ran then cut_off", execs)
	}
	rs := toolResults(res)
	if len(rs) != 2 || rs[0].IsError || !rs[1].IsError || !strings.Contains(rs[1].Content, "not retried") {
		t.Errorf("tool results = %+v", rs)
	}
}

// TestWorkerKilledMidTurnRetried: with retries configured for Bash, the
// interrupted call runs again on the new worker and completes once; the
// audit says its first attempt was cut off and the second ran it again.
func TestWorkerKilledMidTurnRetried(t *testing.T) {
	res, log, execs := killMidTurn(t, "tools:\n  per_tool:\n    Bash: {retry: {max_attempts: 3, initial_interval: 100ms}}\n")
	if log != "one\ntwo\n" {
		t.Errorf("log.txt = %q, want each call's effect exactly once", log)
	}
	// The audit says the first attempt was cut off and the second ran
	// the call again (it said only ran).
	if len(execs) != 2 || execs[0] != "ran: " || !strings.HasPrefix(execs[1], "cut_off: attempt 1 cut off while it ran") ||
		!strings.HasSuffix(execs[1], "attempt 2 ran it again") {
		t.Errorf("the killed call's execution records %q, want ran then cut_off naming attempts 1 and 2", execs)
	}
	if rs := toolResults(res); len(rs) != 2 || rs[0].IsError || rs[1].IsError {
		t.Errorf("tool results = %+v", rs)
	}
}

func waitFor(t testing.TB, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("timed out waiting")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestReplayHistories replays every recorded history in testdata with
// the current workflow code: a change that breaks determinism for turns
// already in flight fails here. Histories of older workflow versions are
// kept (demo_turn_v1.json predates the fast path and call policies; the
// v1–v3 files keep the conversation inline, v4 by reference, v5 with the
// pending index in the memo, v6 with webhooks, edited inputs, local model
// steps and a wait that continues as new, v7 with verdicts that record
// only the tool's flags, v9 with answered events, reminders, Slack
// messages, two-person rules and budgets, v12 with verdict kinds and
// audit notes: escalations and budget answers, v13 with budget approvals
// posted to chat, v15 with session rules and window limits, v16 with
// chat messages and approval_updated notifications that follow a
// re-hashed call). Run with -update to record
// the current scenarios as a new generation (recordGeneration).
// TestVersionsRecorded (workflows) checks that every change ID of the
// code is in one of them.
func TestReplayHistories(t *testing.T) {
	if *update {
		recordScenarios(t)
	}
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no histories in testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(workflows.New(roles.Checker{}), workflow.RegisterOptions{Name: workflows.TurnWorkflow})
			r.RegisterWorkflowWithOptions(workflows.PolicyStore, workflow.RegisterOptions{Name: workflows.PolicyWorkflow})
			r.RegisterWorkflowWithOptions(workflows.BudgetStore, workflow.RegisterOptions{Name: workflows.BudgetStoreWorkflow})
			if err := r.ReplayWorkflowHistoryFromJSONFile(quietLog(), f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}

// recordGeneration suffixes the files recordScenarios writes
// (<scenario>_<generation>.json). Bump it before recording the current
// workflow code again: the recorder adds files and never overwrites one,
// so the histories of older generations keep replaying the branches
// their code took.
const recordGeneration = "v16"

// recordedScenarios are the files one recording writes.
var recordedScenarios = []string{"demo_turn", "approvals_turn", "can_turn_run1", "can_turn_run2", "notify_turn", "flood_turn_run1", "flood_turn_run2", "live_turn", "policy_store", "budget_turn", "quorum_turn", "agent_budget_turn", "budget_store", "roles_turn", "window_turn"}

// historyFile names a scenario's file of this generation.
func historyFile(scenario string) string { return scenario + "_" + recordGeneration + ".json" }

// saveHistory writes the history of a workflow's latest run.
func saveHistory(t *testing.T, id, scenario string) { saveRunHistory(t, id, "", scenario) }

// saveRunHistory writes the history of one run (runID "" for the latest)
// as the scenario's file; it never replaces a file.
func saveRunHistory(t *testing.T, id, runID, scenario string) {
	t.Helper()
	var evs []*historypb.HistoryEvent
	it := env.c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join("testdata", historyFile(scenario)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatalf("%v: bump recordGeneration to record a new generation", err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

// recordScenarios records, as generation recordGeneration: the demo
// turn; a turn with approvals, a denial, an always-allow and an
// escalation; a turn that continues as new while a call waits (both
// runs); a turn with webhooks, an edited approval, a deadline denial,
// local model steps and a notification in flight at its end; and a
// waiting turn flooded with rejected answers that continues as new while
// it waits (both runs); and the others below (live policy, budgets,
// quorum, approvers with roles).
func recordScenarios(t *testing.T) {
	for _, sc := range recordedScenarios {
		if _, err := os.Stat(filepath.Join("testdata", historyFile(sc))); err == nil {
			t.Fatalf("testdata/%s exists: bump recordGeneration to record a new generation", historyFile(sc))
		}
	}
	suffix := "-" + recordGeneration + "-" + fmt.Sprint(time.Now().UnixNano())
	s, err := model.LoadScript("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cl := startWorker(t, warden.Options{Workdir: t.TempDir(), Client: env.c,
		ToolSettings: map[string]config.ToolSettings{"Write": {ApprovalTimeout: 2 * time.Second, Escalation: string(workflows.EscalateNotify)}}})
	ctx := ctxT(t, 120*time.Second)
	pc := policy(t, permission.Policy{Allow: []string{"Bash(echo:*)", "Bash(go version)"}, Deny: []string{"Bash(rm -rf:*)"}})
	id := "demo-record" + suffix
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Prompt: s.Prompt, Model: workflows.ModelConfig{Provider: "scripted", Script: s}, Permission: pc}); err != nil {
		t.Fatal(err)
	}
	dp := waitPending(t, cl, id, 1)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: dp[0].CallID, Decision: workflows.DecisionAllow, By: "recorder", Hash: dp[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	saveHistory(t, id, "demo_turn")

	as := script(t, `
steps:
  - tool_calls:
      - {id: a, name: Bash, input: {command: "touch one"}}
      - {id: b, name: Bash, input: {command: "touch two"}}
      - {id: c, name: Bash, input: {command: "curl http://example.com"}}
      - {id: d, name: Write, input: {file_path: "/tmp/warden-record-x", content: "x"}}
  - text: done
`)
	id = "approvals-record" + suffix
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: as}}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 4)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "a", Decision: workflows.DecisionAlwaysAllow, Rules: []string{"Bash(touch:*)"}, By: "alice", Hash: hashOf(t, cl, id, "a")}); err != nil {
		t.Fatal(err)
	}
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "c", Decision: workflows.DecisionDeny, Reason: "no network", By: "bob", Hash: hashOf(t, cl, id, "c")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		ps, err := cl.Pending(ctx, id)
		return err == nil && len(ps) == 1 && ps[0].Escalated
	})
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "d", Decision: workflows.DecisionAllow, By: "carol", Hash: hashOf(t, cl, id, "d")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	saveHistory(t, id, "approvals_turn")

	// A turn that continues as new while a call waits: both runs.
	cs := script(t, `
steps:
  - tool_calls:
      - {name: Bash, input: {command: "echo one"}}
      - {name: Bash, input: {command: "echo two"}}
      - {name: TaskCreate, input: {subject: "carried task", description: "d"}}
  - tool_calls: [{id: w1, name: Bash, input: {command: "touch after-can"}}]
  - text: done across runs
`)
	id = "can-record" + suffix
	first, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: cs},
		Permission: permission.Context{Allow: []permission.Rule{{Tool: "TaskCreate", Behavior: permission.Allow}}}, ContinueAsNewAfter: 15})
	if err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: ps[0].CallID, Decision: workflows.DecisionAllow, Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	saveRunHistory(t, id, first.GetRunID(), "can_turn_run1")
	saveHistory(t, id, "can_turn_run2")

	recordNotifyScenario(t, ctx)
	recordFloodScenario(t, ctx, cl, suffix)
	recordLiveScenario(t, ctx, suffix)
	recordBudgetScenario(t, ctx, cl, suffix)
	recordAgentBudgetScenario(t, ctx, cl, suffix, saveHistory)
	recordQuorumScenario(t, ctx, cl, suffix)
	recordRolesScenario(t, ctx, saveHistory)
	recordWindowScenario(t, ctx, cl, suffix)
}

// recordWindowScenario records a turn under two window limits of one
// call per hour, one of the turn scope and one of the agent scope: the
// second call of each reaches its bound and asks (an audit note, an
// approval that counts it past the bound); the agent scope's counts go
// through the agent's budget store (a local activity, which starts the
// store).
func recordWindowScenario(t *testing.T, ctx context.Context, cl *client.Client, suffix string) {
	t.Helper()
	ws := script(t, `
steps:
  - tool_calls: [{id: p1, name: Bash, input: {command: "echo push 1"}}]
  - tool_calls: [{id: p2, name: Bash, input: {command: "echo push 2"}}]
  - tool_calls: [{id: s1, name: Bash, input: {command: "echo ship 1"}}]
  - tool_calls: [{id: s2, name: Bash, input: {command: "echo ship 2"}}]
  - text: done
`)
	pc := policy(t, permission.Policy{Allow: []string{"Bash(echo:*)"}, Limits: []permission.WindowLimit{
		{Rule: "Bash(echo push:*)", Max: 1, Per: time.Hour},
		{Rule: "Bash(echo ship:*)", Max: 1, Per: time.Hour, Scope: permission.ScopeAgent}}})
	id := "window-record" + suffix
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: ws}, Permission: pc,
		Agent: "window-recorder" + suffix, AgentBudget: client.NoAgentBudget}); err != nil {
		t.Fatal(err)
	}
	for _, call := range []string{"p2", "s2"} {
		waitFor(t, ctx, func() bool {
			ps, err := cl.Pending(ctx, id)
			return err == nil && len(ps) == 1 && ps[0].CallID == call
		})
		if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: call, Decision: workflows.DecisionAllow, By: "recorder", Hash: hashOf(t, cl, id, call)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	saveHistory(t, id, "window_turn")
}

// recordQuorumScenario records a call under a two-person rule: a first
// allow by update (kept, the entry stays open), a second approver's allow
// by signal that runs it.
func recordQuorumScenario(t *testing.T, ctx context.Context, cl *client.Client, suffix string) {
	pc, err := permission.Policy{Quorum: []permission.QuorumRule{{Rule: "Bash(touch:*)", Approvals: 2}}}.Context()
	if err != nil {
		t.Fatal(err)
	}
	qs := script(t, "steps:\n  - tool_calls: [{id: q1, name: Bash, input: {command: \"touch quorum\"}}]\n  - text: done\n")
	id := "quorum-record" + suffix
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: qs}, Permission: pc}); err != nil {
		t.Fatal(err)
	}
	p := waitPendingCall(t, cl, id, "q1")
	if _, err := cl.ApproveListed(ctx, id, p, workflows.Approval{CallID: "q1", Decision: workflows.DecisionAllow, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		ps, err := cl.Pending(ctx, id)
		return err == nil && len(ps) == 1 && len(ps[0].Approvals) == 1
	})
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "q1", Decision: workflows.DecisionAllow, By: "bob", Hash: p.Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	saveHistory(t, id, "quorum_turn")
}

// recordBudgetScenario records a turn with a budget: a warning, a park on
// its token bound raised by an update, a park on its tool-call bound
// denied by a signal.
func recordBudgetScenario(t *testing.T, ctx context.Context, cl *client.Client, suffix string) {
	b, err := client.ParseBudget("tokens=1000,tool_calls=1,warn=50%", false)
	if err != nil {
		t.Fatal(err)
	}
	id := "budget-record" + suffix
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, budgetScript)},
		Permission: permission.Context{Mode: permission.ModeBypass}, Budget: &b}); err != nil {
		t.Fatal(err)
	}
	raiseThenDeny(t, ctx, cl, id, workflows.Budget{Tokens: 10000})
	saveHistory(t, id, "budget_turn")
}

// raiseThenDeny answers a recorded budget turn: its first budget
// approval raised by raise through an update, its second denied by a
// signal; the turn must then end stopped by its budget.
func raiseThenDeny(t *testing.T, ctx context.Context, cl *client.Client, id string, raise workflows.Budget) {
	p := waitPendingCall(t, cl, id, "budget_1")
	if _, err := cl.ApproveListed(ctx, id, p, workflows.Approval{CallID: p.CallID, Decision: workflows.DecisionAllow, By: "owner", Raise: &raise}); err != nil {
		t.Fatal(err)
	}
	p = waitPendingCall(t, cl, id, "budget_2")
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: p.CallID, Decision: workflows.DecisionDeny, By: "owner", Reason: "enough", Hash: p.Hash}); err != nil {
		t.Fatal(err)
	}
	if res, err := cl.Result(ctx, id); err != nil || res.Stopped != "budget" {
		t.Fatalf("budget turn %s: %+v %v", id, res, err)
	}
}

// recordAgentBudgetScenario records a turn of an agent with a budget
// store (the charges, a park on its daily bound raised by an update,
// a second park denied by a signal, the last charge) and the store's
// history; save is saveHistory (TestAgentBudgetScenario passes one that
// saves nothing).
func recordAgentBudgetScenario(t *testing.T, ctx context.Context, cl *client.Client, suffix string, save func(*testing.T, string, string)) {
	agent := "record-agent" + suffix
	if _, err := cl.SetAgentBudget(ctx, agent, workflows.WindowDaily, &workflows.Budget{Tokens: 1000}, "owner"); err != nil {
		t.Fatal(err)
	}
	id := "agent-budget-record" + suffix
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, budgetScript)},
		Permission: permission.Context{Mode: permission.ModeBypass}, Agent: agent}); err != nil {
		t.Fatal(err)
	}
	raiseThenDeny(t, ctx, cl, id, workflows.Budget{Tokens: 1000})
	save(t, id, "agent_budget_turn")
	save(t, workflows.AgentBudgetStore(agent), "budget_store")
}

// TestAgentBudgetScenario runs the recorded agent budget scenario
// without saving it: a raise lets the turn go on, a deny by signal ends
// it (the scenario checks both).
func TestAgentBudgetScenario(t *testing.T) {
	cl := startWorker(t, warden.Options{Workdir: t.TempDir(), Client: env.c})
	recordAgentBudgetScenario(t, ctxT(t, 60*time.Second), cl, "-"+tag(), func(*testing.T, string, string) {})
}

// recordLiveScenario records a turn that follows a policy store: one
// call is remembered with a scope (the store tells the turn, which
// re-decides the others), then a policy change denies another, and the
// last is answered. The store's history, with the remembered approval
// then revoked, is recorded too (policy_store_v8.json was recorded by
// this code at 519fffd, before PolicyStore was split up).
func recordLiveScenario(t *testing.T, ctx context.Context, suffix string) {
	cl := startWorkerOn(t, "tq-"+t.Name()+"-live", warden.Options{Workdir: t.TempDir(), Client: env.c})
	store, err := cl.StartPolicyStore(ctx, "policy-record"+suffix)
	if err != nil {
		t.Fatal(err)
	}
	ls := script(t, `
steps:
  - tool_calls:
      - {id: l1, name: Bash, input: {command: "touch one"}}
      - {id: l2, name: Bash, input: {command: "touch two"}}
      - {id: l3, name: Bash, input: {command: "curl http://example.com"}}
  - text: done
`)
	id := "live-record" + suffix
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: ls}, LivePolicy: store}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 3)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "l1", Decision: workflows.DecisionAlwaysAllow, Scope: workflows.ScopeNamespace,
		By: "alice", Hash: hashOf(t, cl, id, "l1")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		ps, err := cl.Pending(ctx, id)
		return err == nil && len(ps) == 2 && ps[0].LiveVersion == 1
	})
	if _, err := cl.SetPolicy(ctx, store, workflows.LiveRules{Deny: []string{"Bash(curl:*)"}}, "ops"); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: ps[0].CallID, Decision: workflows.DecisionAllow, By: "bob", Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	saveHistory(t, id, "live_turn")
	st, err := cl.PolicyState(ctx, store)
	if err != nil || len(st.Remembered) != 1 {
		t.Fatalf("store: %+v %v", st, err)
	}
	if _, err := cl.Revoke(ctx, store, st.Remembered[0].ID, "ops"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		d, err := env.c.DescribeWorkflowExecution(ctx, store, "")
		return err == nil && len(d.PendingActivities) == 0
	})
	saveHistory(t, store, "policy_store")
}

// recordNotifyScenario records a turn on a worker with webhooks (its
// receiver refuses each notification's first attempt) and local model
// steps: of two asks, one is approved with an edited input (a new call),
// the other times out and is denied (an escalation's notification); the
// turn then ends while that notification waits for its retry.
func recordNotifyScenario(t *testing.T, ctx context.Context) {
	hook := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}, failEach: true}
	hs := httptest.NewServer(hook)
	t.Cleanup(hs.Close)
	slack := httptest.NewServer(&slackStandIn{})
	t.Cleanup(slack.Close)
	cl := startWorkerOn(t, "tq-"+t.Name()+"-notify", warden.Options{Workdir: t.TempDir(),
		Notifier: &notify.Sender{URLs: []string{hs.URL}, Secret: hookSecret}, RemindBefore: 2 * time.Second,
		Chat: &activities.Chat{Service: chat.New("xoxb-record", slack.URL, nil), Channel: "C0RECORD"}})
	ns := script(t, `
steps:
  - text: two commands
    tool_calls:
      - {id: e1, name: Bash, input: {command: "touch as-asked"}}
      - {id: e2, name: Bash, input: {command: "touch never"}}
  - text: done
`)
	id := "notify-record-" + recordGeneration + "-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: ns, Local: true},
		ApprovalTimeout: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 2)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "e1", Decision: workflows.DecisionAllow, By: "alice", Hash: hashOf(t, cl, id, "e1"),
		Input: json.RawMessage(`{"command":"touch as-edited"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	// Two requests, a reminder, answers and an escalation: the last may
	// still wait for its retry.
	if _, _, evs, _ := hook.snapshot(); len(evs) < 3 {
		t.Fatalf("receiver accepted %d notifications, want at least 3", len(evs))
	}
	saveHistory(t, id, "notify_turn")
}

// recordFloodScenario records a waiting turn that continues as new while
// rejected answers flood it, and the run that takes the real answer.
func recordFloodScenario(t *testing.T, ctx context.Context, cl *client.Client, suffix string) {
	fs := script(t, "steps:\n  - tool_calls: [{id: f1, name: Bash, input: {command: \"touch flooded\"}}]\n  - text: done\n")
	id := "flood-record" + suffix
	first, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: fs}, ContinueAsNewAfter: 40})
	if err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 1)
	// Rejected answers until the turn continues as new (then the next
	// run stays under its bound until the answer).
	for len(runIDs(t, id)) == 1 {
		if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "f1", Hash: "stale", Decision: workflows.DecisionAllow}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ps := waitPending(t, cl, id, 1)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "f1", Decision: workflows.DecisionAllow, Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if runs := runIDs(t, id); len(runs) != 2 {
		t.Fatalf("flood turn ran %d runs, want 2", len(runs))
	}
	saveRunHistory(t, id, first.GetRunID(), "flood_turn_run1")
	saveHistory(t, id, "flood_turn_run2")
}
