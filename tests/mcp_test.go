package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools/mcp"
	"github.com/wardenhq/warden/workflows"
)

// mcpScript calls a read-only MCP tool and one that writes.
const mcpScript = `steps:
  - tool_calls:
      - {id: e1, name: mcp__echo__echo, input: {text: hello from mcp}}
      - {id: w1, name: mcp__echo__write_note, input: {text: first}}
  - text: done
`

// connectEcho builds the echo MCP server of tools/mcp's tests and
// connects to it over stdio.
func connectEcho(t *testing.T) *mcp.Set {
	t.Helper()
	bin := filepath.Join(env.binDir, "echoserver")
	if _, err := os.Stat(bin); err != nil {
		if out, err := exec.Command("go", "build", "-o", bin, "../tools/mcp/testdata/echoserver").CombinedOutput(); err != nil {
			t.Fatalf("build echoserver: %v\n%s", err, out)
		}
	}
	set, err := mcp.ConnectSandboxed(ctxT(t, 30*time.Second), []config.MCPServer{{Name: "echo", Command: bin}}, &mcp.Sandbox{Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set.Close(); err != nil {
			t.Errorf("close mcp: %v", err)
		}
	})
	return set
}

// mcpResults maps call ids to tool messages.
func mcpResults(res workflows.TurnResult) map[string]model.Message {
	out := map[string]model.Message{}
	for _, m := range toolResults(res) {
		out[m.ToolCallID] = m
	}
	return out
}

// TestMCPToolsInTurn runs MCP tools in a turn: the read-only echo runs at
// once, write_note parks as an approval and runs once approved.
func TestMCPToolsInTurn(t *testing.T) {
	cl := startWorker(t, warden.Options{Tools: connectEcho(t).Tools()})
	ctx := ctxT(t, 60*time.Second)
	id := "mcp-approve-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, mcpScript)}}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]
	if p.CallID != "w1" || p.Tool != "mcp__echo__write_note" || p.Kind != workflows.PendingApproval || p.BypassImmune ||
		!slices.Contains(p.Suggestions, "mcp__echo__write_note") {
		t.Fatalf("pending = %+v", p)
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "w1", Decision: workflows.DecisionAllow, Hash: p.Hash, By: "tester"}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got := mcpResults(res)
	if e := got["e1"]; e.IsError || e.Content != "hello from mcp" || e.ToolName != "mcp__echo__echo" {
		t.Errorf("echo result = %+v", e)
	}
	if w := got["w1"]; w.IsError || w.Content != "noted: first" {
		t.Errorf("write_note result = %+v", w)
	}
	if res.Answer != "done" {
		t.Errorf("answer %q", res.Answer)
	}
}

// TestMCPToolAllowedByRule allows the writing tool with a tool-level
// rule: nothing waits.
func TestMCPToolAllowedByRule(t *testing.T) {
	cl := startWorker(t, warden.Options{Tools: connectEcho(t).Tools()})
	ctx := ctxT(t, 60*time.Second)
	id := "mcp-rule-" + fmt.Sprint(time.Now().UnixNano())
	in := workflows.TurnInput{
		Model:      workflows.ModelConfig{Provider: "scripted", Script: script(t, mcpScript)},
		Permission: policy(t, permission.Policy{Allow: []string{"mcp__echo__write_note"}}),
	}
	if _, err := cl.Start(ctx, id, in); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got := mcpResults(res)
	if got["e1"].Content != "hello from mcp" || got["w1"].Content != "noted: first" || got["w1"].IsError {
		t.Errorf("tool results = %+v", toolResults(res))
	}
}
