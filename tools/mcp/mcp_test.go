package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/tools/mcp/internal/echoserver"
)

// buildEchoServer builds testdata/echoserver into a temporary directory.
func buildEchoServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "echoserver")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/echoserver").CombinedOutput()
	if err != nil {
		t.Fatalf("build echoserver: %v\n%s", err, out)
	}
	return bin
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func byName(t *testing.T, s *Set) map[string]tools.Tool {
	t.Helper()
	m := map[string]tools.Tool{}
	for _, tl := range s.Tools() {
		m[tl.Info().Name] = tl
	}
	return m
}

func call(t *testing.T, tl tools.Tool, input string) (tools.Result, error) {
	t.Helper()
	return tools.Collect(tl.Call(ctxT(t), &tools.Env{}, json.RawMessage(input)))
}

// checkTools asserts the tool list, metadata, schemas, flags and the
// permission engine's decisions.
func checkTools(t *testing.T, s *Set, server, cfgName string) {
	t.Helper()
	var names []string
	for _, tl := range s.Tools() {
		names = append(names, tl.Info().Name)
	}
	p := "mcp__" + server + "__"
	want := []string{p + "echo", p + "fail", p + "write_note", p + "image", p + "info"}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	ts := byName(t, s)
	echo := ts[p+"echo"].Info()
	var schema struct {
		Type       string                    `json:"type"`
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(echo.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || schema.Properties["text"]["type"] != "string" ||
		schema.Properties["text"]["description"] != "the text to echo" || !slices.Equal(schema.Required, []string{"text"}) {
		t.Errorf("echo schema = %s", echo.InputSchema)
	}
	if echo.Description != "Echo the text back." || !echo.ReadOnly || echo.ConcurrencySafe || echo.External || echo.StateInjected {
		t.Errorf("echo info = %+v", echo)
	}
	if wn := ts[p+"write_note"].Info(); wn.ReadOnly || wn.ConcurrencySafe {
		t.Errorf("write_note info = %+v", wn)
	}
	if srv, tool := ts[p+"write_note"].(interface{ MCP() (string, string) }).MCP(); srv != cfgName || tool != "write_note" {
		t.Errorf("MCP() = %q, %q", srv, tool)
	}
	// The source names the server by its config name, not the
	// sanitized one of the tool names.
	for _, tl := range s.Tools() {
		if got := tools.SourceOf(tl); got != "mcp:"+cfgName {
			t.Errorf("source of %s = %q, want mcp:%s", tl.Info().Name, got, cfgName)
		}
	}

	// The tools' own checks.
	for name, want := range map[string]permission.Decision{
		p + "echo":       {Behavior: permission.Allow},
		p + "write_note": {Behavior: permission.Ask, Message: AskMessage},
	} {
		d, err := ts[name].(tools.PermissionChecker).CheckPermissions(ctxT(t), &tools.Env{}, json.RawMessage(`{"text":"x"}`), &permission.Context{})
		if err != nil || d.Behavior != want.Behavior || d.Message != want.Message || d.BypassImmune {
			t.Errorf("%s CheckPermissions = %+v %v, want %+v", name, d, err, want)
		}
	}

	// Through the engine: read-only is allowed, a write asks (not
	// bypass-immune, so bypass mode and a tool-level rule allow it).
	cases := []struct {
		tool   string
		policy permission.Policy
		want   permission.Behavior
	}{
		{p + "echo", permission.Policy{}, permission.Allow},
		{p + "write_note", permission.Policy{}, permission.Ask},
		{p + "write_note", permission.Policy{Allow: []string{p + "write_note"}}, permission.Allow},
		{p + "write_note", permission.Policy{Mode: permission.ModeBypass}, permission.Allow},
		{p + "echo", permission.Policy{Deny: []string{p + "echo"}}, permission.Deny},
		{p + "echo", permission.Policy{Mode: permission.ModeExplore}, permission.Allow},
		{p + "write_note", permission.Policy{Mode: permission.ModeExplore}, permission.Deny},
		{p + "write_note", permission.Policy{Mode: permission.ModeDontAsk}, permission.Deny},
	}
	for _, c := range cases {
		pc, err := c.policy.Context()
		if err != nil {
			t.Fatal(err)
		}
		d, err := permission.Evaluate(ctxT(t), &pc, decide.Bind(ts[c.tool], &tools.Env{}), json.RawMessage(`{"text":"x"}`))
		if err != nil || d.Behavior != c.want {
			t.Errorf("%s under %+v: %+v %v, want %s", c.tool, c.policy, d, err, c.want)
		}
		if c.want == permission.Ask && (d.BypassImmune ||
			!slices.ContainsFunc(d.Suggestions, func(r permission.Rule) bool { return r.Tool == c.tool && r.Content == "" })) {
			t.Errorf("%s ask = %+v", c.tool, d)
		}
	}
}

// checkCalls asserts call results.
func checkCalls(t *testing.T, s *Set, server string) {
	t.Helper()
	ts := byName(t, s)
	p := "mcp__" + server + "__"
	cases := []struct {
		tool, input, want string
		isErr             bool
	}{
		{"echo", `{"text":"hello"}`, "hello", false},
		{"fail", `{"reason":"on purpose"}`, "failed: on purpose", true},
		{"write_note", `{"text":"a"}`, "noted: a", false},
		{"write_note", `{"text":"b"}`, "noted: a, b", false},
		{"echo", `{"text":5}`, "", true}, // the SDK server reports bad arguments as isError
		{"image", ``, "a pixel", false},
	}
	for _, c := range cases {
		r, err := call(t, ts[p+c.tool], c.input)
		if err != nil || r.IsError != c.isErr || (c.want != "" && r.Content != c.want) || (c.want == "" && r.Content == "") {
			t.Errorf("%s %s = %+v (%v), want %q error=%v", c.tool, c.input, r, err, c.want, c.isErr)
		}
	}
	// A protocol error the server answers (here: a tool it does not
	// know) reaches the model as an error chunk, not as a retryable
	// failure.
	ghost := &Tool{srv: ts[p+"echo"].(*Tool).srv, name: "ghost", info: tools.Info{Name: p + "ghost"}}
	if r, err := call(t, ghost, `{}`); err != nil || !r.IsError || !strings.Contains(r.Content, "ghost") {
		t.Errorf("unknown tool = %+v %v", r, err)
	}
	r, _ := call(t, ts[p+"image"], `{}`)
	if len(r.Data) != 1 || r.Data[0].MediaType != "image/png" || string(r.Data[0].Data) != echoserver.Pixel {
		t.Errorf("image data = %+v", r.Data)
	}
}

func info(t *testing.T, s *Set, server string) echoserver.Info {
	t.Helper()
	r, err := call(t, byName(t, s)["mcp__"+server+"__info"], `{}`)
	if err != nil || r.IsError {
		t.Fatalf("info: %+v %v", r, err)
	}
	var i echoserver.Info
	if err := json.Unmarshal([]byte(r.Content), &i); err != nil {
		t.Fatalf("info %q: %v", r.Content, err)
	}
	return i
}

func TestStdio(t *testing.T) {
	// A secret of the worker's environment never reaches an MCP server.
	t.Setenv("WARDEN_TEST_SECRET", "s3cr3t-worker-value")
	bin := buildEchoServer(t)
	s, err := Connect(ctxT(t), []config.MCPServer{{Name: "echo", Command: bin, Args: []string{"--flag", "x"}, Env: []string{"ECHO_ENV=from-config"}}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = s.Close()
		}
	})
	checkTools(t, s, "echo", "echo")
	checkCalls(t, s, "echo")
	first := info(t, s, "echo")
	if !slices.Equal(first.Args, []string{"--flag", "x"}) || first.Env != "from-config" || first.PID <= 0 {
		t.Fatalf("info = %+v", first)
	}
	for _, kv := range first.Environ {
		if strings.Contains(kv, "s3cr3t-worker-value") {
			t.Fatalf("the worker's secret reached the MCP server: %s", kv)
		}
	}
	if !slices.ContainsFunc(first.Environ, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		t.Fatalf("the MCP server has no PATH: %v", first.Environ)
	}

	// The server dies: the next call reconnects (a new process, with
	// fresh state) and succeeds.
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r, err := call(t, byName(t, s)["mcp__echo__write_note"], `{"text":"c"}`)
	if err != nil || r.Content != "noted: c" {
		t.Fatalf("write_note after kill = %+v %v", r, err)
	}
	second := info(t, s, "echo")
	if second.PID == first.PID {
		t.Errorf("pid unchanged after reconnect: %d", second.PID)
	}

	// Close stops the server; calls then fail as infrastructure errors.
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	closed = true
	if err := syscall.Kill(second.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server %d still running after Close: %v", second.PID, err)
	}
	if _, err := call(t, byName(t, s)["mcp__echo__echo"], `{"text":"late"}`); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("call after Close: %v", err)
	}
}

// swapHandler serves the current handler; swapping it drops every
// session the old one knew.
type swapHandler struct{ h atomic.Pointer[http.Handler] }

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }
func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

func TestStreamableHTTP(t *testing.T) {
	t.Parallel()
	newHandler := func() http.Handler {
		srv := echoserver.New()
		mh := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer t0k" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			mh.ServeHTTP(w, r)
		})
	}
	var sh swapHandler
	sh.set(newHandler())
	hs := httptest.NewServer(&sh)
	t.Cleanup(hs.Close)

	if _, err := Connect(ctxT(t), []config.MCPServer{{Name: "web", URL: hs.URL}}); err == nil {
		t.Fatal("connect without the Authorization header succeeded")
	}
	s, err := Connect(ctxT(t), []config.MCPServer{{Name: "web.api", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer t0k"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	checkTools(t, s, "web_api", "web.api")
	checkCalls(t, s, "web_api")

	// The server restarts and forgets the session: the call reconnects.
	sh.set(newHandler())
	r, err := call(t, byName(t, s)["mcp__web_api__write_note"], `{"text":"z"}`)
	if err != nil || r.Content != "noted: z" {
		t.Fatalf("write_note after restart = %+v %v", r, err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func TestServerConfigValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cfg  config.MCPServer
		want string
	}{
		{config.MCPServer{Name: "a", Command: "x"}, ""},
		{config.MCPServer{Name: "a", URL: "http://h", Headers: map[string]string{"K": "v"}}, ""},
		{config.MCPServer{Command: "x"}, "without a name"},
		{config.MCPServer{Name: "a"}, "exactly one"},
		{config.MCPServer{Name: "a", Command: "x", URL: "http://h"}, "exactly one"},
		{config.MCPServer{Name: "a", Command: "x", Env: []string{"NOEQ"}}, "KEY=VALUE"},
		{config.MCPServer{Name: "a", Command: "x", Headers: map[string]string{"K": "v"}}, "headers need a url"},
		{config.MCPServer{Name: "a", URL: "http://h", Args: []string{"-v"}}, "need a command"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := Connect(ctxT(t), []config.MCPServer{{Name: "a", Command: "x"}, {Name: "a", Command: "y"}}); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate server names: %v", err)
	}
	if _, err := Connect(ctxT(t), []config.MCPServer{{Name: "gone", Command: filepath.Join(t.TempDir(), "missing")}}); err == nil || !strings.Contains(err.Error(), `"gone"`) {
		t.Errorf("missing command: %v", err)
	}
}

func TestToolName(t *testing.T) {
	t.Parallel()
	cases := []struct{ server, tool, want string }{
		{"echo", "echo", "mcp__echo__echo"},
		{"my server", "read.file", "mcp__my_server__read_file"},
		{"gh-1", "list/issues:all", "mcp__gh-1__list_issues_all"},
		{"ü", "é", "mcp______"},
	}
	for _, c := range cases {
		if got := ToolName(c.server, c.tool); got != c.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
}

// TestStdioSandboxed runs the echo server in the local sandbox: its tools
// work, and it runs as the only process of a PID namespace of its own
// (its pid is 1), from the allowlisted environment.
func TestStdioSandboxed(t *testing.T) {
	bin := buildEchoServer(t)
	s, err := ConnectSandboxed(ctxT(t), []config.MCPServer{{Name: "echo", Command: bin}}, &Sandbox{Workdir: t.TempDir(), Hide: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	checkTools(t, s, "echo", "echo")
	checkCalls(t, s, "echo")
	if i := info(t, s, "echo"); i.PID != 1 {
		t.Errorf("sandboxed server has pid %d, want 1 (a PID namespace of its own)", i.PID)
	}
}

// TestStdioNetworkProxied: a sandboxed stdio server with network: true
// has a network namespace of its own whose only way out is an egress
// proxy (HTTP_PROXY points at it), which never reaches loopback: a
// listener on the worker's 127.0.0.1 is out of its reach, by name and
// by address. Controls: the same server unsandboxed reaches it.
func TestStdioNetworkProxied(t *testing.T) {
	bin := buildEchoServer(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("LOOPBACK-REACHED\n")) }))
	defer srv.Close()
	urls := srv.URL + " " + strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	cfg := []config.MCPServer{{Name: "echo", Command: bin, Network: true, Env: []string{"ECHO_FETCH=" + urls}}}
	fetched := func(s *Set) echoserver.Info {
		t.Cleanup(func() { _ = s.Close() })
		return info(t, s, "echo")
	}
	s, err := ConnectSandboxed(ctxT(t), cfg, &Sandbox{Workdir: t.TempDir(), Hide: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	i := fetched(s)
	if !slices.Contains(i.Environ, "HTTP_PROXY=http://127.0.0.1:3128") {
		t.Errorf("the server's environment names no egress proxy: %q", i.Environ)
	}
	for u, got := range i.Fetched {
		if strings.Contains(got, "LOOPBACK-REACHED") {
			t.Errorf("sandboxed server with the network reached the worker's loopback at %s: %s", u, got)
		}
	}
	if len(i.Fetched) != 2 {
		t.Errorf("fetched %v", i.Fetched)
	}
	t.Logf("sandboxed: %v", i.Fetched)
	s, err = Connect(ctxT(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for u, got := range fetched(s).Fetched {
		if !strings.Contains(got, "LOOPBACK-REACHED") {
			t.Errorf("control: the unsandboxed server did not reach %s: %s", u, got)
		}
	}
}
