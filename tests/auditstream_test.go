package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/wardenhq/warden/client"
)

// siem is an HTTP endpoint that takes audit stream batches, JSON lines
// or OTLP/HTTP logs (protobuf, each log record's body a line), or
// refuses them with 503 while it is down.
type siem struct {
	mu      sync.Mutex
	down    bool
	lines   []string
	at      []time.Time // when each line arrived
	refused int
	auth    []string
}

func (s *siem) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	if s.down {
		s.refused++
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	if r.Header.Get("Content-Type") == "application/x-protobuf" {
		var req collogs.ExportLogsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rl := range req.GetResourceLogs() {
			for _, sl := range rl.GetScopeLogs() {
				for _, lr := range sl.GetLogRecords() {
					s.lines, s.at = append(s.lines, lr.GetBody().GetStringValue()+"\n"), append(s.at, time.Now())
				}
			}
		}
		return
	}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		s.lines, s.at = append(s.lines, sc.Text()+"\n"), append(s.at, time.Now())
	}
}

func (s *siem) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// of is the lines received for one turn, in the order they came.
func (s *siem) of(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.lines {
		var r struct {
			WorkflowID string `json:"workflow_id"`
		}
		if json.Unmarshal([]byte(l), &r) == nil && r.WorkflowID == id {
			out = append(out, l)
		}
	}
	return out
}

// serve serves h on a fresh loopback port until the test ends and
// returns its address.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// sinkWorkerConfig writes, in a new directory, the config of a worker on
// its own embedded server (task queue queue, metrics on metrics or
// "off") with more appended (its audit section), and returns the
// directory, the config file and the data directory.
func sinkWorkerConfig(t testing.TB, queue, metrics, more string) (dir, cfg, data string) {
	t.Helper()
	dir = t.TempDir()
	data, ws := filepath.Join(dir, "data"), filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, fmt.Sprintf("server: {data_dir: %q, port: %d, ui_port: 0}\nworker: {workdir: %q, task_queue: %s}\nmetrics: {addr: %q}\n"+
		"middleware: {logging: {level: error}}\n", data, freePort(t), ws, queue, metrics)+more, 0o644)
	return dir, cfg, data
}

// TestAuditStreamSinkDown: a worker streams its audit to an HTTP sink
// (audit.stream, with a bearer token from the environment). A turn's
// records arrive as it runs, each line as `starter audit --jsonl` prints
// it. The sink then refuses everything for 30 s while two turns run (one
// waits for and gets an approval), and the worker is SIGKILLed and
// started again in the middle of the outage: the turns run to their
// answers, the refusals are counted in warden_audit_stream_failures_total
// and logged, and once the sink is back every record of every turn
// arrives once, in order, byte for byte the audit's. Control: nothing of
// the outage's turns arrives while the sink is down.
func TestAuditStreamSinkDown(t *testing.T) {
	wbin, sbin := buildWorker(t), buildStarter(t)
	ctx := ctxT(t, 5*time.Minute)
	sink := &siem{}
	addr := serve(t, sink)
	metricsPort := freePort(t)
	dir, cfg, data := sinkWorkerConfig(t, "stream", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		fmt.Sprintf("audit:\n  stream: {sink: \"http://%s/ingest\", token_env: SIEM_TOKEN}\n", addr))
	t.Setenv("SIEM_TOKEN", "siem-secret")
	logFile := filepath.Join(dir, "worker.log")
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	start := func() (*os.Process, *client.Client) {
		t.Helper()
		cmd, addr := startEmbeddedTo(t, wbin, dir, io.MultiWriter(os.Stderr, lf), "--config", cfg)
		proc := cmd.Process
		t.Cleanup(func() { _ = syscall.Kill(-proc.Pid, syscall.SIGKILL) })
		tc := dialAt(t, addr, filepath.Join(data, "auth", "operator.key"))
		t.Cleanup(tc.Close)
		cl := client.New(tc, "stream")
		cl.PollInterval = 100 * time.Millisecond
		return proc, cl
	}
	proc, cl := start()
	starter := func(args ...string) string {
		t.Helper()
		out, err := runStarter(t, sbin, dir, append([]string{"--config", cfg}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	turn := func(id, body string) {
		t.Helper()
		f := filepath.Join(dir, id+".yaml")
		writeFile(t, f, body, 0o644)
		starter("run", "--script", f, "--workflow-id", id, "--detach")
	}
	asks := "prompt: p\nsteps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch x\"}}]\n  - tool_calls: [{id: c2, name: Bash, input: {command: \"ls\"}}]\n  - text: done\n"
	plain := "prompt: p\nsteps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"ls\"}}]\n  - text: done\n"
	want := func(id string) []string {
		ls := strings.SplitAfter(starter("audit", "--workflow", id, "--jsonl"), "\n")
		return ls[:len(ls)-1]
	}
	arrived := func(id string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			w, got := want(id), sink.of(id)
			if slices.Equal(got, w) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the sink's records of %s are not the audit's:\nsink (%d):\n%s\naudit (%d):\n%s", id, len(got), strings.Join(got, ""), len(w), strings.Join(w, ""))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// 1. Up: a turn's records arrive as it runs, the ask before the
	// answer is given.
	a := "stream-a-" + tag()
	turn(a, asks)
	waitPendingCall(t, cl, a, "c1")
	waitFor(t, ctx, func() bool { return strings.Contains(strings.Join(sink.of(a), ""), `"decision":"ask"`) })
	t.Logf("the ask of %s reached the sink while the turn waits", a)
	starter("approvals", "approve", a, "c1")
	if res, err := cl.Result(ctx, a); err != nil || res.Answer != "done" {
		t.Fatalf("turn a: %+v, %v", res, err)
	}
	arrived(a)

	// 2. Down for 30 s: two turns run, the worker dies and comes back.
	down := time.Now()
	sink.setDown(true)
	b, c := "stream-b-"+tag(), "stream-c-"+tag()
	turn(b, asks)
	turn(c, plain)
	waitPendingCall(t, cl, b, "c1")
	if res, err := cl.Result(ctx, c); err != nil || res.Answer != "done" {
		t.Fatalf("turn c while the sink is down: %+v, %v", res, err)
	}
	waitFor(t, ctx, func() bool { return scrape(t, metricsPort, "warden_audit_stream_failures_total") > 0 })
	_ = syscall.Kill(-proc.Pid, syscall.SIGKILL)
	_, _ = proc.Wait()
	proc, cl = start()
	defer func() { _ = syscall.Kill(-proc.Pid, syscall.SIGTERM); _, _ = proc.Wait() }()
	starter("approvals", "approve", b, "c1")
	if res, err := cl.Result(ctx, b); err != nil || res.Answer != "done" {
		t.Fatalf("turn b: %+v, %v", res, err)
	}
	if n := len(sink.of(b)) + len(sink.of(c)); n != 0 {
		t.Errorf("%d records of the outage's turns arrived while the sink was down", n)
	}
	if time.Since(down) < 30*time.Second {
		time.Sleep(30*time.Second - time.Since(down))
	}
	refusedBefore := scrape(t, metricsPort, "warden_audit_stream_failures_total")
	sink.setDown(false)
	back := time.Now()

	// 3. Back: every record of every turn, once, in order.
	for _, id := range []string{a, b, c} {
		arrived(id)
	}
	t.Logf("caught up %s after the sink came back (%d refused batches counted by the restarted worker before)", time.Since(back).Round(100*time.Millisecond), int(refusedBefore))
	seen := map[string]bool{}
	sink.mu.Lock()
	for _, l := range sink.lines {
		var r struct {
			WorkflowID string `json:"workflow_id"`
			Seq        int    `json:"seq"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Errorf("a line the sink got is not a record: %q", l)
		}
		k := fmt.Sprint(r.WorkflowID, "#", r.Seq)
		if seen[k] {
			t.Errorf("record %s arrived twice", k)
		}
		seen[k] = true
	}
	for _, h := range sink.auth {
		if h != "Bearer siem-secret" {
			t.Errorf("a batch came with Authorization %q", h)
		}
	}
	t.Logf("sink: %d records, %d refused batches", len(sink.lines), sink.refused)
	sink.mu.Unlock()
	// The exported stream verifies against the histories.
	exp := filepath.Join(dir, "stream.jsonl")
	sink.mu.Lock()
	writeFile(t, exp, strings.Join(sink.lines, ""), 0o644)
	sink.mu.Unlock()
	if out := starter("audit", "verify", exp); !strings.Contains(out, "verified") {
		t.Errorf("audit verify of the stream: %s", out)
	}
	log, _ := os.ReadFile(logFile)
	for _, wantLog := range []string{"the sink refused records", "the sink is back"} {
		if !strings.Contains(string(log), wantLog) {
			t.Errorf("the worker's log does not say %q", wantLog)
		}
	}
}

// TestAuditStreamOTLP: a worker whose audit.stream sink is an
// OpenTelemetry collector's OTLP/HTTP endpoint (otlp+http://) sends each
// record of a turn that waits for an approval as one log record whose
// body is the line `starter audit --jsonl` prints; the bodies, saved as
// a file, verify against the turn's history.
func TestAuditStreamOTLP(t *testing.T) {
	t.Parallel() // its own worker and server; it mostly waits
	wbin, sbin := buildWorker(t), buildStarter(t)
	ctx := ctxT(t, 3*time.Minute)
	sink := &siem{}
	dir, cfg, data := sinkWorkerConfig(t, "otlp", "off", fmt.Sprintf("audit:\n  stream: {sink: \"otlp+http://%s\"}\n", serve(t, sink)))
	cmd, addr := startEmbedded(t, wbin, dir, "--config", cfg)
	t.Cleanup(func() { killProcess(t, cmd) })
	tc := dialAt(t, addr, filepath.Join(data, "auth", "operator.key"))
	defer tc.Close()
	cl := client.New(tc, "otlp")
	cl.PollInterval = 100 * time.Millisecond
	starter := func(args ...string) string {
		t.Helper()
		out, err := runStarter(t, sbin, dir, append([]string{"--config", cfg}, args...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	id := "otlp-" + tag()
	f := filepath.Join(dir, "turn.yaml")
	writeFile(t, f, "prompt: p\nsteps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch x\"}}]\n  - text: done\n", 0o644)
	starter("run", "--script", f, "--workflow-id", id, "--detach")
	waitPendingCall(t, cl, id, "c1")
	waitFor(t, ctx, func() bool { return strings.Contains(strings.Join(sink.of(id), ""), `"decision":"ask"`) })
	starter("approvals", "approve", id, "c1")
	if res, err := cl.Result(ctx, id); err != nil || res.Answer != "done" {
		t.Fatalf("the turn: %+v, %v", res, err)
	}
	var want []string
	waitFor(t, ctx, func() bool {
		ls := strings.SplitAfter(starter("audit", "--workflow", id, "--jsonl"), "\n")
		want = ls[:len(ls)-1]
		return slices.Equal(sink.of(id), want)
	})
	exp := filepath.Join(dir, "from-collector.jsonl")
	writeFile(t, exp, strings.Join(sink.of(id), ""), 0o644)
	if out := starter("audit", "verify", exp); !strings.Contains(out, "verified") {
		t.Errorf("audit verify of the collector's records: %s", out)
	}
	t.Logf("%d records of %s arrived as OTLP log records and verify", len(want), id)
}

// scrape reads one unlabelled series from a worker's /metrics (0 when
// it is not there).
func scrape(t *testing.T, port int, name string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			var v float64
			if _, err := fmt.Sscan(f[1], &v); err == nil {
				return v
			}
		}
	}
	return 0
}
