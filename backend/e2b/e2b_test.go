package e2b_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/e2b"
	"github.com/wardenhq/warden/backend/e2b/e2bfake"
	"github.com/wardenhq/warden/tools/backendtest"
)

// config points a client at the fake, with a real temporary directory as
// the workdir (the fake does not translate paths).
func config(t testing.TB, s *e2bfake.Server) e2b.Config {
	return e2b.Config{
		APIKey:       s.APIKey,
		APIURL:       s.APIURL(),
		SandboxURL:   s.SandboxURL(),
		Workdir:      t.TempDir(),
		RetryBackoff: time.Millisecond,
	}
}

func newBackend(t testing.TB, s *e2bfake.Server) *e2b.Backend {
	t.Helper()
	b, err := e2b.New(context.Background(), config(t, s))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

func TestConformance(t *testing.T) {
	// Not parallel: backendtest.Run sets environment variables.
	backendtest.Run(t, func(t *testing.T) (backend.Backend, string) {
		b := newBackend(t, e2bfake.New(t))
		return b, b.Workdir()
	})
}

// count returns how many requests the fake got for server, method and
// path.
func count(s *e2bfake.Server, server, method, path string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Server == server && r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

func TestRetryThenSuccess(t *testing.T) {
	t.Parallel()
	s := e2bfake.New(t)
	first := newBackend(t, s)
	// Connecting is idempotent: it is retried through a 429 and a 503.
	cfg := config(t, s)
	cfg.SandboxID = first.SandboxID()
	s.FailAPI(1, http.StatusTooManyRequests, `{"code":429,"message":"rate limited"}`)
	s.FailAPI(1, http.StatusServiceUnavailable, "")
	b, err := e2b.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if n := count(s, "api", http.MethodPost, "/sandboxes/"+b.SandboxID()+"/connect"); n != 3 {
		t.Errorf("connect attempts = %d, want 3 (429, 503, 200)", n)
	}
	if len(s.Sandboxes()) != 1 || s.Sandboxes()[0].ID != b.SandboxID() {
		t.Errorf("sandboxes %+v, want exactly %s", s.Sandboxes(), b.SandboxID())
	}
	// envd calls retry too.
	s.FailEnvd(2, http.StatusBadGateway, "")
	if _, err := b.Stat(t.Context(), b.Workdir()); err != nil {
		t.Errorf("Stat after 2 proxy 502s: %v", err)
	}
}

func TestQuotaAfterRetries(t *testing.T) {
	t.Parallel()
	s := e2bfake.New(t)
	cfg := config(t, s)
	cfg.SandboxID = newBackend(t, s).SandboxID()
	cfg.MaxRetries = 2
	s.FailAPI(3, http.StatusTooManyRequests, `{"code":429,"message":"rate limited"}`)
	_, err := e2b.New(t.Context(), cfg)
	var apiErr *e2b.APIError
	if !errors.Is(err, e2b.ErrQuota) || !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Message != "rate limited" {
		t.Fatalf("err = %v, want ErrQuota APIError 429", err)
	}
	if n := count(s, "api", http.MethodPost, "/sandboxes/"+cfg.SandboxID+"/connect"); n != 3 {
		t.Errorf("%d connect requests, want 3 (1 + 2 retries)", n)
	}
	s.FailAPI(1, http.StatusServiceUnavailable, `{"code":503,"message":"no capacity","error_code":"sandbox_capacity_unavailable"}`)
	cfg.SandboxID = ""
	if _, err := e2b.New(t.Context(), cfg); !errors.Is(err, e2b.ErrQuota) || errors.Is(err, e2b.ErrOutcomeUnknown) {
		t.Errorf("capacity error = %v, want ErrQuota (a refusal, not an unknown outcome)", err)
	}
}

// TestCreateNotRetried: creating a sandbox is not idempotent, so an
// answer that does not say whether the sandbox was created is not
// retried, and neither is a refusal.
func TestCreateNotRetried(t *testing.T) {
	t.Parallel()
	s := e2bfake.New(t)
	cfg := config(t, s)
	for _, status := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout} {
		before := count(s, "api", http.MethodPost, "/sandboxes")
		s.FailAPI(1, status, "")
		_, err := e2b.New(t.Context(), cfg)
		if n := count(s, "api", http.MethodPost, "/sandboxes") - before; n != 1 {
			t.Errorf("HTTP %d: %d create requests, want 1 (not retried)", status, n)
		}
		var apiErr *e2b.APIError
		if !errors.Is(err, e2b.ErrOutcomeUnknown) || !errors.Is(err, backend.ErrUnavailable) || !errors.As(err, &apiErr) || apiErr.StatusCode != status {
			t.Errorf("HTTP %d: err = %v, want ErrOutcomeUnknown and backend.ErrUnavailable around the APIError", status, err)
		}
	}
	before := count(s, "api", http.MethodPost, "/sandboxes")
	s.FailAPI(1, http.StatusTooManyRequests, `{"code":429,"message":"rate limited"}`)
	if _, err := e2b.New(t.Context(), cfg); !errors.Is(err, e2b.ErrQuota) || errors.Is(err, e2b.ErrOutcomeUnknown) {
		t.Errorf("429: err = %v, want ErrQuota only", err)
	}
	if n := count(s, "api", http.MethodPost, "/sandboxes") - before; n != 1 {
		t.Errorf("429: %d create requests, want 1", n)
	}
	if n := len(s.Sandboxes()); n != 0 {
		t.Errorf("%d sandboxes, want 0", n)
	}
}

// TestStartNotRetried: a process start answered 502 or 504 is sent once
// and reported as an unknown outcome, not as a timeout or a success.
func TestStartNotRetried(t *testing.T) {
	t.Parallel()
	s := e2bfake.New(t)
	b := newBackend(t, s)
	for _, status := range []int{http.StatusBadGateway, http.StatusGatewayTimeout} {
		before := count(s, "envd", http.MethodPost, "/process.Process/Start")
		s.FailEnvd(1, status, "")
		res, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"true"}, Timeout: 10 * time.Second})
		if n := count(s, "envd", http.MethodPost, "/process.Process/Start") - before; n != 1 {
			t.Errorf("HTTP %d: %d Start requests, want 1 (not retried)", status, n)
		}
		var rpcErr *e2b.RPCError
		if !errors.Is(err, e2b.ErrOutcomeUnknown) || !errors.Is(err, backend.ErrUnavailable) || !errors.As(err, &rpcErr) || rpcErr.StatusCode != status || res.TimedOut {
			t.Errorf("HTTP %d: %+v, err = %v, want ErrOutcomeUnknown and backend.ErrUnavailable around the RPCError", status, res, err)
		}
		if err != nil && !strings.Contains(err.Error(), "not idempotent") {
			t.Errorf("HTTP %d: error %q does not say why it was not retried", status, err)
		}
	}
}

// TestStartRunsOnce puts a gateway in front of envd that lets the first
// process run to completion and then answers 502, as a proxy timing out
// on the upstream does: the command must not run a second time.
func TestStartRunsOnce(t *testing.T) {
	t.Parallel()
	s := e2bfake.New(t)
	target, err := url.Parse(s.SandboxURL())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	starts := 0
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Path != "/process.Process/Start" {
			return nil
		}
		mu.Lock()
		starts++
		first := starts == 1
		mu.Unlock()
		if !first {
			return nil
		}
		// Wait for the process to end, then lose the answer.
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		resp.StatusCode, resp.Status = http.StatusBadGateway, "502 Bad Gateway"
		resp.Header = http.Header{"Content-Type": {"text/plain"}}
		resp.Body = io.NopCloser(strings.NewReader("upstream timed out"))
		resp.ContentLength = -1
		return nil
	}
	gw := httptest.NewServer(proxy)
	t.Cleanup(gw.Close)
	cfg := config(t, s)
	cfg.SandboxURL = gw.URL
	b, err := e2b.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	marker := filepath.Join(b.Workdir(), "runs")
	_, err = b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"/bin/sh", "-c", `echo ran >> "$1"`, "sh", marker}})
	if !errors.Is(err, e2b.ErrOutcomeUnknown) {
		t.Errorf("Exec through a 502 after the run: err = %v, want ErrOutcomeUnknown", err)
	}
	data, _ := os.ReadFile(marker)
	if got := strings.Count(string(data), "ran\n"); got != 1 {
		t.Errorf("the command ran %d times, want 1", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if starts != 1 {
		t.Errorf("%d Start requests reached envd, want 1", starts)
	}
}

func TestAuthError(t *testing.T) {
	s := e2bfake.New(t)
	cfg := config(t, s)
	cfg.APIKey = "e2b_0000"
	_, err := e2b.New(t.Context(), cfg)
	if !errors.Is(err, e2b.ErrAuth) {
		t.Fatalf("err = %v, want ErrAuth", err)
	}
	if len(s.Requests()) != 1 {
		t.Errorf("401 was retried: %d requests", len(s.Requests()))
	}
	for _, r := range s.Requests() {
		if got := r.Header.Get("X-API-Key"); got != "e2b_0000" {
			t.Errorf("X-API-Key = %q", got)
		}
	}
	if strings.Contains(err.Error(), "e2b_0000") {
		t.Errorf("error leaks the API key: %v", err)
	}
	// No key at all fails before any request.
	t.Setenv("E2B_API_KEY", "")
	cfg.APIKey = ""
	if _, err := e2b.New(t.Context(), cfg); !errors.Is(err, e2b.ErrAuth) {
		t.Errorf("no key: %v, want ErrAuth", err)
	}
}

func TestReconnectByWorkspace(t *testing.T) {
	t.Parallel()
	s := e2bfake.New(t)
	cfg := config(t, s)
	cfg.WorkspaceID = "ws-1"
	cfg.Metadata = map[string]string{"owner": "tests"}
	first, err := e2b.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if md := s.Sandboxes()[0].Metadata; md[e2b.WorkspaceMetadataKey] != "ws-1" || md["owner"] != "tests" {
		t.Errorf("metadata %v", md)
	}
	// Another workspace gets its own sandbox.
	other := cfg
	other.WorkspaceID = "ws-2"
	second, err := e2b.New(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	if second.SandboxID() == first.SandboxID() {
		t.Fatal("ws-2 reused ws-1's sandbox")
	}
	// Reconnecting to ws-1 (paused meanwhile) resumes the same sandbox.
	s.Pause(first.SandboxID())
	again, err := e2b.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if again.SandboxID() != first.SandboxID() {
		t.Errorf("reconnect got %s, want %s", again.SandboxID(), first.SandboxID())
	}
	if n := len(s.Sandboxes()); n != 2 {
		t.Errorf("%d sandboxes, want 2", n)
	}
	for _, sb := range s.Sandboxes() {
		if sb.State != "running" {
			t.Errorf("%s is %s after reconnect", sb.ID, sb.State)
		}
	}
	listed, err := again.List(t.Context(), map[string]string{e2b.WorkspaceMetadataKey: "ws-2"})
	if err != nil || len(listed) != 1 || listed[0].SandboxID != second.SandboxID() || listed[0].State != "running" {
		t.Errorf("List ws-2 = %+v, %v", listed, err)
	}
	if err := again.SetTimeout(t.Context(), 90*time.Second); err != nil {
		t.Errorf("SetTimeout: %v", err)
	}
	if err := again.Kill(t.Context()); err != nil {
		t.Errorf("Kill: %v", err)
	}
	if err := again.Kill(t.Context()); err != nil {
		t.Errorf("second Kill: %v", err)
	}
	// A killed sandbox's envd is gone: the proxy answers 502.
	if _, err := first.Stat(t.Context(), "/"); !errors.Is(err, e2b.ErrUnavailable) {
		t.Errorf("Stat on killed sandbox: %v, want ErrUnavailable", err)
	}
	if n := len(s.Sandboxes()); n != 1 {
		t.Errorf("%d sandboxes after kill, want 1", n)
	}
}

func TestExecErrors(t *testing.T) {
	t.Parallel()
	s := e2bfake.New(t)
	b := newBackend(t, s)
	// envd reports a missing cwd in the end-of-stream trailer.
	_, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"true"}, Dir: "/nonexistent/warden"})
	var rpcErr *e2b.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != "invalid_argument" || rpcErr.StatusCode != 200 || !strings.Contains(rpcErr.Message, "does not exist") {
		t.Errorf("missing cwd: %v", err)
	}
	// Context cancellation is an error, not a timeout.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"sleep", "5"}})
	if !errors.Is(err, context.DeadlineExceeded) || res.TimedOut {
		t.Errorf("cancelled exec: %+v %v", res, err)
	}
}

func BenchmarkExec(b *testing.B) {
	s := e2bfake.New(b)
	be := newBackend(b, s)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		res, err := be.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "true"}, Timeout: 10 * time.Second})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v %v", res, err)
		}
	}
}

// TestWire checks the bytes the client puts on the wire for Exec.
func TestWire(t *testing.T) {
	t.Parallel()
	s := e2bfake.New(t)
	b := newBackend(t, s)
	if _, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"echo", "hi"}, Env: []string{"A=1"}, Timeout: 1500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	var start *e2bfake.Request
	for _, r := range s.Requests() {
		if r.Path == "/process.Process/Start" {
			start = &r
		}
	}
	if start == nil {
		t.Fatal("no Start request")
	}
	h := start.Header
	for k, want := range map[string]string{
		"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1", "Connect-Timeout-Ms": "1500",
		"E2b-Sandbox-Id": b.SandboxID(), "E2b-Sandbox-Port": "49983", "Authorization": "Basic dXNlcjo=",
	} {
		if h.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, h.Get(k), want)
		}
	}
	if h.Get("X-Access-Token") == "" || h.Get("X-Api-Key") != "" {
		t.Errorf("envd must get the access token and never the API key: %v", h)
	}
	body := start.Body
	want := `{"process":{"cmd":"setsid","args":["-w","--","echo","hi"],"envs":{"A":"1"},"cwd":"` + b.Workdir() + `"},"stdin":false}`
	if len(body) < 5 || body[0] != 0 || int(body[1])<<24|int(body[2])<<16|int(body[3])<<8|int(body[4]) != len(want) || string(body[5:]) != want {
		t.Errorf("Start body %q, want envelope of %s", body, want)
	}
}

// TestExecEnv: backend.env entries reach every process; the worker's
// own environment does not.
func TestExecEnv(t *testing.T) {
	t.Setenv("WARDEN_TEST_WORKER_ONLY", "worker-secret")
	s := e2bfake.New(t)
	cfg := config(t, s)
	cfg.ExecEnv = backend.ResolveEnv([]string{"WARDEN_TEST_WORKER_ONLY_PASSED=x", "CI=1"}, os.Environ())
	b, err := e2b.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"env"}, Env: []string{"CI=2"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("env: %v %+v", err, res)
	}
	out := string(res.Stdout)
	if !strings.Contains(out, "WARDEN_TEST_WORKER_ONLY_PASSED=x\n") || !strings.Contains(out, "CI=2\n") || strings.Contains(out, "worker-secret") {
		t.Errorf("sandbox environment:\n%s", out)
	}
}

// TestTraceEnv: a process run with a context carrying a span gets
// TRACEPARENT naming that span in the envs of its Start request; the
// control, a context without a span, gets no trace context.
func TestTraceEnv(t *testing.T) {
	t.Parallel()
	b := newBackend(t, e2bfake.New(t))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(t.Context(), "tool")
	sc := span.SpanContext()
	res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo tp=$TRACEPARENT"}, Env: []string{"A=1"}})
	span.End()
	want := "tp=00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01\n"
	if err != nil || string(res.Stdout) != want {
		t.Errorf("with a span: %v stdout %q, want %q", err, res.Stdout, want)
	}
	res, err = b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"env"}})
	if out := string(res.Stdout); err != nil || res.ExitCode != 0 || strings.Contains(out, "TRACEPARENT") || strings.Contains(out, "TRACESTATE") {
		t.Errorf("control without a span: %v %+v: environment:\n%s", err, res, out)
	}
}
