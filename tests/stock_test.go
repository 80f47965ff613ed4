package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// Stock servers: Temporal servers warden did not build, run the way a
// team runs them — the Temporal CLI's dev server and the official server
// binary on PostgreSQL — with warden's workers, starter and inbox as
// clients, and the Temporal CLI beside them. scripts/test.sh installs the
// CLI (.ci/temporal-cli.sh) and PostgreSQL and runs these tests as one
// target (go test -run '^TestStock').

// temporalCLI is the Temporal CLI binary: $WARDEN_TEMPORAL_CLI, else
// `temporal` on PATH. Without one the test skips, unless
// WARDEN_REQUIRE_STOCK=1 (scripts/test.sh installs the CLI and sets it),
// where that is a failure.
func temporalCLI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WARDEN_TEMPORAL_CLI"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("WARDEN_TEMPORAL_CLI: %v", err)
		}
		return p
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	msg := "the Temporal CLI is not installed (.ci/temporal-cli.sh builds it; WARDEN_TEMPORAL_CLI names it)"
	if os.Getenv("WARDEN_REQUIRE_STOCK") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; scripts/test.sh installs it, and then requires this test to run")
	return ""
}

// runTemporal runs the Temporal CLI and returns its stdout; a failure's
// error carries its stderr.
func runTemporal(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("temporal %s: %w: %s%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}

// buildModuleBinary compiles a main package of the module graph (the
// server's, pinned in go.mod's tool block) once per test binary.
func buildModuleBinary(t *testing.T, name, pkg string) string {
	t.Helper()
	bin := filepath.Join(env.binDir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build %s: %v", pkg, err)
	}
	t.Logf("built %s in %s", pkg, time.Since(start).Round(time.Second))
	return bin
}

// stockProfile is a stock server and how each kind of client reaches it.
type stockProfile struct {
	name, addr string
	// creds are the credential flags of warden's worker and starter
	// (--tls-cert/--tls-key/--tls-ca, --api-key).
	creds []string
	// cliCreds are the same for the Temporal CLI.
	cliCreds []string
	// temporal dials the test's own client.
	temporal config.Temporal
	// dir holds configs and files of the profile.
	dir string
}

// cli runs the Temporal CLI against the profile's server.
func (p *stockProfile) cli(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	args = append(args, "--address", p.addr, "--namespace", "default")
	return runTemporal(t, bin, append(args, p.cliCreds...)...)
}

func (p *stockProfile) dial(t *testing.T) tclient.Client {
	t.Helper()
	o, err := client.DialOptions(p.temporal)
	if err != nil {
		t.Fatal(err)
	}
	o.Logger = quietLog()
	c, err := tclient.DialContext(ctxT(t, 60*time.Second), o)
	if err != nil {
		t.Fatalf("%s: dial: %v", p.name, err)
	}
	t.Cleanup(c.Close)
	return c
}

// waitServing waits until the server answers with the namespace's
// description (a fresh server takes a few seconds to join its services).
func (p *stockProfile) waitServing(t *testing.T, ctx context.Context, namespace string) tclient.Client {
	t.Helper()
	o, err := client.DialOptions(p.temporal)
	if err != nil {
		t.Fatal(err)
	}
	o.Logger = quietLog()
	// Lazy: it connects on the first call, so the loop also waits for
	// the port to open.
	c, err := tclient.NewLazyClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for {
		if _, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace}); err == nil {
			return c
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: namespace %s not served: %v", p.name, namespace, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestStockCLIDevServer runs warden on the Temporal CLI's dev server
// (`temporal server start-dev`, SQLite): the stock profile below, with no
// credentials. Every default is as shipped except the one deploy/README
// tells a team to set first, history.transferProcessorMaxPollRPS: at its
// default of 20 reads/s on the dev server's single shard the 1,000-job
// batch took 4m10s here instead of ~2m10s (the official server's test
// keeps every default).
func TestStockCLIDevServer(t *testing.T) {
	cli := temporalCLI(t)
	wbin, sbin := buildWorker(t), buildStarter(t)
	dir := t.TempDir()
	port := freePort(t)
	p := &stockProfile{name: "cli-dev", addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir}
	p.temporal = config.Temporal{Address: p.addr, Namespace: "default"}
	srv, log := startLogged(t, cli, dir, "server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(port),
		"--http-port", strconv.Itoa(freePort(t)), "--metrics-port", strconv.Itoa(freePort(t)), "--headless",
		"--db-filename", filepath.Join(dir, "temporal.db"), "--log-level", "error",
		"--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000")
	defer killProcess(t, srv)
	start := time.Now()
	p.waitServing(t, ctxT(t, time.Minute), "default")
	t.Logf("dev server serving in %s", time.Since(start).Round(time.Millisecond))
	runStockProfile(t, p, cli, wbin, sbin)
	if t.Failed() {
		t.Logf("dev server output:\n%s", tail(log.String(), 4000))
	}
}

// runStockProfile runs warden on a stock server whose namespace
// "default" exists without warden's search attributes:
//  1. the first worker creates the attributes; two worker processes
//     share one task queue (and one workspace directory);
//  2. turns park calls; a third process lists them (`starter approvals
//     list`), and so does `temporal workflow list --query` on warden's
//     search attributes;
//  3. a turn's worker is SIGKILLed while its call runs: the turn
//     completes on the other worker, the call not run again;
//  4. meanwhile the waiting calls are answered with `starter approvals
//     approve` and with the Temporal CLI (an Update and a signal each),
//     and through examples/approval-service; the killed worker comes
//     back with the inbox, which answers the last;
//  5. a 1,000-job `starter batch` over both workers: one result, one
//     workflow run and one side effect per job, the listing paged by
//     the server's visibility cap (1,000 on a stock server).
func runStockProfile(t *testing.T, p *stockProfile, cli, wbin, sbin string) {
	ctx := ctxT(t, 15*time.Minute)
	c := p.dial(t)
	sas, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for name := range warden.SearchAttributes() {
		if _, ok := sas.GetCustomAttributes()[name]; ok {
			t.Fatalf("%s: the namespace already has %s before any worker started", p.name, name)
		}
	}

	// 1. Two workers; the first creates the search attributes.
	queue := "tq-stock-" + p.name + "-" + tag()
	work := filepath.Join(p.dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, inboxCfg := filepath.Join(p.dir, "worker.yaml"), filepath.Join(p.dir, "worker-inbox.yaml")
	inboxPort := freePort(t)
	if err := os.WriteFile(cfg, []byte(contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inboxCfg, []byte(contentConfig()+fmt.Sprintf(
		"inbox: {enabled: true, listen: \"127.0.0.1:%d\", users: {carol: {token: carol-token}}}\n", inboxPort)), 0o644); err != nil {
		t.Fatal(err)
	}
	worker := func(config string) (*exec.Cmd, *procLog) {
		args := append([]string{"--config", config, "--temporal-address", p.addr, "--namespace", "default", "--task-queue", queue,
			"--metrics-addr", "off", "--workdir", work}, p.creds...)
		w, log := startLogged(t, wbin, p.dir, args...)
		log.wait(t, ctx, "task queue "+queue)
		return w, log
	}
	started := time.Now()
	a, alog := worker(cfg)
	t.Logf("%s: first worker ready (search attributes created) in %s", p.name, time.Since(started).Round(time.Millisecond))
	if want := "created WardenPendingCalls, WardenPendingTools, WardenSessionState, WardenWaitingSince in namespace default"; !strings.Contains(alog.String(), want) {
		t.Errorf("first worker's output lacks %q:\n%s", want, alog)
	}
	b, _ := worker(cfg)
	workers := []*exec.Cmd{a, b}
	defer func() {
		for _, w := range workers {
			killProcess(t, w)
		}
	}()
	waitPolling(t, ctx, c, queue, a, b)
	wc := client.New(c, queue)
	wc.PollInterval = 50 * time.Millisecond
	starter := func(args ...string) (string, error) {
		args = append(args, "--config", cfg, "--address", p.addr, "--namespace", "default", "--task-queue", queue)
		return runStarter(t, sbin, p.dir, append(args, p.creds...)...)
	}

	// 2. Turns park calls; a third process and the CLI list them.
	tg := tag()
	prefix := "stock-" + tg + "-"
	ids := make([]string, 6)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%d", prefix, i)
		if _, err := wc.Start(ctx, ids[i], clusterTurn(t, ids[i])); err != nil {
			t.Fatal(err)
		}
	}
	hashes := map[string]string{}
	waitFor(t, ctx, func() bool {
		out, err := starter("approvals", "list", "--json", "--workflow", prefix)
		if err != nil {
			t.Log(err)
			return false
		}
		var entries []client.PendingEntry
		if err := json.Unmarshal([]byte(out), &entries); err != nil {
			t.Fatalf("approvals list --json: %v\n%s", err, out)
		}
		for _, e := range entries {
			if e.CallID == "c2" {
				hashes[e.WorkflowID] = e.Hash
			}
		}
		return len(entries) == len(ids)
	})
	out, err := p.cli(t, cli, "workflow", "list", "--query", fmt.Sprintf("WardenPendingTools = 'Bash' AND WorkflowId STARTS_WITH '%s'", prefix), "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var listed []struct {
		Execution struct {
			WorkflowID string `json:"workflowId"`
		} `json:"execution"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil {
		t.Fatalf("temporal workflow list -o json: %v\n%s", err, out)
	}
	if len(listed) != len(ids) {
		t.Errorf("temporal workflow list --query WardenPendingTools listed %d turns, want %d:\n%s", len(listed), len(ids), out)
	}
	if out, err := p.cli(t, cli, "workflow", "count", "--query",
		fmt.Sprintf("WardenPendingCalls = 'c2' AND WardenWaitingSince < '%s' AND WorkflowId STARTS_WITH '%s'",
			time.Now().Add(time.Minute).UTC().Format(time.RFC3339), prefix)); err != nil || strings.TrimSpace(out) != fmt.Sprintf("Total: %d", len(ids)) {
		t.Errorf("temporal workflow count on WardenPendingCalls and WardenWaitingSince: %q, %v", out, err)
	}

	// 3. A worker dies while its call runs.
	killID := prefix + "kill"
	s := script(t, fmt.Sprintf(`
steps:
  - tool_calls: [{id: k1, name: Bash, input: {command: "echo %[1]s >> started.txt && sleep 20 && echo %[1]s >> finished.txt"}}]
  - text: survived %[1]s
`, killID))
	pc := policy(t, permission.Policy{})
	pc.Mode = permission.ModeBypass
	if _, err := wc.Start(ctx, killID, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}, Permission: pc}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctxT(t, 2*time.Minute), func() bool { return len(readLines(t, filepath.Join(work, "started.txt"))) == 1 })
	d, err := c.DescribeWorkflowExecution(ctx, killID, "")
	if err != nil || len(d.GetPendingActivities()) != 1 {
		t.Fatalf("the running call: %v, %v", d.GetPendingActivities(), err)
	}
	victim := -1
	for i, w := range workers {
		if strings.HasPrefix(d.GetPendingActivities()[0].GetLastWorkerIdentity(), strconv.Itoa(w.Process.Pid)+"@") {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("the call runs on %q, neither worker", d.GetPendingActivities()[0].GetLastWorkerIdentity())
	}
	killProcess(t, workers[victim])
	killed := time.Now()

	// 4. Answers from a third process while one worker is dead: the
	// starter (an Update, then a signal), and the Temporal CLI.
	if out, err := starter("approvals", "approve", ids[0], "c2"); err != nil || !strings.Contains(out, "c2: allow") {
		t.Errorf("starter approvals approve: %q, %v", out, err)
	}
	if _, err := starter("approvals", "approve", ids[1], "c2", "--signal", "--by", "ops"); err != nil {
		t.Error(err)
	}
	answer := func(id string) string {
		b, _ := json.Marshal(workflows.Approval{CallID: "c2", Decision: workflows.DecisionAllow, Hash: hashes[id], By: "cli-user"})
		return string(b)
	}
	if out, err := p.cli(t, cli, "workflow", "update", "execute", "--workflow-id", ids[2], "--name", workflows.UpdateApprove,
		"--input", answer(ids[2])); err != nil {
		t.Errorf("temporal workflow update execute: %v", err)
	} else {
		t.Logf("temporal workflow update execute: %s", strings.TrimSpace(out))
	}
	if _, err := p.cli(t, cli, "workflow", "signal", "--workflow-id", ids[3], "--name", workflows.SignalApprove,
		"--input", answer(ids[3])); err != nil {
		t.Errorf("temporal workflow signal: %v", err)
	}
	// And the approval-service example (package client alone), with the
	// same credentials.
	base, ok := strings.CutPrefix(startExample(t, "approval-service", true,
		append([]string{"--address", p.addr, "--namespace", "default", "--listen", "127.0.0.1:0"}, p.creds...)...), "listening on ")
	if !ok {
		t.Fatalf("approval-service printed %q, want its address", base)
	}
	if code := httpJSON(t, http.MethodPost, base+"/approve", map[string]any{
		"workflow_id": ids[5], "call_id": "c2", "decision": "allow", "hash": hashes[ids[5]], "by": "ops",
	}, nil); code != http.StatusOK {
		t.Errorf("approve %s through the approval service: status %d", ids[5], code)
	}
	res, err := wc.Result(ctx, killID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: SIGKILL mid-call to the turn completed on the other worker: %s", p.name, time.Since(killed).Round(time.Millisecond))
	if rs := toolResults(res); res.Answer != "survived "+killID || len(rs) != 1 || !rs[0].IsError {
		t.Errorf("turn %s: answer %q, tool results %+v; want the lost call reported to the model and the turn answered", killID, res.Answer, rs)
	}
	for _, id := range append(ids[:4:4], ids[5]) {
		if res, err := wc.Result(ctx, id); err != nil || res.Answer != "done "+id {
			t.Errorf("turn %s: %q, %v", id, res.Answer, err)
		}
	}

	// The killed worker comes back serving the inbox, which answers the
	// last waiting call for the user signed in to it.
	workers[victim], _ = worker(inboxCfg)
	if code, body := apiPost(t, fmt.Sprintf("http://127.0.0.1:%d/api/approve", inboxPort), "carol-token",
		map[string]any{"workflow_id": ids[4], "call_id": "c2", "decision": "allow", "hash": hashes[ids[4]]}); code != http.StatusOK {
		t.Errorf("inbox approve: %d %s", code, body)
	}
	if res, err := wc.Result(ctx, ids[4]); err != nil || res.Answer != "done "+ids[4] {
		t.Errorf("turn %s: %q, %v", ids[4], res.Answer, err)
	}
	once(t, "first call", readLines(t, filepath.Join(work, "first.txt")), ids)
	once(t, "second call", readLines(t, filepath.Join(work, "second.txt")), ids)
	once(t, "killed call", readLines(t, filepath.Join(work, "started.txt")), []string{killID})

	// 5. A 1,000-job batch over both workers.
	waitPolling(t, ctx, c, queue, workers...)
	jobs, pages := runBatch(t, ctx, c, sbin, p.dir, queue, 1000, append([]string{"--config", cfg, "--address", p.addr, "--namespace", "default"}, p.creds...))
	once(t, "batch call", readLines(t, filepath.Join(work, "ran.txt")), jobs)
	if pages < 2 {
		t.Errorf("%s: %d+ executions listed in %d page(s) of up to 5,000; a stock server caps pages at 1,000", p.name, len(jobs), pages)
	}
	// The call the dead worker ran did not finish there, nor anywhere.
	if got := readLines(t, filepath.Join(work, "finished.txt")); len(got) != 0 {
		t.Errorf("the killed call finished: %q", got)
	}
}

// runBatch runs a `starter batch` of total jobs on queue, each one
// bypass-mode Bash call that appends the job id to ran.txt in the
// worker's workspace, and checks that every job has one result and one
// workflow run. It returns the job ids and how many pages the listing of
// the queue's executions (asked in pages of 5,000) took.
func runBatch(t *testing.T, ctx context.Context, c tclient.Client, sbin, dir, queue string, total int, starterArgs []string) ([]string, int) {
	t.Helper()
	tg := tag()
	var lines strings.Builder
	jobs := make([]string, total)
	for i := range jobs {
		jobs[i] = fmt.Sprintf("job%s-%d", tg, i)
		fmt.Fprintf(&lines, `{"id": %q, "mode": "bypass", "script_inline": {"steps": [{"tool_calls": [{"id": "c1", "name": "Bash", "input": {"command": "echo %s >> ran.txt"}}]}, {"text": "done %s"}]}}`+"\n", jobs[i], jobs[i], jobs[i])
	}
	jobsFile, resultsFile := filepath.Join(dir, "jobs-"+tg+".jsonl"), filepath.Join(dir, "results-"+tg+".jsonl")
	if err := os.WriteFile(jobsFile, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := runStarter(t, sbin, dir, append([]string{"batch", "--file", jobsFile, "--concurrency", "50", "--results", resultsFile,
		// A batch that follows a policy store queries it in every
		// permission check (50 turns at once, on two workers); this test
		// is about the servers and the batch, as it was before live
		// policy became the default.
		"--task-queue", queue, "--no-live-policy"}, starterArgs...)...)
	if err != nil {
		t.Fatalf("batch: %v\n%s", err, tail(out, 2000))
	}
	t.Logf("batch of %d jobs: %s", total, time.Since(start).Round(time.Millisecond))
	data, err := os.ReadFile(resultsFile)
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]client.JobResult{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r client.JobResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if _, dup := results[r.ID]; dup {
			t.Errorf("job %s has two results", r.ID)
		}
		results[r.ID] = r
		if r.Status != client.JobCompleted || r.Answer != "done "+r.ID || r.ToolCalls != 1 || r.ToolErrors != 0 || r.Existing {
			t.Errorf("result %+v", r)
		}
	}
	if len(results) != total {
		t.Fatalf("%d results, want %d", len(results), total)
	}
	runs := map[string]int{}
	pages := 0
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("TaskQueue = '%s'", queue), NextPageToken: token, PageSize: 5000})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, e := range resp.GetExecutions() {
			if id := e.GetExecution().GetWorkflowId(); strings.HasPrefix(id, "batch-job"+tg+"-") {
				runs[id]++
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	for _, id := range jobs {
		if runs["batch-"+id] != 1 {
			t.Errorf("workflow batch-%s has %d runs, want 1", id, runs["batch-"+id])
		}
	}
	if len(runs) != total {
		t.Errorf("%d batch workflows on the queue, want %d", len(runs), total)
	}
	return jobs, pages
}

// TestStockCLIEmbeddedServer uses the Temporal CLI as a client of warden's
// embedded server, which requires a key on every request: without one
// the CLI is refused; with the operator's key as an API key over
// plaintext (`--api-key "$(cat DATA_DIR/auth/operator.key)" --tls=false`,
// since an API key makes the CLI dial TLS) it lists waiting turns by
// warden's search attributes and answers a call with an Update, whose
// JSON payload warden's authorizer reads: an answer naming another
// approver than the key's owner is refused.
func TestStockCLIEmbeddedServer(t *testing.T) {
	cli := temporalCLI(t)
	wbin := buildWorker(t)
	dataDir, workdir, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	cfg := filepath.Join(cwd, "config.yaml")
	if err := os.WriteFile(cfg, []byte(contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	proc, addr := startEmbedded(t, wbin, cwd, "--config", cfg, "--data-dir", dataDir, "--port", strconv.Itoa(freePort(t)),
		"--ui-port", "0", "--metrics-addr", "off", "--task-queue", "cli", "--workdir", workdir)
	defer killProcess(t, proc)
	opKey := filepath.Join(dataDir, "auth", "operator.key")
	key, err := os.ReadFile(opKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 2*time.Minute)
	c := dialAt(t, addr, opKey)
	defer c.Close()
	cl := client.New(c, "cli")
	cl.Via = "operator"
	cl.PollInterval = 50 * time.Millisecond
	id := "cli-embedded-" + tag()
	s := script(t, "steps:\n  - tool_calls: [{id: t1, name: Bash, input: {command: \"touch answered-by-cli\"}}]\n  - text: answered\n")
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: policy(t, permission.Policy{Ask: []string{"Bash(touch:*)"}})}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]
	query := fmt.Sprintf("WardenPendingTools = 'Bash' AND WorkflowId = '%s'", id)
	base := []string{"--address", addr, "--namespace", "default"}
	if out, err := runTemporal(t, cli, append([]string{"workflow", "list", "--query", query}, base...)...); err == nil ||
		!strings.Contains(err.Error(), "Request unauthorized") {
		t.Errorf("the CLI without a key: %v\n%s; want refused (Request unauthorized)", err, out)
	}
	withKey := append(base, "--api-key", strings.TrimSpace(string(key)), "--tls=false")
	out, err := runTemporal(t, cli, append([]string{"workflow", "list", "--query", query, "-o", "json"}, withKey...)...)
	if err != nil || !strings.Contains(out, id) {
		t.Fatalf("temporal workflow list with the operator key: %v\n%s", err, out)
	}
	update := func(by string) (string, error) {
		b, _ := json.Marshal(workflows.Approval{CallID: "t1", Decision: workflows.DecisionAllow, Hash: p.Hash, By: by, Via: "operator"})
		return runTemporal(t, cli, append([]string{"workflow", "update", "execute", "--workflow-id", id, "--name", workflows.UpdateApprove,
			"--input", string(b)}, withKey...)...)
	}
	if out, err := update("alice"); err == nil {
		t.Errorf("an answer naming alice with the operator's key was accepted: %s", out)
	}
	if out, err := update("operator"); err != nil {
		t.Fatalf("temporal workflow update execute as the operator: %v\n%s", err, out)
	}
	res, err := cl.Result(ctx, id)
	if err != nil || res.Answer != "answered" {
		t.Fatalf("turn: %q, %v", res.Answer, err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "answered-by-cli")); err != nil {
		t.Errorf("the call the CLI approved did not run: %v", err)
	}
}
