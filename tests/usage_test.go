package tests

import (
	"fmt"
	"io"
	"math"
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

	"go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// usageScript is a three-step turn whose model reports usage: input,
// cache reads and writes, output, and a cost of its own that the worker
// must ignore (a cost is the worker's price table's, never a model's).
const usageScript = `steps:
  - tool_calls: [{name: Bash, input: {command: "echo one"}}]
    usage: {input_tokens: 1000, cache_read_tokens: 4000, cache_write_tokens: 500, output_tokens: 200, cost: 99}
  - tool_calls: [{name: Bash, input: {command: "echo two"}}]
    usage: {input_tokens: 2000, cache_read_tokens: 6000, output_tokens: 300}
  - text: done
    usage: {input_tokens: 100, output_tokens: 50}
`

// TestModelUsage runs a turn whose model reports usage on two worker
// processes, one with a price table in its config and one without (the
// control): both record the tokens by kind in the turn's result, its
// events and /metrics, across a continue-as-new; only the priced one
// has a cost, computed from its table.
func TestModelUsage(t *testing.T) {
	bin := buildWorker(t)
	want := model.Usage{InputTokens: 3100, CacheReadTokens: 10000, CacheWriteTokens: 500, OutputTokens: 550}
	// Per million: input 3, cached input 0.3, cache write 3.75, output 15.
	wantCost := (3100*3 + 10000*0.3 + 500*3.75 + 550*15) / 1e6
	for _, priced := range []bool{true, false} {
		t.Run(fmt.Sprintf("priced=%v", priced), func(t *testing.T) {
			conf := "middleware:\n  logging: {level: error}\n" + contentConfig()
			if priced {
				conf += "prices:\n  scripted: {input: 3, cached_input: 0.3, cache_write: 3.75, output: 15}\n"
			}
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
			queue := "tq-usage-" + fmt.Sprint(time.Now().UnixNano())
			cmd := exec.Command(bin, "--config", cfg, "--temporal-address", env.srv.Addr(), "--namespace", "default",
				"--task-queue", queue, "--metrics-addr", addr, "--workdir", t.TempDir())
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()

			ctx := ctxT(t, 90*time.Second)
			cl := startWorkerless(queue)
			id := "usage-" + fmt.Sprint(time.Now().UnixNano())
			if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, usageScript)},
				Permission: permission.Context{Mode: permission.ModeBypass}, ContinueAsNewAfter: 15}); err != nil {
				t.Fatal(err)
			}
			res, err := cl.Result(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			got := res.Usage
			t.Logf("usage %s", got)
			if got.InputTokens != want.InputTokens || got.CacheReadTokens != want.CacheReadTokens ||
				got.CacheWriteTokens != want.CacheWriteTokens || got.OutputTokens != want.OutputTokens {
				t.Errorf("turn usage %+v, want %+v", got, want)
			}
			switch {
			case priced && (got.Cost == nil || math.Abs(*got.Cost-wantCost) > 1e-9):
				t.Errorf("cost %v, want %v", got.Cost, wantCost)
			case !priced && got.Cost != nil:
				t.Errorf("an unpriced model has a cost: %v", *got.Cost)
			}
			// The turn continued as new along the way: its usage is the
			// sum of all its runs.
			desc, err := env.c.DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				t.Fatal(err)
			}
			if desc.WorkflowExecutionInfo.GetExecution().GetRunId() == firstRun(t, env.c, id) {
				t.Error("the turn did not continue as new: lower ContinueAsNewAfter")
			}
			page, err := cl.Events(ctx, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			var usage []string
			for _, e := range page.Events {
				if e.Type == workflows.EventUsage {
					usage = append(usage, e.Text)
				}
			}
			if len(usage) == 0 || !strings.Contains(usage[len(usage)-1], "turn: "+got.String()) {
				t.Errorf("usage events %q do not end with the turn's %s", usage, got)
			}

			// The audit has a record per model call, with its usage and
			// the turn's total after it, across the runs.
			recs, err := audit.Workflow(ctx, env.c, id)
			if err != nil {
				t.Fatal(err)
			}
			var models []audit.Record
			for _, r := range recs {
				if r.Kind == audit.KindModel {
					models = append(models, r)
				}
			}
			if len(models) != 3 || models[2].TurnUsage == nil || models[2].TurnUsage.String() != got.String() ||
				models[0].Usage == nil || models[0].Usage.InputTokens != 1000 || (models[0].Usage.Cost != nil) != priced {
				t.Errorf("model records of the audit: %+v", models)
			}

			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			text := string(body)
			for _, line := range []string{
				`warden_model_tokens_total{kind="input",model="",provider="scripted"} 3100`,
				`warden_model_tokens_total{kind="cache_read",model="",provider="scripted"} 10000`,
				`warden_model_tokens_total{kind="cache_write",model="",provider="scripted"} 500`,
				`warden_model_tokens_total{kind="output",model="",provider="scripted"} 550`,
			} {
				if !strings.Contains(text, line) {
					t.Errorf("/metrics lacks %q", line)
				}
			}
			hasCost := false
			for _, l := range strings.Split(text, "\n") {
				if v, ok := strings.CutPrefix(l, `warden_model_cost_total{model="",provider="scripted"} `); ok {
					f, err := strconv.ParseFloat(v, 64)
					hasCost = err == nil && math.Abs(f-wantCost) < 1e-9
				}
			}
			if priced != hasCost {
				t.Errorf("priced %v, /metrics has the cost %v:\n%s", priced, hasCost, grepLines(text, "warden_model_cost"))
			}
		})
	}
}

// firstRun is the run id of a workflow's first run.
func firstRun(t *testing.T, c client.Client, id string) string {
	t.Helper()
	it := c.GetWorkflowHistory(t.Context(), id, "", false, 0)
	ev, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	return ev.GetWorkflowExecutionStartedEventAttributes().GetFirstExecutionRunId()
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
