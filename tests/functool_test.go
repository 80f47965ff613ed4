package tests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// customers is a lookup_customer function tool that records the ids it
// was called with.
type customers struct {
	mu  sync.Mutex
	ids []int
}

func (c *customers) tool(t *testing.T, opts ...tools.FuncOption) tools.Tool {
	t.Helper()
	tool, err := tools.Func("lookup_customer", "Look a customer up by id.", func(_ context.Context, in struct {
		ID int `json:"id"`
	}) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.ids = append(c.ids, in.ID)
		return fmt.Sprintf("customer %d", in.ID), nil
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// ran lists the ids called, sorted (calls of a step run in parallel).
func (c *customers) ran() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(slices.Sorted(slices.Values(c.ids)))
}

const lookupSteps = `
steps:
  - tool_calls:
      - {id: a, name: lookup_customer, input: {id: 42}}
      - {id: b, name: lookup_customer, input: {id: 7}}
  - text: done
`

// lookupTurn runs lookupSteps under p and returns the turn's result.
func lookupTurn(t *testing.T, ctx context.Context, cl *client.Client, p permission.Policy) workflows.TurnResult {
	t.Helper()
	id := "lookup-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, lookupSteps)},
		Permission: policy(t, p)}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestFunctionToolContentRules: a function tool with WithContentField
// matches lookup_customer(42)-style rules through a real turn: the deny
// rule denies the call with id 42 while 7 runs; an allow rule with
// content allows its call without asking. Control: without the deny
// rule both calls run.
func TestFunctionToolContentRules(t *testing.T) {
	var c customers
	cl := startWorker(t, warden.Options{Tools: []tools.Tool{c.tool(t, tools.WithContentField("id"))}})
	ctx := ctxT(t, 90*time.Second)

	res := lookupTurn(t, ctx, cl, permission.Policy{Allow: []string{"lookup_customer"}, Deny: []string{"lookup_customer(42)"}})
	rs := toolResults(res)
	if res.Answer != "done" || c.ran() != "[7]" || len(rs) != 2 || !rs[0].IsError || !strings.Contains(rs[0].Content, "lookup_customer(42)") {
		t.Fatalf("deny: answer %q, ran %s, results %+v", res.Answer, c.ran(), rs)
	}

	c.ids = nil
	res = lookupTurn(t, ctx, cl, permission.Policy{Allow: []string{"lookup_customer(42)", "lookup_customer(7)"}})
	if res.Answer != "done" || c.ran() != "[7 42]" {
		t.Fatalf("allow with content: answer %q, ran %s", res.Answer, c.ran())
	}

	c.ids = nil
	res = lookupTurn(t, ctx, cl, permission.Policy{Allow: []string{"lookup_customer"}})
	if res.Answer != "done" || c.ran() != "[7 42]" {
		t.Fatalf("control: answer %q, ran %s", res.Answer, c.ran())
	}
}

// TestUnmatchableRuleRefused: for a function tool without a matcher,
// a client that knows the tool refuses to start a turn with a content
// rule for it; the policy store refuses such live rules (its check runs
// on the worker, against its registry) and keeps its rules; and a turn
// started by a client that does not know the tool is not let through:
// the call that the deny rule names waits for a person, with the rule in
// the reason, instead of running.
func TestUnmatchableRuleRefused(t *testing.T) {
	var c customers
	plain := c.tool(t)
	cl := startWorker(t, warden.Options{Tools: []tools.Tool{plain}, Client: env.c})
	ctx := ctxT(t, 90*time.Second)
	p := permission.Policy{Allow: []string{"lookup_customer"}, Deny: []string{"lookup_customer(42)"}}
	const named = "deny rule lookup_customer(42) can never match: tool lookup_customer has no content matcher"

	knows := startWorkerless("tq-" + t.Name())
	knows.RuleTools = []tools.Tool{plain}
	_, err := knows.Start(ctx, "never-"+fmt.Sprint(time.Now().UnixNano()), workflows.TurnInput{Permission: policy(t, p)})
	if err == nil || !strings.Contains(err.Error(), named) {
		t.Fatalf("start with the tool known: %v", err)
	}

	store := "policy-" + t.Name() + "-" + fmt.Sprint(time.Now().UnixNano())
	_, err = cl.SetPolicy(ctx, store, workflows.LiveRules{Allow: p.Allow, Deny: p.Deny}, "ops")
	if !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), named) {
		t.Fatalf("set policy: %v", err)
	}
	st, err := cl.PolicyState(ctx, store)
	if err != nil || st.Rules != nil || st.Version != 0 {
		t.Fatalf("store after the refusal: %+v %v", st, err)
	}
	// Control: the store takes rules that can match.
	if v, err := cl.SetPolicy(ctx, store, workflows.LiveRules{Allow: p.Allow}, "ops"); err != nil || v != 1 {
		t.Fatalf("set a matchable policy: v%d %v", v, err)
	}

	id := "unmatchable-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, lookupSteps)},
		Permission: policy(t, p)}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 2)
	for _, pe := range ps {
		if !strings.Contains(pe.Reason+pe.Message, named) {
			t.Errorf("pending %s: reason %q, message %q", pe.CallID, pe.Reason, pe.Message)
		}
	}
	if c.ran() != "[]" {
		t.Fatalf("ran %s before anyone answered", c.ran())
	}
}

// TestWorkerRefusesUnmatchableRule: the worker binary with a config whose
// deny rule cannot match exits non-zero naming the rule and the tool: a
// built-in tool's (PowerShell commands are not analysed), refused before
// anything starts, and an MCP tool's, refused once the server's tools
// are listed; control: with the tool-level rule it starts.
func TestWorkerRefusesUnmatchableRule(t *testing.T) {
	bin := buildWorker(t)
	connectEcho(t) // builds the echo MCP server
	mcpServer := fmt.Sprintf("mcp:\n  servers: [{name: echo, command: %q}]\n", filepath.Join(env.binDir, "echoserver"))
	run := func(rule string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
		cfg := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf("permission:\n  deny: [%q]\n", rule)+mcpServer+contentConfig()), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--config", cfg, "--temporal-address", env.srv.Addr(), "--namespace", "default",
			"--task-queue", "tq-refuse-"+fmt.Sprint(time.Now().UnixNano()), "--metrics-addr", "", "--workdir", t.TempDir())
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, bufio.NewScanner(out), &stderr
	}
	cmd, out, stderr := run("PowerShell(Remove-Item *)")
	for out.Scan() {
	}
	err := cmd.Wait()
	if err == nil || !strings.Contains(stderr.String(), "deny rule PowerShell(Remove-Item *) can never match") ||
		!strings.Contains(stderr.String(), "PowerShell commands are not analysed") {
		t.Fatalf("worker exited with %v; stderr:\n%s", err, stderr.String())
	}

	cmd, out, stderr = run("mcp__echo__write_note(first)")
	for out.Scan() {
	}
	err = cmd.Wait()
	if err == nil || !strings.Contains(stderr.String(), "deny rule mcp__echo__write_note(first) can never match: tool mcp__echo__write_note has no content matcher") {
		t.Fatalf("worker with the MCP rule exited with %v; stderr:\n%s", err, stderr.String())
	}

	cmd, out, stderr = run("PowerShell")
	started := false
	for !started && out.Scan() {
		started = strings.HasPrefix(out.Text(), "worker ")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !started {
		t.Fatalf("control: the worker did not start; stderr:\n%s", stderr.String())
	}
}

// TestFunctionToolCallInfoAcrossRetry: a function tool reads its call's
// idempotency key with tools.CallInfo; it fails its first attempt
// (tools.Retryable), the activity retries it, and the second attempt sees
// the same key, the turn's workflow id and call id.
func TestFunctionToolCallInfoAcrossRetry(t *testing.T) {
	var mu sync.Mutex
	var seen []tools.CallDetails
	charge, err := tools.Func("charge", "Charge a card.", func(ctx context.Context, in struct {
		Cents int `json:"cents"`
	}) (string, error) {
		d, ok := tools.CallInfo(ctx)
		if !ok {
			return "", errors.New("no call info")
		}
		mu.Lock()
		seen = append(seen, d)
		mu.Unlock()
		if d.Attempt == 1 {
			return "", tools.Retryable(errors.New("payment API timed out"))
		}
		return "charged with key " + d.IdempotencyKey, nil
	}, tools.WithAllow())
	if err != nil {
		t.Fatal(err)
	}
	cl := startWorker(t, warden.Options{Tools: []tools.Tool{charge},
		ToolSettings: map[string]config.ToolSettings{"charge": {Retry: config.Retry{MaxAttempts: 2, InitialInterval: 10 * time.Millisecond}}}})
	ctx := ctxT(t, 90*time.Second)
	id := "callinfo-" + fmt.Sprint(time.Now().UnixNano())
	s := script(t, `
steps:
  - tool_calls: [{id: pay, name: charge, input: {cents: 500}}]
  - text: done
`)
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	key := id + "/pay"
	if len(seen) != 2 || seen[0].Attempt != 1 || seen[1].Attempt != 2 {
		t.Fatalf("attempts seen: %+v", seen)
	}
	for _, d := range seen {
		if d.IdempotencyKey != key || d.WorkflowID != id || d.CallID != "pay" || d.Tool != "charge" {
			t.Errorf("call info %+v, want key %s", d, key)
		}
	}
	if rs := toolResults(res); len(rs) != 1 || rs[0].IsError || rs[0].Content != "charged with key "+key {
		t.Fatalf("results %+v", rs)
	}
}
