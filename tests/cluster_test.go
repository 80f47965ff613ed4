package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// cluster is the cluster profile started by scripts/cluster.sh:
// PostgreSQL and the Temporal server, each a process of its own.
type cluster struct {
	dir, addr, serverMetrics string
	pgPort                   int
	env                      []string
}

// key is the path of a key file the server-only process wrote
// (worker.key, operator.key) or the test created.
func (cl *cluster) key(name string) string {
	return filepath.Join(cl.dir, "server", "auth", name+".key")
}

// script runs scripts/cluster.sh with the cluster's settings.
func (cl *cluster) script(args ...string) (string, error) {
	cmd := exec.Command("../scripts/cluster.sh", args...)
	cmd.Env = append(os.Environ(), cl.env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// startCluster starts PostgreSQL and the Temporal server on it with
// scripts/cluster.sh. It skips the test when PostgreSQL cannot be
// started, unless WARDEN_REQUIRE_POSTGRES=1 (scripts/test.sh installs
// PostgreSQL and sets it), where that is a failure.
func startCluster(t *testing.T, workerBin string) *cluster {
	t.Helper()
	cl := startPostgres(t, workerBin)
	out, err := cl.script("server")
	if err != nil {
		t.Fatalf("scripts/cluster.sh server: %v\n%s", err, out)
	}
	t.Logf("cluster: %s", strings.TrimSpace(out))
	return cl
}

// startPostgres starts PostgreSQL alone with scripts/cluster.sh (see
// startCluster); scripts/cluster.sh down stops it when the test ends.
func startPostgres(t *testing.T, workerBin string) *cluster {
	t.Helper()
	// Not t.TempDir: PostgreSQL runs as the `postgres` user when the test
	// runs as root, and must be able to enter its directory.
	dir, err := os.MkdirTemp("", "warden-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{dir: dir, serverMetrics: fmt.Sprintf("127.0.0.1:%d", freePort(t)), pgPort: freePort(t)}
	port := freePort(t)
	cl.addr = fmt.Sprintf("127.0.0.1:%d", port)
	cl.env = []string{"WARDEN_CLUSTER_DIR=" + dir, "PGPORT=" + strconv.Itoa(cl.pgPort), "PG_FAST=1",
		"TEMPORAL_PORT=" + strconv.Itoa(port), "UI_PORT=0", "SERVER_METRICS=" + cl.serverMetrics,
		"WORKER_BIN=" + workerBin, "SERVER_ARGS=--pprof --log-level error"}
	t.Cleanup(func() {
		if out, err := cl.script("down"); err != nil {
			t.Logf("cluster down: %v\n%s", err, out)
		}
		if t.Failed() {
			for _, name := range []string{"server.log", "pg/postgres.log"} {
				if data, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
					t.Logf("%s (last 4 KB):\n%s", name, tail(string(data), 4096))
				}
			}
		}
		_ = os.RemoveAll(dir)
	})
	if out, err := cl.script("postgres"); err != nil {
		msg := fmt.Sprintf("PostgreSQL could not be started by scripts/cluster.sh postgres: %v\n%s", err, out)
		if os.Getenv("WARDEN_REQUIRE_POSTGRES") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + "\n(install it with scripts/cluster.sh install; scripts/test.sh does, and then requires this test to run)")
	}
	return cl
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// clusterTurn: the first call (echo, allowed by a rule) runs at once and
// records which worker ran it (each worker has its own workdir); the
// second (rm, under an ask rule) waits for an approval.
func clusterTurn(t *testing.T, id string) workflows.TurnInput {
	s := script(t, fmt.Sprintf(`
steps:
  - tool_calls: [{id: c1, name: Bash, input: {command: "echo %[1]s >> first.txt"}}]
  - tool_calls: [{id: c2, name: Bash, input: {command: "rm -rf ./tmp-%[1]s && echo %[1]s >> second.txt"}}]
  - text: done %[1]s
`, id))
	return workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: policy(t, permission.Policy{Allow: []string{"Bash(echo:*)"}, Ask: []string{"Bash(rm:*)"}})}
}

// TestClusterProfile runs the cluster profile end to end: PostgreSQL and
// the Temporal server (SQL visibility) as processes of their own started
// by scripts/cluster.sh, two warden worker processes that join it, and a
// third process that answers approvals (examples/approval-service, built
// on package client). Turns spread over both workers; one worker is
// SIGKILLed while its turns wait for approvals, which the third process
// answers, and the turns complete on the other worker; then a 1,000-job
// `starter batch` over two workers completes with no turn started twice
// and no call run twice.
func TestClusterProfile(t *testing.T) {
	wbin, sbin := buildWorker(t), buildStarter(t)
	cl := startCluster(t, wbin)

	// The server process serves pprof only because it was asked to.
	for path, want := range map[string]string{"/metrics": "process_resident_memory_bytes", "/debug/pprof/heap?debug=1": "heap profile:"} {
		resp, err := http.Get("http://" + cl.serverMetrics + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("server %s: %d %.200s", path, resp.StatusCode, body)
		}
	}

	queue := "tq-cluster-" + tag()
	// Workers that take over each other's turns share one content store
	// (conversations are kept by reference, outside history).
	cfg := filepath.Join(cl.dir, "test-worker.yaml")
	if err := os.WriteFile(cfg, []byte(contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := [2]string{t.TempDir(), t.TempDir()}
	worker := func(i int) *exec.Cmd {
		return startProcess(t, wbin, dirs[i], "--config", cfg, "--temporal-address", cl.addr, "--namespace", "default",
			"--task-queue", queue, "--metrics-addr", "off", "--workdir", dirs[i], "--key-file", cl.key("worker"))
	}
	workers := [2]*exec.Cmd{worker(0), worker(1)}
	defer func() {
		for _, w := range workers {
			killProcess(t, w)
		}
	}()
	// The test drives turns as the operator, whose key the server wrote.
	opts, err := client.DialOptions(config.Temporal{Address: cl.addr, Namespace: "default", KeyFile: cl.key(auth.OperatorName)})
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = quietLog()
	c, err := tclient.DialContext(ctxT(t, 30*time.Second), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wc := client.New(c, queue)
	wc.PollInterval = 50 * time.Millisecond
	ctx := ctxT(t, 15*time.Minute)
	// Both workers poll before any turn starts, so that the first one up
	// does not take them all.
	waitPolling(t, ctx, c, queue, workers[0], workers[1])

	// 1. Turns spread over both workers and wait for approvals.
	const turns = 20
	tg := tag()
	ids := make([]string, turns)
	for i := range ids {
		ids[i] = fmt.Sprintf("cluster-%s-%d", tg, i)
		if _, err := wc.Start(ctx, ids[i], clusterTurn(t, ids[i])); err != nil {
			t.Fatal(err)
		}
	}
	pctx := ctxT(t, 3*time.Minute)
	hashes := map[string]string{}
	for _, id := range ids {
		waitFor(t, pctx, func() bool {
			ps, err := wc.Pending(pctx, id)
			if err != nil || len(ps) != 1 || ps[0].CallID != "c2" {
				return false
			}
			hashes[id] = ps[0].Hash
			return true
		})
	}
	firstA, firstB := readLines(t, filepath.Join(dirs[0], "first.txt")), readLines(t, filepath.Join(dirs[1], "first.txt"))
	t.Logf("first calls: %d on worker A, %d on worker B", len(firstA), len(firstB))
	if len(firstA) == 0 || len(firstB) == 0 {
		t.Fatalf("turns did not spread over both workers: A ran %q, B ran %q", firstA, firstB)
	}
	if len(firstA)+len(firstB) != turns {
		t.Fatalf("%d first calls ran, want %d", len(firstA)+len(firstB), turns)
	}

	// 2. Worker A dies mid-turn; a third process (the approval-service
	// example, built on package client alone) answers every approval and
	// the turns complete on worker B.
	// It holds a delegate key: it answers for the people it names in "by".
	keys, err := auth.Open(filepath.Dir(cl.key("x")))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := keys.Create("approval-service", auth.RoleDelegate); err != nil {
		t.Fatal(err)
	}
	base, ok := strings.CutPrefix(startExample(t, "approval-service", true, "--address", cl.addr, "--listen", "127.0.0.1:0",
		"--key-file", cl.key("approval-service")), "listening on ")
	if !ok {
		t.Fatalf("approval-service printed %q, want its address", base)
	}
	killProcess(t, workers[0])
	killed := time.Now()
	for _, id := range ids {
		if code := httpJSON(t, http.MethodPost, base+"/approve", map[string]any{
			"workflow_id": id, "call_id": "c2", "decision": "allow", "hash": hashes[id], "by": "ops",
		}, nil); code != http.StatusOK {
			t.Fatalf("approve %s through the approval service: status %d", id, code)
		}
	}
	for _, id := range ids {
		res, err := wc.Result(ctx, id)
		if err != nil {
			t.Fatalf("turn %s: %v", id, err)
		}
		if rs := toolResults(res); res.Answer != "done "+id || len(rs) != 2 || rs[0].IsError || rs[1].IsError {
			t.Errorf("turn %s: answer %q, tool results %+v", id, res.Answer, rs)
		}
	}
	t.Logf("SIGKILL of worker A to %d turns completed: %s", turns, time.Since(killed).Round(time.Millisecond))
	if got := readLines(t, filepath.Join(dirs[0], "second.txt")); len(got) != 0 {
		t.Errorf("the killed worker ran second calls: %q", got)
	}
	second := readLines(t, filepath.Join(dirs[1], "second.txt"))
	once(t, "second call", second, ids)
	once(t, "first call", append(firstA, firstB...), ids)

	// 3. A 1,000-job batch over two workers (A restarted): every job has
	// one result, one workflow run and one side effect.
	workers[0] = worker(0)
	waitPolling(t, ctx, c, queue, workers[0])
	const total = 1000
	var lines strings.Builder
	jobs := make([]string, total)
	for i := range jobs {
		jobs[i] = fmt.Sprintf("cjob%s-%d", tg, i)
		fmt.Fprintf(&lines, `{"id": %q, "mode": "bypass", "script_inline": {"steps": [{"tool_calls": [{"id": "c1", "name": "Bash", "input": {"command": "echo %s >> ran.txt"}}]}, {"text": "done %s"}]}}`+"\n", jobs[i], jobs[i], jobs[i])
	}
	jobsFile, resultsFile := filepath.Join(cl.dir, "jobs.jsonl"), filepath.Join(cl.dir, "results.jsonl")
	if err := os.WriteFile(jobsFile, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := runStarter(t, sbin, cl.dir, "batch", "--file", jobsFile, "--concurrency", "50", "--results", resultsFile,
		"--config", cfg, "--address", cl.addr, "--namespace", "default", "--task-queue", queue, "--key-file", cl.key(auth.OperatorName))
	if err != nil {
		t.Fatalf("batch: %v\n%s", err, tail(out, 2000))
	}
	t.Logf("batch of %d jobs on two workers: %s", total, time.Since(start).Round(time.Millisecond))
	f, err := os.Open(resultsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	results := map[string]client.JobResult{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r client.JobResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
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
	ranA, ranB := readLines(t, filepath.Join(dirs[0], "ran.txt")), readLines(t, filepath.Join(dirs[1], "ran.txt"))
	t.Logf("batch calls: %d on worker A, %d on worker B", len(ranA), len(ranB))
	if len(ranA) == 0 || len(ranB) == 0 {
		t.Errorf("the batch did not spread over both workers: %d on A, %d on B", len(ranA), len(ranB))
	}
	once(t, "batch call", append(ranA, ranB...), jobs)
	runs := map[string]int{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("TaskQueue = '%s'", queue), NextPageToken: token, PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetExecutions() {
			if id := e.GetExecution().GetWorkflowId(); strings.HasPrefix(id, "batch-") {
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
}

// waitPolling waits until each process polls the queue for workflow
// tasks (the SDK's default identity starts with the process id).
func waitPolling(t *testing.T, ctx context.Context, c tclient.Client, queue string, procs ...*exec.Cmd) {
	t.Helper()
	waitFor(t, ctx, func() bool {
		resp, err := c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err != nil {
			return false
		}
		for _, p := range procs {
			prefix := strconv.Itoa(p.Process.Pid) + "@"
			if !slices.ContainsFunc(resp.GetPollers(), func(pi *taskqueuepb.PollerInfo) bool {
				return strings.HasPrefix(pi.GetIdentity(), prefix)
			}) {
				return false
			}
		}
		return true
	})
}

// once checks that got holds each of want exactly once and nothing else.
func once(t *testing.T, what string, got, want []string) {
	t.Helper()
	count := map[string]int{}
	for _, id := range got {
		count[id]++
	}
	for _, id := range want {
		if count[id] != 1 {
			t.Errorf("%s of %s ran %d times, want once", what, id, count[id])
		}
		delete(count, id)
	}
	for id := range count {
		t.Errorf("%s of unknown id %q", what, id)
	}
}
