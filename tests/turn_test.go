package tests

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
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
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

var update = flag.Bool("update", false, "re-record tests/testdata histories")

func script(t *testing.T, yaml string) *model.Script {
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
	for _, m := range res.Messages {
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
	// Each Bash call was its own activity in history.
	var toolActs int
	for _, e := range history(t, id) {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == workflows.ActivityTool {
			toolActs++
		}
	}
	if toolActs != 2 {
		t.Errorf("tool activities in history = %d, want 2", toolActs)
	}
}

// flaky fails with an infrastructure error until its third attempt.
type flaky struct{}

func (flaky) Info() tools.Info {
	return tools.Info{Name: "Flaky", Description: "fails twice", ReadOnly: true,
		InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (flaky) Call(ctx context.Context, _ *tools.Env, _ json.RawMessage) tools.Stream {
	n := activity.GetInfo(ctx).Attempt
	if n < 3 {
		return tools.Fail(fmt.Errorf("transient failure on attempt %d", n))
	}
	return tools.Single(tools.Chunk{Text: fmt.Sprintf("succeeded on attempt %d", n)})
}

func TestToolRetriesThroughRetryPolicy(t *testing.T) {
	cl := startWorker(t, warden.Options{Tools: []tools.Tool{flaky{}}})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{name: Flaky}]\n  - text: done\n")
	id := "flaky-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
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

func TestWorkerKilledMidTurnResumes(t *testing.T) {
	bin := buildWorker(t)
	queue := "tq-kill-" + fmt.Sprint(time.Now().UnixNano())
	workdir := t.TempDir()
	startProc := func() *exec.Cmd {
		cmd := exec.Command(bin, "--temporal-address", env.srv.Addr(), "--namespace", "default",
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
	// Wait until the second (slow) call has started, then SIGKILL the worker.
	waitFor(t, ctx, func() bool {
		page, err := cl.Events(ctx, id, 0)
		if err != nil {
			return false
		}
		for _, e := range page.Events {
			if e.Type == workflows.EventToolCall && strings.Contains(e.Input, "sleep 3") {
				return true
			}
		}
		return false
	})
	time.Sleep(500 * time.Millisecond)
	if err := syscall.Kill(-proc.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	proc = startProc()

	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "finished after the crash" {
		t.Fatalf("answer = %q", res.Answer)
	}
	data, err := os.ReadFile(filepath.Join(workdir, "log.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); !strings.HasPrefix(got, "one\n") || !strings.Contains(got, "two\n") {
		t.Errorf("log.txt = %q, want the first call once and the second completed", got)
	}
	if rs := toolResults(res); len(rs) != 2 || rs[1].IsError {
		t.Errorf("tool results = %+v", rs)
	}
}

func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("timed out waiting")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

const replayFile = "testdata/demo_turn.json"

// TestReplayDemoHistory replays a recorded history of the demo turn with
// the current workflow code: a change that breaks determinism fails here.
// Run with -update to re-record it.
func TestReplayDemoHistory(t *testing.T) {
	if *update {
		recordDemo(t)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(workflows.Turn, workflow.RegisterOptions{Name: workflows.TurnWorkflow})
	if err := r.ReplayWorkflowHistoryFromJSONFile(quietLog(), replayFile); err != nil {
		t.Fatalf("replay %s: %v", replayFile, err)
	}
}

func recordDemo(t *testing.T) {
	s, err := model.LoadScript("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cl := startWorker(t, warden.Options{Workdir: ".."})
	ctx := ctxT(t, 60*time.Second)
	id := "demo-record"
	pc := policy(t, permission.Policy{Allow: []string{"Bash(echo:*)", "Bash(go version)"}, Deny: []string{"Bash(rm -rf:*)"}})
	run, err := cl.Start(ctx, id, workflows.TurnInput{Prompt: s.Prompt, Model: workflows.ModelConfig{Provider: "scripted", Script: s}, Permission: pc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: history(t, run.GetID())})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(replayFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
