// Package e2bfake is a local fake of E2B for tests: an httptest control
// plane (create, get, connect/resume, pause, set timeout, kill, list with
// a metadata filter) and an httptest envd endpoint (process Start as a
// Connect JSON stream, SendSignal, filesystem Stat/ListDir/MakeDir/Move/
// Remove, GET/POST /files, /health), speaking the wire protocol described
// by E2B's public API and envd (Connect) documentation.
//
// It validates requests the way the real services do, and a little more
// strictly where a lenient answer would hide a client bug: the API key,
// JSON bodies and status codes on the control plane; the E2b-Sandbox-Id /
// E2b-Sandbox-Port routing headers (proxy 502), X-Access-Token (401),
// Basic user, Connect content types, Connect-Protocol-Version, envelope
// framing and an explicit "stdin":false on envd.
//
// Filesystem choice: the fake does not translate paths. Sandbox paths are
// host paths and commands run on the host with os/exec (as the user
// running the tests). Tests therefore configure the client with a real
// temporary directory as its workdir (e.g. Config.Workdir = t.TempDir());
// the sandbox user's home is a temporary directory (Server.Home) that "~"
// and relative paths resolve against, and which commands see as $HOME.
// Like envd, the fake does not put processes in their own process group
// and, at the Connect-Timeout-Ms deadline, kills only the process it
// started.
package e2bfake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"
)

// EnvdVersion is the envd version fake sandboxes report.
const EnvdVersion = "0.5.7"

// User is the only user the fake's envd knows.
const User = "user"

// Request is one request the fake received, for assertions.
type Request struct {
	// Server is "api" or "envd".
	Server string
	Method string
	// Path is the URL path, RawQuery the undecoded query.
	Path, RawQuery string
	Header         http.Header
	// Body holds up to the first 64 KiB of the body.
	Body []byte
}

// Sandbox is the fake's view of one sandbox.
type Sandbox struct {
	ID          string
	TemplateID  string
	State       string // "running" or "paused"
	Metadata    map[string]string
	EnvVars     map[string]string
	AccessToken string // empty unless created with secure=true
	StartedAt   time.Time
	EndAt       time.Time
}

type failure struct {
	status int
	body   string
}

// Server is a running fake. Create it with New.
type Server struct {
	// APIKey is the only control-plane key accepted.
	APIKey string
	// Home is the sandbox user's home directory (a host directory).
	Home string

	api, envd *httptest.Server

	mu           sync.Mutex
	sandboxes    map[string]*Sandbox
	apiFailures  []failure
	envdFailures []failure
	requests     []Request
	procs        map[int]*exec.Cmd
}

// New starts a fake on loopback and closes it when tb's test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	home := filepath.Join(tb.TempDir(), "home", User)
	if err := os.MkdirAll(home, 0o755); err != nil {
		tb.Fatalf("e2bfake: %v", err)
	}
	s := &Server{
		APIKey:    "e2b_" + randHex(20),
		Home:      home,
		sandboxes: map[string]*Sandbox{},
		procs:     map[int]*exec.Cmd{},
	}
	s.api = httptest.NewServer(s.record("api", http.HandlerFunc(s.serveAPI)))
	s.envd = httptest.NewServer(s.record("envd", http.HandlerFunc(s.serveEnvd)))
	tb.Cleanup(s.Close)
	return s
}

// APIURL is the control-plane base URL (Config.APIURL).
func (s *Server) APIURL() string { return s.api.URL }

// SandboxURL is the envd base URL for every sandbox (Config.SandboxURL);
// requests are routed by the E2b-Sandbox-Id header.
func (s *Server) SandboxURL() string { return s.envd.URL }

// Close stops both servers and kills processes still running.
func (s *Server) Close() {
	s.mu.Lock()
	for _, c := range s.procs {
		_ = c.Process.Kill()
	}
	s.mu.Unlock()
	s.api.CloseClientConnections()
	s.envd.CloseClientConnections()
	s.api.Close()
	s.envd.Close()
}

// FailAPI makes the next n control-plane requests fail with status and
// body (a generic {"code","message"} body when empty), before any
// validation.
func (s *Server) FailAPI(n, status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.apiFailures = append(s.apiFailures, failure{status, body})
	}
}

// FailEnvd is FailAPI for envd requests.
func (s *Server) FailEnvd(n, status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.envdFailures = append(s.envdFailures, failure{status, body})
	}
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Sandboxes returns copies of the live sandboxes, sorted by id.
func (s *Server) Sandboxes() []Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	var out []Sandbox
	for _, sb := range s.sandboxes {
		out = append(out, *sb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Pause marks a sandbox paused, as POST /sandboxes/{id}/pause does.
func (s *Server) Pause(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[id]
	if ok {
		sb.State = "paused"
	}
	return ok
}

// record logs each request and serves injected failures.
func (s *Server) record(server string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(&replay{data: body})
		kept := body
		if len(kept) > 64<<10 {
			kept = kept[:64<<10]
		}
		s.mu.Lock()
		s.requests = append(s.requests, Request{Server: server, Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: append([]byte(nil), kept...)})
		failures := &s.apiFailures
		if server == "envd" {
			failures = &s.envdFailures
		}
		var f *failure
		if len(*failures) > 0 {
			f = &(*failures)[0]
			*failures = (*failures)[1:]
		}
		s.mu.Unlock()
		if f != nil {
			b := f.body
			if b == "" {
				b = `{"code":` + itoa(f.status) + `,"message":"` + http.StatusText(f.status) + `"}`
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.status)
			_, _ = io.WriteString(w, b)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type replay struct {
	data []byte
	off  int
}

func (r *replay) Read(p []byte) (int, error) {
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	n := copy(p, r.data[r.off:])
	r.off += n
	return n, nil
}

// expireLocked removes sandboxes past their end time, as E2B kills them.
func (s *Server) expireLocked() {
	now := time.Now()
	for id, sb := range s.sandboxes {
		if sb.State == "running" && now.After(sb.EndAt) {
			delete(s.sandboxes, id)
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
