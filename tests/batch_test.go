package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// buildStarter compiles cmd/starter once per test binary (it does not
// link the server, so this is quick).
func buildStarter(t testing.TB) string {
	t.Helper()
	if bin := prebuiltBin("starter"); bin != "" {
		return bin
	}
	bin := filepath.Join(env.binDir, "starter")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/starter")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build starter: %v", err)
	}
	return bin
}

// tag returns a short id unique to this test run.
func tag() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }

// TestAskUserAnswerEndToEnd: a turn asks one question; it is listed as a
// pending external call; an answer with an unknown label is rejected by
// the client before anything reaches the workflow; a valid answer
// resumes the turn, whose tool result carries the answer as content and
// (in the recorded update) as metadata.
func TestAskUserAnswerEndToEnd(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	id := "ask-" + tag()
	startAsk(t, ctx, cl, id, "AskUser", `{questions: [{question: "Which environment?", header: "Env", options: [{label: staging, description: "safe"}, {label: production, description: "careful"}]}]}`)
	ps := waitPending(t, cl, id, 1)
	if p := ps[0]; p.Kind != workflows.PendingExternal || p.Tool != client.AskUserTool || p.CallID != "c1" {
		t.Fatalf("pending = %+v", p)
	}

	bad, err := client.AskUserAnswerFrom(ps[0].Input, []string{"prod"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.AnswerAskUser(ctx, id, "c1", bad, "alice"); !errors.Is(err, client.ErrInvalidAnswer) || !strings.Contains(err.Error(), `no option "prod"`) {
		t.Fatalf("unknown label: err = %v, want ErrInvalidAnswer", err)
	}
	// Nothing was sent: no update in history, the call is still open.
	for _, e := range history(t, id) {
		if e.GetWorkflowExecutionUpdateAdmittedEventAttributes() != nil || e.GetWorkflowExecutionUpdateAcceptedEventAttributes() != nil {
			t.Fatalf("an update reached the workflow: %v", e)
		}
	}
	if _, err := cl.PendingCall(ctx, id, "c1"); err != nil {
		t.Fatalf("call no longer pending after a rejected answer: %v", err)
	}
	if _, err := cl.AnswerAskUser(ctx, id, "nope", bad, "alice"); !errors.Is(err, client.ErrNoPendingCall) {
		t.Fatalf("unknown call: err = %v, want ErrNoPendingCall", err)
	}

	good, err := client.AskUserAnswerFrom(ps[0].Input, []string{"staging"}, []string{"after 5pm"})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := cl.AnswerAskUser(ctx, id, "c1", good, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if ack.CallID != "c1" || ack.Status != "completed" {
		t.Errorf("ack = %+v", ack)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != 1 || rs[0].IsError || rs[0].ToolName != client.AskUserTool ||
		rs[0].Content != "The user answered:\n- Which environment? → staging; other: after 5pm" || res.Answer != "finished" {
		t.Fatalf("tool results = %+v, answer %q", rs, res.Answer)
	}
	// The update the workflow accepted carries the answer as metadata in
	// the AskUserAnswer shape, and who gave it.
	var got workflows.ExternalResult
	for _, e := range history(t, id) {
		if a := e.GetWorkflowExecutionUpdateAcceptedEventAttributes(); a != nil {
			if err := json.Unmarshal(a.GetAcceptedRequest().GetInput().GetArgs().GetPayloads()[0].GetData(), &got); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := json.Marshal(got.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	var meta tools.AskUserAnswer
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	if got.By != "alice" || len(meta.Answers) != 1 || meta.Answers[0].Question != "Which environment?" ||
		len(meta.Answers[0].Selected) != 1 || meta.Answers[0].Selected[0] != "staging" ||
		meta.Answers[0].Other == nil || *meta.Answers[0].Other != "after 5pm" {
		t.Fatalf("recorded external result = %+v (metadata %s)", got, b)
	}
	if err := tools.ValidateAskUserAnswer(ps[0].Input, meta); err != nil {
		t.Errorf("recorded metadata is not a valid answer: %v", err)
	}
}

// echoJob is a batch job whose one Bash call appends its id to ran.txt.
func echoJob(t *testing.T, id string) client.Job {
	s := fmt.Sprintf("steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"echo %s >> ran.txt\"}}]\n  - text: done %s\n", id, id)
	return client.Job{ID: id, Input: workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, s)},
		Permission: permission.Context{Mode: permission.ModeBypass}}}
}

// TestBatchRunTwiceStartsNothingTwice runs a small batch in process, then
// the same batch again: the second run only collects the finished turns.
func TestBatchRunTwiceStartsNothingTwice(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 60*time.Second)
	tg := tag()
	var jobs []client.Job
	for i := range 6 {
		jobs = append(jobs, echoJob(t, fmt.Sprintf("rb%s-%d", tg, i)))
	}
	if _, err := cl.RunBatch(ctx, append(jobs, jobs[0]), client.BatchOptions{}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("duplicate job ids: err = %v", err)
	}
	var mu sync.Mutex
	var progress []client.BatchProgress
	var onResult int
	opts := client.BatchOptions{Concurrency: 3, ProgressEvery: 20 * time.Millisecond,
		Progress: func(p client.BatchProgress) { mu.Lock(); progress = append(progress, p); mu.Unlock() },
		OnResult: func(client.JobResult) { onResult++ }}
	first, err := cl.RunBatch(ctx, jobs, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range first {
		if r.ID != jobs[i].ID || r.WorkflowID != client.BatchWorkflowID(jobs[i].ID) || r.Status != client.JobCompleted ||
			r.Existing || r.Answer != "done "+r.ID || r.ToolCalls != 1 || r.ToolErrors != 0 {
			t.Errorf("first run, job %d: %+v", i, r)
		}
	}
	mu.Lock()
	last := progress[len(progress)-1]
	for _, p := range progress {
		if p.Running > 3 {
			t.Errorf("progress %+v: more than 3 in flight", p)
		}
	}
	mu.Unlock()
	if last != (client.BatchProgress{Total: 6, Started: 6, Done: 6}) || onResult != 6 {
		t.Errorf("final progress %+v, %d results reported", last, onResult)
	}

	second, err := cl.RunBatch(ctx, jobs, client.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range second {
		if r.Status != client.JobCompleted || !r.Existing || r.Answer != first[i].Answer {
			t.Errorf("second run, job %d: %+v", i, r)
		}
	}
	ran := readLines(t, filepath.Join(workdir, "ran.txt"))
	if len(ran) != 6 {
		t.Errorf("ran.txt has %d lines, want 6 (nothing re-ran): %q", len(ran), ran)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

// TestBatchProcessesSIGKILLed runs 200 jobs with `starter batch` against a
// worker process, SIGKILLs both once about 50 calls ran, restarts the
// worker and re-runs the same command: all jobs end, no turn is started
// twice, no call runs twice, and the side effects match the results.
func TestBatchProcessesSIGKILLed(t *testing.T) {
	wbin, sbin := buildWorker(t), buildStarter(t)
	const total, killAfter = 200, 50
	queue := "tq-batch-kill-" + tag()
	workdir, dir := t.TempDir(), t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := tag()
	var lines strings.Builder
	ids := make([]string, total)
	for i := range total {
		ids[i] = fmt.Sprintf("job%s-%d", tg, i)
		fmt.Fprintf(&lines, `{"id": %q, "mode": "bypass", "script_inline": {"steps": [{"tool_calls": [{"id": "c1", "name": "Bash", "input": {"command": "echo %s >> ran.txt"}}]}, {"text": "done %s"}]}}`+"\n", ids[i], ids[i], ids[i])
	}
	jobsFile, resultsFile := filepath.Join(dir, "jobs.jsonl"), filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(jobsFile, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ranFile := filepath.Join(workdir, "ran.txt")
	worker := func() *exec.Cmd {
		return startProcess(t, wbin, workdir, "--config", cfg, "--temporal-address", env.srv.Addr(), "--namespace", "default",
			"--task-queue", queue, "--metrics-addr", "off", "--workdir", workdir)
	}
	batchArgs := []string{"batch", "--file", jobsFile, "--concurrency", "10", "--results", resultsFile,
		"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default", "--task-queue", queue,
		"--live-policy", "warden-policy-" + queue} // a store of its own in the shared namespace

	ctx := ctxT(t, 10*time.Minute)
	w := worker()
	start := time.Now()
	b := startProcess(t, sbin, dir, batchArgs...)
	waitFor(t, ctx, func() bool { return len(readLines(t, ranFile)) >= killAfter })
	killProcess(t, w)
	killProcess(t, b)
	atKill := readLines(t, ranFile)
	t.Logf("SIGKILLed worker and batch after %s with %d of %d calls run", time.Since(start).Round(time.Millisecond), len(atKill), total)
	if _, err := os.Stat(resultsFile); err == nil {
		t.Fatal("results file written before the batch finished")
	}

	w = worker()
	defer killProcess(t, w)
	restart := time.Now()
	// A model call in flight at the kill holds its turn until the model
	// activity's 5-minute start-to-close timeout: it has no heartbeat
	// timeout (tool calls do, 10 s), so the re-run may take that long.
	rctx, cancel := context.WithTimeout(ctx, 7*time.Minute)
	defer cancel()
	rerun := exec.CommandContext(rctx, sbin, batchArgs...)
	rerun.Dir = dir
	var stderr strings.Builder
	rerun.Stderr = &stderr
	if err := rerun.Run(); err != nil {
		t.Errorf("re-run: %v\n%s", err, lastLine(stderr.String()))
		describeOpen(t, queue)
		t.FailNow()
	}
	progress := strings.Count(stderr.String(), "batch: ")
	t.Logf("re-run finished the batch in %s (%d progress lines); last: %s", time.Since(restart).Round(time.Millisecond),
		progress, lastLine(stderr.String()))
	if progress == 0 {
		t.Error("no progress lines on stderr")
	}

	// Every job has exactly one terminal result.
	results := map[string]client.JobResult{}
	f, err := os.Open(resultsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var existing, toolErrors int
	for sc.Scan() {
		var r client.JobResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if _, dup := results[r.ID]; dup {
			t.Errorf("job %s has two results", r.ID)
		}
		results[r.ID] = r
		if r.Status != client.JobCompleted || r.WorkflowID != "batch-"+r.ID || r.Answer != "done "+r.ID || r.ToolCalls != 1 {
			t.Errorf("result %+v", r)
		}
		if r.Existing {
			existing++
		}
		toolErrors += r.ToolErrors
	}
	if len(results) != total {
		t.Fatalf("%d results, want %d", len(results), total)
	}
	// Each call ran at most once; every call reported ok ran; a call
	// reported failed was interrupted by the kill (at most once: it is
	// not re-run), and may or may not have written before it died.
	ran := readLines(t, ranFile)
	count := map[string]int{}
	for _, id := range ran {
		count[id]++
		if count[id] == 2 {
			t.Errorf("%s ran twice", id)
		}
		if _, ok := results[id]; !ok {
			t.Errorf("ran.txt has unknown id %q", id)
		}
	}
	var ok, interruptedRan int
	for id, r := range results {
		switch {
		case r.ToolErrors == 0:
			ok++
			if count[id] != 1 {
				t.Errorf("job %s reported ok but its call did not run", id)
			}
		case count[id] == 1:
			interruptedRan++
		}
	}
	t.Logf("%d lines in ran.txt, %d jobs ok, %d tool errors (%d of them had written), %d of %d results found their turn existing",
		len(ran), ok, toolErrors, interruptedRan, existing, total)
	if len(ran) != ok+interruptedRan {
		t.Errorf("ran.txt has %d ids, want %d ok + %d interrupted", len(ran), ok, interruptedRan)
	}
	// Jobs that had run before the kill were started by the first run.
	for _, id := range atKill {
		if !results[id].Existing {
			t.Errorf("job %s ran before the kill but the re-run did not find its turn", id)
		}
	}
	// Exactly one workflow run per job on this queue.
	runs := map[string]int{}
	var token []byte
	for {
		resp, err := env.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("TaskQueue = '%s'", queue), NextPageToken: token, PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetExecutions() {
			runs[e.GetExecution().GetWorkflowId()]++
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	for _, id := range ids {
		if runs["batch-"+id] != 1 {
			t.Errorf("workflow batch-%s has %d runs, want 1", id, runs["batch-"+id])
		}
	}
	// The batch's policy store (made by batch, on the same queue) is not
	// a job's turn.
	if runs["warden-policy-"+queue] != 1 {
		t.Errorf("the batch's policy store has %d runs, want 1", runs["warden-policy-"+queue])
	}
	delete(runs, "warden-policy-"+queue)
	if len(runs) != total {
		t.Errorf("%d workflows on the queue, want %d", len(runs), total)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// startProcess starts bin in dir in its own process group; its output
// goes to the test's stderr.
func startProcess(t *testing.T, bin, dir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// killProcess SIGKILLs a process group started by startProcess and reaps
// it; killing one already gone is fine.
func killProcess(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
}

// describeOpen logs what the still-running turns of a queue wait on.
func describeOpen(t *testing.T, queue string) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	resp, err := env.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running'", queue)})
	if err != nil {
		t.Log(err)
		return
	}
	for _, e := range resp.GetExecutions() {
		id := e.GetExecution().GetWorkflowId()
		d, err := env.c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Log(err)
			continue
		}
		t.Logf("still running: %s: pending activities %v, workflow task %v", id, d.GetPendingActivities(), d.GetPendingWorkflowTask())
		for _, h := range history(t, id) {
			t.Logf("  %d %v %v", h.GetEventId(), h.GetEventType(), h.GetEventTime().AsTime().Format("15:04:05.000"))
		}
	}
}
