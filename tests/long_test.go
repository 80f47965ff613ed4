package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/activities/compact"
	"github.com/wardenhq/warden/bench"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/content/s3store"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// catScript is a scripted session of n steps, each a read-only cat of
// big.txt, then a final answer.
func catScript(t *testing.T, n int) *model.Script {
	var b strings.Builder
	b.WriteString("steps:\n")
	for range n {
		b.WriteString("  - tool_calls: [{name: Bash, input: {command: \"cat big.txt\"}}]\n")
	}
	b.WriteString("  - text: session complete\n")
	return script(t, b.String())
}

// bigFile writes a file of size bytes of text lines into dir.
func bigFile(t *testing.T, dir string, size int) string {
	t.Helper()
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "line %06d of the big file, padded to look like real output .........\n", i)
	}
	data := b.String()[:size]
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

// runChain returns the events of every run of a workflow, first run first
// (following continue-as-new).
func runChain(t *testing.T, id, firstRun string) [][]*historypb.HistoryEvent {
	t.Helper()
	var runs [][]*historypb.HistoryEvent
	for run := firstRun; run != ""; {
		var evs []*historypb.HistoryEvent
		it := env.c.GetWorkflowHistory(context.Background(), id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		next := ""
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
			if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
			}
		}
		runs = append(runs, evs)
		run = next
	}
	return runs
}

// modelSteps returns what history records of each model call: a
// regular activity's input, or a local activity's result (scripted model
// steps are local activities, with a regular one every few steps; a
// local activity's input is not in history at all).
func modelSteps(runs [][]*historypb.HistoryEvent) []bench.ModelStep {
	var out []bench.ModelStep
	for _, evs := range runs {
		for _, ev := range evs {
			if m, ok := bench.ModelStepOf(ev); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func historyBytes(runs [][]*historypb.HistoryEvent) int {
	n := 0
	for _, evs := range runs {
		for _, ev := range evs {
			n += ev.Size()
		}
	}
	return n
}

// TestLongSession300Steps: a session of 300 steps, each reading a 60 KB
// file, runs to its end on the real server. The conversation (18 MB)
// lives in the content store: what history records of every model call
// has the same small size whatever the step, the whole history stays far below
// one step's output per step, and the turn continues as new on the way.
func TestLongSession300Steps(t *testing.T) {
	const steps, size = 300, 60 << 10
	workdir := t.TempDir()
	data := bigFile(t, workdir, size)
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 5*time.Minute)
	id := "long-" + fmt.Sprint(time.Now().UnixNano())
	run, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: catScript(t, steps), Local: true},
		Permission: permission.Context{Mode: permission.ModeDefault}, ContinueAsNewAfter: 300})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "session complete" || res.Iterations != steps+1 || res.ToolCalls != steps || res.Stopped != "" {
		t.Fatalf("result: answer %q, %d iterations, %d calls, stopped %q", res.Answer, res.Iterations, res.ToolCalls, res.Stopped)
	}
	rs := toolResults(res)
	if len(rs) != steps {
		t.Fatalf("%d tool results in the stored conversation, want %d", len(rs), steps)
	}
	// Bash keeps the first 30,000 characters of an output (its own limit);
	// every step's result is that, whole, read back from the store.
	for i, r := range rs {
		if r.IsError || r.Content != rs[0].Content || len(r.Content) < 30_000 || !strings.HasPrefix(data, r.Content[:20_000]) {
			t.Fatalf("result %d: error %v, %d bytes", i, r.IsError, len(r.Content))
		}
	}
	runs := runChain(t, id, run.GetRunID())
	if len(runs) < 2 {
		t.Errorf("the session ran in %d run(s); with continue_as_new_after 300 it should have continued as new", len(runs))
	}
	ms := modelSteps(runs)
	if len(ms) != steps+1 {
		t.Fatalf("%d model calls in history, want %d", len(ms), steps+1)
	}
	// After the first call (which carries the prompt), what history
	// records of each model call has the same size, separately for regular
	// calls (the head and one step's tool result preview) and local ones
	// (the new head and the reply): it does not grow with the session.
	var lo, hi [2]int
	for _, m := range ms[1:] {
		k := 0
		if m.Local {
			k = 1
		}
		if lo[k] == 0 || m.Bytes < lo[k] {
			lo[k] = m.Bytes
		}
		hi[k] = max(hi[k], m.Bytes)
	}
	for k, name := range []string{"regular", "local"} {
		if hi[k] > 4096 || hi[k]-lo[k] > 64 {
			t.Errorf("%s model calls record %d..%d bytes; want constant and small", name, lo[k], hi[k])
		}
	}
	total := historyBytes(runs)
	t.Logf("%d steps of %d bytes: history %d bytes in %d runs (%d bytes/step); model calls record %d..%d (regular) and %d..%d (local) bytes",
		steps, size, total, len(runs), total/steps, lo[0], hi[0], lo[1], hi[1])
	if per := total / steps; per > 16<<10 {
		t.Errorf("history grows by %d bytes per step; the tool output must stay out of it", per)
	}
}

// TestLongSessionWorkerKilled: the worker process is SIGKILLed in the
// middle of a long session; a new worker (with an empty cache) resumes
// from the stored conversation and the session completes with every
// result in place.
func TestLongSessionWorkerKilled(t *testing.T) {
	const steps = 150
	bin := buildWorker(t)
	workdir := t.TempDir()
	data := bigFile(t, workdir, 60<<10)
	queue := "tq-longkill-" + fmt.Sprint(time.Now().UnixNano())
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() *os.Process {
		cmd := startProcess(t, bin, workdir, "--config", cfg, "--temporal-address", env.srv.Addr(), "--namespace", "default",
			"--task-queue", queue, "--metrics-addr", "off", "--workdir", workdir)
		t.Cleanup(func() { killProcess(t, cmd) })
		return cmd.Process
	}
	proc := start()
	ctx := ctxT(t, 5*time.Minute)
	cl := startWorkerless(queue)
	id := "longkill-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: catScript(t, steps)},
		Permission: permission.Context{Mode: permission.ModeDefault}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		s, err := cl.State(ctx, id)
		return err == nil && s.ToolCalls >= steps/2
	})
	if err := syscall.Kill(-proc.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start()
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if res.Answer != "session complete" || len(rs) != steps {
		t.Fatalf("answer %q with %d tool results, want %d", res.Answer, len(rs), steps)
	}
	for i, r := range rs {
		if r.IsError || r.Content != rs[0].Content || !strings.HasPrefix(data, r.Content[:20_000]) {
			t.Fatalf("result %d after the crash: error %v, %d bytes", i, r.IsError, len(r.Content))
		}
	}
}

// TestMissingContentFailsClearly: a turn whose stored conversation is
// gone (deleted by hand here) fails at its next model call with a reason
// that names what is missing, after one attempt: no retry loop.
func TestMissingContentFailsClearly(t *testing.T) {
	cl := startWorker(t, warden.Options{ContentCacheBytes: -1})
	ctx := ctxT(t, 60*time.Second)
	id := "missing-" + fmt.Sprint(time.Now().UnixNano())
	s := script(t, `
steps:
  - tool_calls: [{name: Bash, input: {command: "echo first"}}]
  - tool_calls: [{name: Bash, input: {command: "touch made-here"}}]
  - text: never
`)
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	if err := env.store.DeleteTurn(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: ps[0].CallID, Decision: workflows.DecisionAllow, Hash: ps[0].Hash, By: "t"}); err != nil {
		t.Fatal(err)
	}
	_, err := cl.Result(ctx, id)
	if err == nil || !strings.Contains(err.Error(), "type: ContentMissing, retryable: false") || !strings.Contains(err.Error(), "conversation content missing") {
		t.Fatalf("turn ended with %v; want a ContentMissing failure", err)
	}
	attempts := 0
	for _, ev := range history(t, id) {
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			attempts = max(attempts, int(a.GetAttempt()))
		}
	}
	if attempts != 1 {
		t.Errorf("an activity ran %d attempts; a missing blob must not be retried", attempts)
	}
	page, err := cl.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := page.Events[len(page.Events)-1]; last.Type != workflows.EventFailed || !strings.Contains(last.Text, "missing") {
		t.Errorf("last event %+v; want the failure's reason", last)
	}
}

// TestOversizeContentFailsCleanly: a tool result over the limit is a tool
// error the model reads (the turn goes on), and a tool call input over
// the limit ends the turn with a reason, each without retries.
func TestOversizeContentFailsCleanly(t *testing.T) {
	// A function tool's output has no limit of its own (Bash and Read cut
	// theirs), so this one can return 2 MB.
	dump, err := tools.Func("Dump", "Returns n bytes.", func(_ context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		return strings.Repeat("a", in.N), nil
	}, tools.WithReadOnly(true), tools.WithAllow())
	if err != nil {
		t.Fatal(err)
	}
	cl := startWorker(t, warden.Options{Tools: []tools.Tool{dump}, MaxResultBytes: 1 << 20, MaxCallInputBytes: 64 << 10})
	ctx := ctxT(t, 60*time.Second)
	id := "oversize-" + fmt.Sprint(time.Now().UnixNano())
	s := script(t, `
steps:
  - tool_calls: [{name: Dump, input: {n: 2000000}}]
  - text: the model read the error
`)
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if res.Answer != "the model read the error" || len(rs) != 1 || !rs[0].IsError ||
		!strings.Contains(rs[0].Content, "Tool result too large: 2000000 bytes") {
		t.Fatalf("answer %q, %d results, first %.300q", res.Answer, len(rs), fmt.Sprint(rs))
	}

	id = "oversize-input-" + fmt.Sprint(time.Now().UnixNano())
	s = &model.Script{Steps: []model.Step{{ToolCalls: []model.ScriptedCall{{Name: "Write",
		Input: map[string]any{"file_path": "/tmp/never-written", "content": strings.Repeat("x", 100<<10)}}}}, {Text: "never"}}}
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	_, err = cl.Result(ctx, id)
	if err == nil || !strings.Contains(err.Error(), "type: ContentTooLarge, retryable: false") || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("turn ended with %v; want a ContentTooLarge failure", err)
	}
	for _, ev := range history(t, id) {
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() > 1 {
			t.Errorf("attempt %d: an oversize reply must not be retried", a.GetAttempt())
		}
	}
}

// TestCompactionTrimAndSummarize: a session that outgrows the scripted
// model's (small) window is compacted before model calls; the compaction
// is an event, the compacted conversation is what the turn continues
// with, and the original content stays in the store.
func TestCompactionTrimAndSummarize(t *testing.T) {
	for _, strategy := range []string{compact.Trim, compact.Summarize} {
		t.Run(strategy, func(t *testing.T) {
			workdir := t.TempDir()
			data := bigFile(t, workdir, 10<<10)
			cl := startWorker(t, warden.Options{Workdir: workdir, Compaction: map[string]compact.Config{
				"scripted": {Compaction: config.Compaction{ContextWindow: 25_000, Strategy: strategy, KeepRecent: 4}}}})
			ctx := ctxT(t, 2*time.Minute)
			id := "compact-" + strategy + fmt.Sprint(time.Now().UnixNano())
			if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: catScript(t, 20)},
				Permission: permission.Context{Mode: permission.ModeDefault}}); err != nil {
				t.Fatal(err)
			}
			res, err := cl.Result(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			page, err := cl.Events(ctx, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			compactions := 0
			for _, e := range page.Events {
				if e.Type == workflows.EventCompacted {
					compactions++
				}
			}
			if compactions == 0 || res.Answer != "session complete" {
				t.Fatalf("%d compactions, answer %q", compactions, res.Answer)
			}
			conv, err := cl.Conversation(ctx, env.store, id, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(conv.Compactions) == 0 {
				t.Fatal("the stored conversation records no compaction")
			}
			if n := compact.Tokens("", conv.Messages, nil); n > 25_000 {
				t.Errorf("the conversation the model saw last has ~%d tokens, over the window", n)
			}
			marker := "trimmed to save context"
			if strategy == compact.Summarize {
				marker = "Summary of"
			}
			if !strings.Contains(fmt.Sprint(conv.Messages), marker) {
				t.Errorf("no %q in the compacted conversation", marker)
			}
			// The original conversation before the first compaction keeps
			// every result whole.
			orig, err := cl.Conversation(ctx, env.store, id, conv.Compactions[0].From)
			if err != nil {
				t.Fatal(err)
			}
			whole := 0
			for _, m := range orig.Messages {
				if m.Role == model.RoleTool && m.Content == data {
					whole++
				}
			}
			if whole < 3 {
				t.Errorf("the original conversation has %d whole results", whole)
			}
		})
	}
}

// TestTwoWorkersShareS3Store: two worker processes on one task queue keep
// content in one S3 bucket (an S3-protocol server in the test); one is
// SIGKILLed mid-session, the other finishes it, reading what the first
// stored.
func TestTwoWorkersShareS3Store(t *testing.T) {
	const steps = 80
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	defer srv.Close()
	bucket := "warden-shared"
	s3c := config.S3{Endpoint: srv.URL, Bucket: bucket, PathStyle: true, AccessKey: "k", SecretKey: "s"}
	store, err := s3store.New(s3c)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	bin := buildWorker(t)
	workdir := t.TempDir()
	data := bigFile(t, workdir, 20<<10)
	queue := "tq-s3-" + fmt.Sprint(time.Now().UnixNano())
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	yaml := fmt.Sprintf("content:\n  store: s3\n  s3: {endpoint: %q, bucket: %q, path_style: true}\n", srv.URL, bucket)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	start := func() *os.Process {
		cmd := startProcess(t, bin, workdir, "--config", cfg, "--temporal-address", env.srv.Addr(), "--namespace", "default",
			"--task-queue", queue, "--metrics-addr", "off", "--workdir", workdir)
		t.Cleanup(func() { killProcess(t, cmd) })
		return cmd.Process
	}
	first := start()
	start()
	ctx := ctxT(t, 5*time.Minute)
	cl := startWorkerless(queue)
	id := "s3-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: catScript(t, steps)},
		Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		s, err := cl.State(ctx, id)
		return err == nil && s.ToolCalls >= steps/2
	})
	if err := syscall.Kill(-first.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := cl.Conversation(ctx, store, id, "")
	if err != nil {
		t.Fatal(err)
	}
	results := 0
	for _, m := range conv.Messages {
		if m.Role == model.RoleTool {
			if m.Content != data {
				t.Fatalf("a result read back from S3 has %d bytes, want %d", len(m.Content), len(data))
			}
			results++
		}
	}
	if res.Answer != "session complete" || results != steps {
		t.Fatalf("answer %q with %d results in the bucket, want %d", res.Answer, results, steps)
	}
	ids := map[string]bool{}
	for _, ev := range history(t, id) {
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			ids[a.GetIdentity()] = true
		}
	}
	t.Logf("model calls ran on %d worker identities", len(ids))
	// GC keeps a turn the server still has.
	rep, err := client.New(env.c, queue).GC(ctx, store, client.GCOptions{})
	if err != nil || len(rep.Removed) != 0 {
		t.Fatalf("gc of a known turn: %+v %v", rep, err)
	}
	if _, err := (&content.Log{Store: store}).Head(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// TestStarterShowAndGC: `starter show` prints a turn's conversation from
// the store, and `starter gc --closed` removes a closed turn's content
// (after which show says there is none) while keeping running turns'.
func TestStarterShowAndGC(t *testing.T) {
	sbin := buildStarter(t)
	workdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(workdir, "notes.txt"), []byte("the secret of the notes file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 2*time.Minute)
	id := "show-" + fmt.Sprint(time.Now().UnixNano())
	s := script(t, `
steps:
  - text: reading the notes
    tool_calls: [{name: Bash, input: {command: "cat notes.txt"}}]
  - text: the notes are read
`)
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Prompt: "read my notes", Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default"}
	out, err := runStarter(t, sbin, t.TempDir(), append([]string{"show", id}, common...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"read my notes", "reading the notes", "the secret of the notes file", "the notes are read", "cat notes.txt"} {
		if !strings.Contains(out, want) {
			t.Errorf("starter show lacks %q:\n%s", want, out)
		}
	}
	out, err = runStarter(t, sbin, t.TempDir(), append([]string{"gc", "--closed", "--json"}, common...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"`+id+`"`) {
		t.Fatalf("gc did not remove %s: %s", id, out)
	}
	if _, err := runStarter(t, sbin, t.TempDir(), append([]string{"show", id}, common...)...); err == nil || !strings.Contains(err.Error(), "cannot provide") && !strings.Contains(err.Error(), "no stored conversation") {
		t.Fatalf("show after gc: %v", err)
	}
}

// TestInboxShowsConversation: the inbox resolves a waiting turn's
// conversation from the content store (plain text), for an approver whose
// roles cover the waiting call, and refuses one whose roles do not.
func TestInboxShowsConversation(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	hs, _ := serveInbox(t, cl)
	ctx := ctxT(t, 60*time.Second)
	id := "inbox-conv-" + fmt.Sprint(time.Now().UnixNano())
	s := script(t, `
steps:
  - text: first I look around
    tool_calls: [{name: Bash, input: {command: "echo the output of step one"}}]
  - tool_calls: [{name: Bash, input: {command: "touch made-by-the-agent"}}]
  - text: done
`)
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Prompt: "tidy the workspace", Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 1)
	get := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+"/conversation?workflow="+id, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("alice-token")
	for _, want := range []string{"tidy the workspace", "first I look around", "the output of step one", "touch made-by-the-agent"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("alice: %d, body lacks %q:\n%s", code, want, body)
		}
	}
	if code, body := get("kube-token"); code != http.StatusForbidden {
		t.Fatalf("kube (kubectl only) got %d: %s", code, body)
	}
}

// TestCountPendingFromVisibility: the pending-calls gauge's count comes
// from the search attributes alone and agrees with the turns' own lists,
// also after an answer.
func TestCountPendingFromVisibility(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	queue := "tq-" + t.Name()
	ctx := ctxT(t, 60*time.Second)
	one := script(t, "steps:\n  - tool_calls: [{name: Bash, input: {command: \"touch a\"}}]\n  - text: done\n")
	two := script(t, "steps:\n  - tool_calls: [{name: Bash, input: {command: \"touch b\"}}, {name: Bash, input: {command: \"touch c\"}}]\n  - text: done\n")
	ids := []string{"count-1-" + fmt.Sprint(time.Now().UnixNano()), "count-2-" + fmt.Sprint(time.Now().UnixNano())}
	for i, s := range []*model.Script{one, two} {
		if _, err := cl.Start(ctx, ids[i], workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
			t.Fatal(err)
		}
	}
	waitPending(t, cl, ids[0], 1)
	ps := waitPending(t, cl, ids[1], 2)
	waitFor(t, ctx, func() bool {
		n, err := cl.CountPending(ctx, queue)
		return err == nil && n == 3
	})
	if _, err := cl.Approve(ctx, ids[1], workflows.Approval{CallID: ps[0].CallID, Decision: workflows.DecisionDeny, Hash: ps[0].Hash, Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		n, err := cl.CountPending(ctx, queue)
		return err == nil && n == 2
	})
}

// TestStarterRunExitStatus: `starter run` exits 0 when the turn answers
// and non-zero, saying why, when it stops at the iteration bound.
func TestStarterRunExitStatus(t *testing.T) {
	sbin := buildStarter(t)
	startWorker(t, warden.Options{})
	dir := t.TempDir()
	scriptFile := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scriptFile, []byte("steps:\n  - tool_calls: [{name: Bash, input: {command: \"echo one\"}}]\n  - text: answered\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--script", scriptFile, "--mode", "bypass", "--config", cfg, "--address", env.srv.Addr(),
		"--namespace", "default", "--task-queue", "tq-" + t.Name(), "--no-live-policy"} // its worker has no Temporal client
	out, err := runStarter(t, sbin, dir, args...)
	if err != nil || !strings.Contains(out, "final answer: answered") {
		t.Fatalf("answered turn: %v\n%s", err, out)
	}
	out, err = runStarter(t, sbin, dir, append(args, "--max-iterations", "1")...)
	if err == nil || !strings.Contains(err.Error(), "stopped before answering: max_iterations after 1 model calls") {
		t.Fatalf("stopped turn: exit %v\n%s", err, out)
	}
}
