package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/examples/custom-tool/deploytool"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/workflows"
)

// deployScript calls the example's tools: a read-only function tool, a
// staging deploy (allowed by the tool's own check) and a prod deploy
// (a bypass-immune ASK).
const deployScript = `steps:
  - text: Checking and deploying.
    tool_calls:
      - {id: status, name: ServiceStatus, input: {service: api}}
      - {id: staging, name: Deploy, input: {service: api, version: v1.5.0, env: staging}}
      - {id: prod, name: Deploy, input: {service: api, version: v1.5.0, env: prod}}
  - text: Deployed.
`

// TestLibraryCustomToolApprovedInProcess runs the custom-tool example's
// tools on a worker registered like the example's main, and approves the
// prod deploy with client.Approve.
func TestLibraryCustomToolApprovedInProcess(t *testing.T) {
	cl := startWorker(t, warden.Options{Tools: deploytool.Tools()})
	ctx := ctxT(t, 60*time.Second)
	id := "library-inproc-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, deployScript)}}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]
	checkProdPending(t, p)

	// The workflow validates answers: a stale hash is rejected.
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "prod", Decision: workflows.DecisionAllow, Hash: "stale"}); err == nil {
		t.Fatal("approve with a wrong hash was accepted")
	}
	ack, err := cl.Approve(ctx, id, workflows.Approval{CallID: "prod", Decision: workflows.DecisionAllow, Hash: p.Hash, By: "release-manager"})
	if err != nil || ack.CallID != "prod" {
		t.Fatalf("approve: %+v %v", ack, err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	checkDeployResults(t, res)
}

// TestLibraryCustomToolApprovedOverHTTP runs the same turn on the
// custom-tool example's own main (a worker process) and answers it
// through the approval-service example: another process using package
// client, driven over real HTTP.
func TestLibraryCustomToolApprovedOverHTTP(t *testing.T) {
	queue := "tq-" + t.Name()
	startExample(t, "custom-tool", false, "--address", env.srv.Addr(), "--task-queue", queue, "--workdir", t.TempDir(),
		"--content-dir", env.contentDir)
	cl := startWorkerless(queue)
	base, ok := strings.CutPrefix(startExample(t, "approval-service", true, "--address", env.srv.Addr(), "--listen", "127.0.0.1:0"), "listening on ")
	if !ok {
		t.Fatalf("approval-service printed %q, want its address", base)
	}
	ctx := ctxT(t, 90*time.Second)
	id := "library-http-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, deployScript)}}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 1)

	// The service lists it across turns (visibility catches up a little
	// after the search attributes are set).
	var entry client.PendingEntry
	waitFor(t, ctx, func() bool {
		var es []client.PendingEntry
		if code := httpJSON(t, http.MethodGet, base+"/pending?tool=Deploy&kind=approval", nil, &es); code != http.StatusOK {
			t.Fatalf("GET /pending: status %d", code)
		}
		i := slices.IndexFunc(es, func(e client.PendingEntry) bool { return e.WorkflowID == id })
		if i >= 0 {
			entry = es[i]
		}
		return i >= 0
	})
	checkProdPending(t, entry.Pending)
	var none []client.PendingEntry
	if code := httpJSON(t, http.MethodGet, base+"/pending?tool=Bash", nil, &none); code != http.StatusOK ||
		slices.ContainsFunc(none, func(e client.PendingEntry) bool { return e.WorkflowID == id }) {
		t.Fatalf("GET /pending?tool=Bash: status %d, entries %+v", code, none)
	}

	approve := func(hash string) int {
		return httpJSON(t, http.MethodPost, base+"/approve", map[string]any{
			"workflow_id": id, "call_id": entry.CallID, "decision": "allow", "hash": hash, "by": "http-approver",
		}, nil)
	}
	if code := approve("stale"); code != http.StatusConflict {
		t.Fatalf("approve with a stale hash: status %d, want 409", code)
	}
	if code := approve(entry.Hash); code != http.StatusOK {
		t.Fatalf("approve: status %d", code)
	}
	if code := approve(entry.Hash); code != http.StatusConflict {
		t.Fatalf("second approve: status %d, want 409", code)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	checkDeployResults(t, res)
}

func checkProdPending(t *testing.T, p workflows.Pending) {
	t.Helper()
	if p.CallID != "prod" || p.Tool != "Deploy" || p.Kind != workflows.PendingApproval ||
		p.Message != deploytool.ProdMessage || !p.BypassImmune || p.Hash == "" {
		t.Fatalf("pending = %+v, want the prod deploy asking with the tool's message", p)
	}
	var in deploytool.DeployInput
	if err := json.Unmarshal(p.Input, &in); err != nil || in.Env != deploytool.EnvProd {
		t.Fatalf("pending input = %s (%v)", p.Input, err)
	}
}

func checkDeployResults(t *testing.T, res workflows.TurnResult) {
	t.Helper()
	want := map[string]string{
		"status":  "api: v1.4.2 on staging, v1.4.1 on prod",
		"staging": "Deployed api v1.5.0 to staging.",
		"prod":    "Deployed api v1.5.0 to prod.",
	}
	got := map[string]model.Message{}
	for _, m := range toolResults(res) {
		got[m.ToolCallID] = m
	}
	for id, content := range want {
		m, ok := got[id]
		if !ok || m.IsError || m.Content != content {
			t.Errorf("tool result %s = %+v, want %q", id, m, content)
		}
	}
	if len(got) != len(want) || res.Answer != "Deployed." {
		t.Errorf("answer %q, tool results %+v", res.Answer, toolResults(res))
	}
}

// startExample builds examples/<name> once per test binary, runs it with
// args until the test ends (stopping it with an interrupt, as a user
// would). With firstLine it waits for and returns the first line the
// example prints on stdout.
func startExample(t *testing.T, name string, firstLine bool, args ...string) string {
	t.Helper()
	bin := filepath.Join(env.binDir, name)
	if _, err := os.Stat(bin); err != nil {
		build := exec.Command("go", "build", "-o", bin, "../examples/"+name)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			t.Fatalf("build %s: %v", name, err)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir() // whatever an example writes by default stays out of the repository
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s exit: %v", name, err)
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s did not stop on interrupt", name)
		}
	})
	if !firstLine {
		return ""
	}
	select {
	case line := <-lines:
		return line
	case <-time.After(30 * time.Second):
		t.Fatalf("%s printed nothing", name)
		return ""
	}
}

// httpJSON sends body as JSON and decodes a 200 answer into out.
func httpJSON(t *testing.T, method, url string, body, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, data)
		}
	}
	return resp.StatusCode
}
