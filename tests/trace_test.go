package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/workflows"
)

// jaeger is a running Jaeger all-in-one (in-memory store, the default):
// its OTLP gRPC receiver and its query API (and UI) address.
type jaeger struct {
	otlp, query string
	out         *lockedBuffer
}

// jaegerBin is the Jaeger binary .ci/jaeger.sh built (WARDEN_JAEGER). The
// test fails without it when WARDEN_REQUIRE_JAEGER=1 (scripts/test.sh
// sets both once it is installed), else it skips.
func jaegerBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("WARDEN_JAEGER")
	if bin == "" {
		bin = filepath.Join(os.Getenv("HOME"), ".cache", "warden", "tools", "jaeger-v1.51.0", "jaeger")
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("WARDEN_REQUIRE_JAEGER") == "1" {
			t.Fatalf("jaeger not found at %s (run .ci/jaeger.sh): %v", bin, err)
		}
		t.Skipf("jaeger not installed (.ci/jaeger.sh builds it; WARDEN_REQUIRE_JAEGER=1 makes this a failure): %v", err)
	}
	return bin
}

// startJaeger runs Jaeger with OTLP and the query API on free ports.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := jaegerBin(t)
	grpcPort, httpPort, queryPort := freePort(t), freePort(t), freePort(t)
	j := &jaeger{otlp: fmt.Sprintf("127.0.0.1:%d", grpcPort), query: fmt.Sprintf("http://127.0.0.1:%d", queryPort), out: &lockedBuffer{}}
	// Every listener of the all-in-one on a free port of the loopback
	// address: OTLP (gRPC, HTTP), the query API and UI, and the ones the
	// test does not use (the collector's own protocols, the agent's UDP
	// ports, admin and sampling), so that runs beside it do not collide.
	hp := func(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
	args := []string{
		"--collector.otlp.enabled=true",
		"--collector.otlp.grpc.host-port=" + hp(grpcPort),
		"--collector.otlp.http.host-port=" + hp(httpPort),
		"--query.http-server.host-port=" + hp(queryPort),
		"--query.grpc-server.host-port=" + hp(freePort(t)),
		"--collector.grpc-server.host-port=" + hp(freePort(t)),
		"--collector.http-server.host-port=" + hp(freePort(t)),
		"--admin.http.host-port=" + hp(freePort(t)),
		"--http-server.host-port=" + hp(freePort(t)),
		"--processor.jaeger-compact.server-host-port=" + hp(freePort(t)),
		"--processor.jaeger-binary.server-host-port=" + hp(freePort(t)),
		"--processor.zipkin-compact.server-host-port=" + hp(freePort(t)),
		"--memory.max-traces=10000",
		"--log-level=warn",
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(noOTELEnv(), "SPAN_STORAGE_TYPE=memory", "OTEL_TRACES_EXPORTER=none") // Jaeger traces itself otherwise
	cmd.Stdout, cmd.Stderr = j.out, j.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killProcess(t, cmd) })
	ctx := ctxT(t, 60*time.Second)
	waitFor(t, ctx, func() bool {
		resp, err := http.Get(j.query + "/api/services")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return j
}

// jaegerSpan is a span as Jaeger's query API returns it.
type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"`
	Duration  int64 `json:"duration"`
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
}

func (s jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

type jaegerTrace struct {
	TraceID   string       `json:"traceID"`
	Spans     []jaegerSpan `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

// traces returns the traces of service whose spans have tag key=value.
func (j *jaeger) traces(t *testing.T, service, key, value string) []jaegerTrace {
	t.Helper()
	tags, _ := json.Marshal(map[string]string{key: value})
	q := url.Values{"service": {service}, "tags": {string(tags)}, "limit": {"100"}, "lookback": {"1h"}}
	return j.get(t, "/api/traces?"+q.Encode())
}

func (j *jaeger) trace(t *testing.T, id string) jaegerTrace {
	t.Helper()
	ts := j.get(t, "/api/traces/"+id)
	if len(ts) != 1 {
		t.Fatalf("trace %s: %d traces", id, len(ts))
	}
	return ts[0]
}

func (j *jaeger) get(t *testing.T, path string) []jaegerTrace {
	t.Helper()
	resp, err := http.Get(j.query + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data []jaegerTrace `json:"data"`
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("jaeger %s: %v", path, err)
	}
	return body.Data
}

// traceWorker is a cmd/worker process joining the tests' server on its
// own queue with the config file cfg.
type traceWorker struct {
	cmd *exec.Cmd
	out *lockedBuffer
}

func startTraceWorker(t *testing.T, bin, cfg, queue, workdir, data string) *traceWorker {
	t.Helper()
	w := &traceWorker{out: &lockedBuffer{}}
	w.cmd = exec.Command(bin, "--config", cfg, "--data-dir", data, "--temporal-address", env.srv.Addr(), "--namespace", "default",
		"--task-queue", queue, "--metrics-addr", "off", "--workdir", workdir)
	w.cmd.Dir = workdir
	// Spans leave within 200 ms rather than the default 5 s, so that
	// few are lost with the SIGKILL below.
	w.cmd.Env = append(noOTELEnv(), "OTEL_BSP_SCHEDULE_DELAY=200")
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			_ = w.cmd.Process.Signal(syscall.SIGTERM)
			_ = w.cmd.Wait()
		}
	})
	ctx := ctxT(t, 90*time.Second)
	waitFor(t, ctx, func() bool { return strings.Contains(w.out.String(), "worker           task queue") })
	return w
}

// noOTELEnv is this process's environment without OTEL_ variables, so
// that only the config file turns traces on.
func noOTELEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			out = append(out, kv)
		}
	}
	return out
}

// traceTurnScript calls an allowed tool (echo), then one that asks
// (touch), then ends.
const traceTurnScript = `steps:
  - tool_calls: [{id: c1, name: Bash, input: {command: "echo traced"}}]
  - tool_calls: [{id: c2, name: Bash, input: {command: "touch approved.txt"}}]
  - text: done
`

// traceSetup writes the config (telemetry as given), the policy and the
// script of a traced turn.
func traceSetup(t *testing.T, telemetry string) (cfg, rules, scriptFile, dir string) {
	t.Helper()
	dir = t.TempDir()
	cfg = filepath.Join(dir, "warden.yaml")
	body := contentConfig() + "turn: {continue_as_new_after: 12}\n" + telemetry
	rules = filepath.Join(dir, "rules.yaml")
	scriptFile = filepath.Join(dir, "script.yaml")
	for p, b := range map[string]string{cfg: body, rules: "allow: [\"Bash(echo:*)\"]\n", scriptFile: traceTurnScript} {
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cfg, rules, scriptFile, dir
}

// TestTraceTurnInJaeger runs the real worker with telemetry.otlp pointing
// at a real Jaeger, starts a turn with `starter run`, continues it as new
// and SIGKILLs the worker while its approval waits, answers with
// `starter approvals approve` on a restarted worker, and reads the
// turn's one trace back from Jaeger's API: the starter's span, the
// model calls, decisions, tool calls and one approval wait with its
// approver, none of them twice; a second turn's budget approval, raised
// with the CLI, is one approval wait of kind budget. The control: a worker and starter with
// no telemetry section send Jaeger nothing.
func TestTraceTurnInJaeger(t *testing.T) {
	j := startJaeger(t)
	wbin, sbin := buildWorker(t), buildStarter(t)
	cfg, rules, scriptFile, dir := traceSetup(t, fmt.Sprintf("telemetry:\n  otlp: {endpoint: %q, insecure: true}\n", j.otlp))
	queue, workdir, data := "tq-trace-"+tag(), t.TempDir(), t.TempDir()
	w := startTraceWorker(t, wbin, cfg, queue, workdir, data)
	id := "trace-" + tag()
	common := []string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default", "--task-queue", queue}
	if out, err := runStarterEnv(t, sbin, dir, append([]string{"run", "--script", scriptFile, "--rules", rules, "--workflow-id", id,
		"--detach", "--no-live-policy", "--workdir", workdir}, common...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cl := startWorkerless(queue)
	ps := waitPending(t, cl, id, 1)
	if ps[0].CallID != "c2" {
		t.Fatalf("pending %+v, want c2", ps)
	}
	ctx := ctxT(t, 3*time.Minute)
	first := ""
	waitFor(t, ctx, func() bool { // the wait continues as new (history over 12 events)
		d, err := env.c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return false
		}
		run := d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		if first == "" {
			first = d.GetWorkflowExecutionInfo().GetFirstRunId()
		}
		return run != first
	})
	// A SIGKILLed worker loses the spans its batcher still holds: the
	// kill waits until Jaeger has c2's decision, the last span the first
	// worker makes, and the parent of each of warden's spans there (a
	// loaded machine exports a workflow task's span after its children).
	waitFor(t, ctx, func() bool {
		trs := j.traces(t, "warden-worker", "warden.turn", id)
		if len(trs) == 0 {
			return false
		}
		spans := j.trace(t, trs[0].TraceID).Spans
		byID := map[string]bool{}
		for _, s := range spans {
			byID[s.SpanID] = true
		}
		decided := false
		for _, s := range spans {
			if strings.HasPrefix(s.OperationName, "warden.") && !byID[s.parent()] {
				return false
			}
			decided = decided || s.OperationName == "warden.decision" && s.tag("warden.call_id") == "c2"
		}
		return decided
	})
	killProcess(t, w.cmd)
	w2 := startTraceWorker(t, wbin, cfg, queue, workdir, data)
	if out, err := runStarterEnv(t, sbin, dir, append([]string{"approvals", "approve", id, "c2", "--by", "alice"}, common...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	res, err := cl.Result(ctx, id)
	if err != nil || res.Answer != "done" {
		t.Fatalf("result %+v, %v", res, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker:\n%s\njaeger:\n%s", w2.out.String(), j.out.String())
		}
	})
	tr := waitTrace(t, j, id)
	checkTurnTrace(t, tr, id)
	screenshotTrace(t, j, tr.TraceID)

	// A budget approval's wait is traced as an approval's: a turn whose
	// budget (one tool call) stops its second call, raised by alice.
	bscript := filepath.Join(dir, "budget.yaml")
	writeFile(t, bscript, "steps:\n  - tool_calls: [{id: b1, name: Bash, input: {command: \"echo one\"}}]\n"+
		"  - tool_calls: [{id: b2, name: Bash, input: {command: \"echo two\"}}]\n  - text: done\n", 0o644)
	bid := "trace-budget-" + tag()
	if out, err := runStarterEnv(t, sbin, dir, append([]string{"run", "--script", bscript, "--rules", rules, "--workflow-id", bid,
		"--detach", "--no-live-policy", "--workdir", workdir, "--budget", "tool_calls=1"}, common...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	bps := waitPending(t, cl, bid, 1)
	if bps[0].Kind != workflows.PendingBudget {
		t.Fatalf("budget turn: pending %+v, want a budget approval", bps)
	}
	if out, err := runStarterEnv(t, sbin, dir, append([]string{"approvals", "approve", bid, bps[0].CallID, "--by", "alice", "--raise", "tool_calls=+1"}, common...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res, err := cl.Result(ctx, bid); err != nil || res.Answer != "done" {
		t.Fatalf("budget turn: result %+v, %v", res, err)
	}
	checkBudgetWait(t, j, bid, bps[0].CallID)

	// Control: no telemetry section, no OTEL_ variables: nothing in Jaeger.
	ccfg, crules, cscript, cdir := traceSetup(t, "")
	cqueue := "tq-trace-off-" + tag()
	startTraceWorker(t, wbin, ccfg, cqueue, t.TempDir(), t.TempDir())
	cid := "trace-off-" + tag()
	ccommon := []string{"--config", ccfg, "--address", env.srv.Addr(), "--namespace", "default", "--task-queue", cqueue}
	if out, err := runStarterEnv(t, sbin, cdir, append([]string{"run", "--script", cscript, "--rules", crules, "--workflow-id", cid,
		"--detach", "--no-live-policy"}, ccommon...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ccl := startWorkerless(cqueue)
	waitPending(t, ccl, cid, 1)
	if out, err := runStarterEnv(t, sbin, cdir, append([]string{"approvals", "approve", cid, "c2", "--by", "alice"}, ccommon...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res, err := ccl.Result(ctx, cid); err != nil || res.Answer != "done" {
		t.Fatalf("control result %+v, %v", res, err)
	}
	time.Sleep(2 * time.Second) // the batcher's delay, had anything been sent
	for _, svc := range []string{"warden-worker", "warden-starter"} {
		for _, key := range []string{"warden.turn", "temporalWorkflowID"} {
			if ts := j.traces(t, svc, key, cid); len(ts) > 0 {
				t.Errorf("control turn %s: %d traces of %s in Jaeger, want none", cid, len(ts), svc)
			}
		}
	}
}

// checkBudgetWait waits for the budget approval callID of turn id in
// Jaeger: one warden.approval_wait span of kind budget, by alice, allowed.
func checkBudgetWait(t *testing.T, j *jaeger, id, callID string) {
	t.Helper()
	ctx := ctxT(t, 60*time.Second)
	var waits []jaegerSpan
	waitFor(t, ctx, func() bool {
		waits = nil
		for _, tr := range j.traces(t, "warden-worker", "warden.turn", id) {
			for _, s := range j.trace(t, tr.TraceID).Spans {
				if s.OperationName == workflows.SpanApprovalWait {
					waits = append(waits, s)
				}
			}
		}
		return len(waits) > 0
	})
	if len(waits) != 1 {
		t.Fatalf("budget turn: %d approval waits, want 1", len(waits))
	}
	s := waits[0]
	if s.tag("warden.call_id") != callID || s.tag("warden.approval.kind") != string(workflows.PendingBudget) ||
		s.tag("warden.approval.by") != "alice" || s.tag("warden.approval.decision") != "allow" || s.Duration <= 0 {
		t.Errorf("budget wait: call %q kind %q by %q decision %q duration %d µs", s.tag("warden.call_id"), s.tag("warden.approval.kind"),
			s.tag("warden.approval.by"), s.tag("warden.approval.decision"), s.Duration)
	}
}

// runStarterEnv is runStarter without OTEL_ variables.
func runStarterEnv(t *testing.T, bin, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, noOTELEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		err = fmt.Errorf("starter %s: %w", strings.Join(args, " "), err)
	}
	return string(out), err
}

// waitTrace waits until Jaeger holds the turn's trace with its final
// model call, and returns it whole.
func waitTrace(t *testing.T, j *jaeger, id string) jaegerTrace {
	t.Helper()
	ctx := ctxT(t, 60*time.Second)
	var tr jaegerTrace
	waitFor(t, ctx, func() bool {
		ts := j.traces(t, "warden-worker", "warden.turn", id)
		if len(ts) == 0 {
			if resp, err := http.Get(j.query + "/api/services"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Logf("no trace yet; services %s", b)
			}
			return false
		}
		if len(ts) > 1 {
			t.Fatalf("turn %s spans %d traces, want one", id, len(ts))
		}
		tr = j.trace(t, ts[0].TraceID)
		n := 0
		for _, s := range tr.Spans {
			if s.OperationName == "warden.model_call" {
				n++
			}
		}
		if n < 3 {
			var names []string
			for _, s := range tr.Spans {
				names = append(names, s.OperationName+"/"+s.tag("warden.call_id")+"@"+tr.Processes[s.ProcessID].ServiceName)
			}
			all := j.get(t, "/api/traces?service=warden-worker&limit=100&lookback=1h")
			t.Logf("trace %s: %d spans, %d model calls: %v; %d traces of warden-worker", tr.TraceID, len(tr.Spans), n, names, len(all))
		}
		return n >= 3
	})
	time.Sleep(time.Second) // late spans of the workflow's end
	return j.trace(t, tr.TraceID)
}

// checkTurnTrace checks the span tree of the turn's trace.
func checkTurnTrace(t *testing.T, tr jaegerTrace, id string) {
	t.Helper()
	byID := map[string]jaegerSpan{}
	count := map[string]int{}
	services := map[string]bool{}
	for _, s := range tr.Spans {
		byID[s.SpanID] = s
		// One span per name, call, activity and run: an activity id is
		// per run, and a RunWorkflow span per run.
		key := s.OperationName + "/" + s.tag("warden.call_id") + s.tag("temporalActivityID")
		if strings.HasPrefix(s.OperationName, "Run") {
			key += "@" + s.tag("temporalRunID")
		}
		count[key]++
		services[tr.Processes[s.ProcessID].ServiceName] = true
	}
	for k, n := range count {
		t.Logf("span %-60s x%d", k, n)
		// StartActivity spans name no activity, model calls no call and
		// continue-as-new spans one per run.
		// The SDK interceptor's RunWorkflow span is started each time a
		// worker loads the run (again after an eviction or a restart):
		// logged above, not warden's to deduplicate.
		if n > 1 && !strings.HasPrefix(k, "warden.model_call/") && !strings.HasPrefix(k, "StartActivity:") && !strings.HasPrefix(k, "RunWorkflow:") &&
			!strings.HasPrefix(k, "HandleQuery") && !strings.HasPrefix(k, "warden.continue_as_new") {
			t.Errorf("span %s recorded %d times, want once", k, n)
		}
	}
	if !services["warden-starter"] || !services["warden-worker"] {
		t.Errorf("services in the trace %v, want the starter's and the worker's", services)
	}
	if count["StartWorkflow:"+workflows.TurnWorkflow+"/"] != 1 {
		t.Errorf("StartWorkflow spans %d, want the starter's one", count["StartWorkflow:"+workflows.TurnWorkflow+"/"])
	}
	if n := count["warden.model_call/"]; n != 3 {
		t.Errorf("model calls %d, want 3", n)
	}
	for _, k := range []string{"warden.decision/c1", "warden.decision/c2", "warden.tool_call/c1", "warden.tool_call/c2", "warden.approval_wait/c2"} {
		if count[k] != 1 {
			t.Errorf("%s: %d spans, want 1", k, count[k])
		}
	}
	if count["warden.continue_as_new/"] < 1 {
		t.Errorf("no continue-as-new span")
	}
	for _, s := range tr.Spans {
		checkWardenSpan(t, s, byID, id)
	}
}

// checkWardenSpan checks one of warden's spans: its attributes and that
// its parent is in the trace.
func checkWardenSpan(t *testing.T, s jaegerSpan, byID map[string]jaegerSpan, id string) {
	t.Helper()
	if !strings.HasPrefix(s.OperationName, "warden.") {
		return
	}
	p, ok := byID[s.parent()]
	if !ok {
		t.Errorf("%s %s: parent %s not in the trace", s.OperationName, s.tag("warden.call_id"), s.parent())
	}
	if s.tag("warden.turn") != id {
		t.Errorf("%s: warden.turn %q", s.OperationName, s.tag("warden.turn"))
	}
	if s.tag("warden.input") != "" || s.tag("warden.output") != "" {
		t.Errorf("%s records an input or output without include_inputs", s.OperationName)
	}
	switch s.OperationName {
	case "warden.approval_wait":
		if s.tag("warden.approval.by") != "alice" || s.tag("warden.approval.decision") != "allow" || p.OperationName != "RunWorkflow:"+workflows.TurnWorkflow {
			t.Errorf("approval wait: by %q decision %q parent %q", s.tag("warden.approval.by"), s.tag("warden.approval.decision"), p.OperationName)
		}
		if secs, _ := strconv.ParseFloat(s.tag("warden.approval.wait_seconds"), 64); secs <= 0 || s.Duration <= 0 {
			t.Errorf("approval wait: %v s, duration %d µs", secs, s.Duration)
		}
	case "warden.decision":
		want := map[string]string{"c1": "allow", "c2": "ask"}[s.tag("warden.call_id")]
		if v := s.tag("warden.decision.verdict"); v != want || s.tag("warden.decision.layer") == "" {
			t.Errorf("decision %s: verdict %q layer %q, want %s", s.tag("warden.call_id"), v, s.tag("warden.decision.layer"), want)
		}
	case "warden.tool_call":
		if s.tag("warden.tool") != "Bash" || s.tag("warden.tool.exit_code") != "0" || s.tag("warden.tool.backend") != "local" || s.tag("warden.tool.sandbox") == "" {
			t.Errorf("tool call %s: tags %+v", s.tag("warden.call_id"), s.Tags)
		}
	case "warden.model_call":
		if s.tag("warden.model.provider") != "scripted" || s.tag("warden.model.finish_reason") == "" {
			t.Errorf("model call: tags %+v", s.Tags)
		}
	}
}

// screenshotTrace saves Chromium screenshots of the trace's page in
// Jaeger's UI and of its API answer, under WARDEN_ARTIFACTS (else the
// test's temporary directory), and logs their paths.
func screenshotTrace(t *testing.T, j *jaeger, traceID string) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		needChromium(t)
	}
	dir := os.Getenv("WARDEN_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, u := range map[string]string{"jaeger-trace-ui.png": j.query + "/trace/" + traceID, "jaeger-trace-api.png": j.query + "/api/traces/" + traceID} {
		path := filepath.Join(dir, name)
		cmd := exec.Command(chromiumPath, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
			"--user-data-dir="+t.TempDir(), "--window-size=1400,1200", "--screenshot="+path, u)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("chromium screenshot of %s: %v\n%s", u, err, out)
		}
		if st, err := os.Stat(path); err != nil || st.Size() == 0 {
			t.Fatalf("screenshot %s: %v", path, err)
		}
		t.Logf("screenshot of %s: %s", u, path)
	}
}
