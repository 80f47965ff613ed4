package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/temporal"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/workflows"
)

// fakeSessions answers the session view's calls from fields and records
// what was sent.
type fakeSessions struct {
	rows    []client.SessionRow
	state   workflows.Summary
	events  []workflows.Event
	err     error // returned by Send and Control
	sent    []workflows.SessionMessage
	control []workflows.SessionControl
}

func (f *fakeSessions) ListSessions(_ context.Context, state string) ([]client.SessionRow, error) {
	var out []client.SessionRow
	for _, r := range f.rows {
		if state == "" || r.State == state {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeSessions) State(_ context.Context, id string) (workflows.Summary, error) {
	if id != "s1" {
		return workflows.Summary{}, fmt.Errorf("query state: workflow %s not found", id)
	}
	return f.state, nil
}

func (f *fakeSessions) Events(context.Context, string, int) (workflows.EventsPage, error) {
	return workflows.EventsPage{Events: f.events}, nil
}

func (f *fakeSessions) Send(_ context.Context, _ string, m workflows.SessionMessage) (workflows.SessionAck, error) {
	if f.err != nil {
		return workflows.SessionAck{}, f.err
	}
	f.sent = append(f.sent, m)
	return workflows.SessionAck{Status: "steering", Turn: 2}, nil
}

func (f *fakeSessions) Control(_ context.Context, _ string, c workflows.SessionControl) (workflows.SessionAck, error) {
	if f.err != nil {
		return workflows.SessionAck{}, f.err
	}
	f.control = append(f.control, c)
	return workflows.SessionAck{Status: "paused", Turn: 2}, nil
}

// sessionServer is newTestServer (alice unrestricted, kube limited to
// kubectl) with fake sessions and its metrics registry.
func sessionServer(t *testing.T) (*Server, *fakeSessions, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	s, err := New(Config{
		Client:     client.New(nil, "unused"),
		Users:      map[string]config.InboxUser{"alice": {Token: "tok-a"}, "kube": {Token: "tok-k", Roles: []string{"k8s"}}},
		Roles:      map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)"}}},
		Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeSessions{}
	s.sess = f
	s.lister = func(context.Context, query) ([]client.PendingEntry, error) { return nil, nil }
	return s, f, reg
}

// do serves one request as the user of token (none when empty); a POST
// carries the CSRF header and a JSON body.
func do(s *Server, method, path, token string, body any) *httptest.ResponseRecorder {
	var r *http.Request
	if body != nil {
		b, _ := json.Marshal(body)
		r = httptest.NewRequest(method, path, strings.NewReader(string(b)))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(csrfHeader, "1")
	} else {
		r = httptest.NewRequest(method, path, nil)
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// TestSessionPostChecks: the session endpoints take the answer
// endpoints' sign-in, CSRF and content-type checks, and check their
// bodies before anything is sent.
func TestSessionPostChecks(t *testing.T) {
	s, f, _ := sessionServer(t)
	msg := SessionMessageRequest{ID: "s1", Text: "hi", Mode: workflows.MessageSteer}
	for _, c := range []struct {
		name   string
		req    func() *http.Request
		status int
		want   string
	}{
		{"no sign-in", func() *http.Request {
			r := httptest.NewRequest("POST", "/api/session/message", strings.NewReader(`{}`))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set(csrfHeader, "1")
			return r
		}, 401, ""},
		{"no CSRF header", func() *http.Request {
			r := httptest.NewRequest("POST", "/api/session/control", strings.NewReader(`{"id":"s1","action":"pause"}`))
			r.Header.Set("Authorization", "Bearer tok-a")
			r.Header.Set("Content-Type", "application/json")
			return r
		}, 403, "CSRF"},
		{"cross-origin", func() *http.Request {
			r := httptest.NewRequest("POST", "/api/session/message", strings.NewReader(`{}`))
			r.Header.Set("Authorization", "Bearer tok-a")
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set(csrfHeader, "1")
			r.Header.Set("Origin", "https://evil.example")
			return r
		}, 403, "cross-origin"},
		{"form post", func() *http.Request {
			r := httptest.NewRequest("POST", "/api/session/message", strings.NewReader(`id=s1`))
			r.Header.Set("Authorization", "Bearer tok-a")
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set(csrfHeader, "1")
			return r
		}, 415, ""},
		{"GET", func() *http.Request {
			r := httptest.NewRequest("GET", "/api/session/message", nil)
			r.Header.Set("Authorization", "Bearer tok-a")
			return r
		}, 405, ""},
	} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, c.req())
		if w.Code != c.status || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s: %d %s, want %d %q", c.name, w.Code, w.Body.String(), c.status, c.want)
		}
	}
	for _, c := range []struct {
		path string
		body any
		want string
	}{
		{"/api/session/message", SessionMessageRequest{Text: "hi", Mode: workflows.MessageSteer}, "id is required"},
		{"/api/session/message", SessionMessageRequest{ID: "s1", Text: "  ", Mode: workflows.MessageSteer}, "needs text"},
		{"/api/session/message", SessionMessageRequest{ID: "s1", Text: "hi", Mode: "shout"}, "want queue, steer or interrupt"},
		{"/api/session/message", map[string]string{"id": "s1", "text": "hi", "mode": "steer", "by": "bob"}, "unknown field"},
		{"/api/session/control", SessionControlRequest{ID: "s1", Action: "stop"}, "want pause, resume or cancel"},
		{"/api/session/control", SessionControlRequest{ID: "s1", Action: workflows.ControlCancel, Reason: " "}, "cancel needs a reason"},
		{"/api/session/control", SessionControlRequest{Action: workflows.ControlPause}, "id is required"},
	} {
		if w := do(s, "POST", c.path, "tok-a", c.body); w.Code != 400 || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s %+v: %d %s, want 400 %q", c.path, c.body, w.Code, w.Body.String(), c.want)
		}
	}
	if len(f.sent)+len(f.control) != 0 {
		t.Fatalf("refused requests were sent: %+v %+v", f.sent, f.control)
	}
	// Accepted: sent as the signed-in user (the client adds its key as Via).
	w := do(s, "POST", "/api/session/message", "tok-k", msg)
	var ack workflows.SessionAck
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &ack) != nil || ack.Status != "steering" || ack.Turn != 2 {
		t.Fatalf("message: %d %s", w.Code, w.Body.String())
	}
	if len(f.sent) != 1 || f.sent[0] != (workflows.SessionMessage{Text: "hi", Mode: workflows.MessageSteer, By: "kube"}) {
		t.Errorf("sent %+v", f.sent)
	}
	w = do(s, "POST", "/api/session/control", "tok-a", SessionControlRequest{ID: "s1", Action: workflows.ControlCancel, Reason: " done "})
	if w.Code != 200 || len(f.control) != 1 || f.control[0] != (workflows.SessionControl{Action: workflows.ControlCancel, Reason: "done", By: "alice"}) {
		t.Errorf("cancel: %d %s, sent %+v", w.Code, w.Body.String(), f.control)
	}
}

// TestSessionRefusals: the workflow's refusals come back as a 4xx with
// the workflow's own reason: a sender it does not take 403 (counted as
// unauthorized), a control that does not apply now or an ended session
// 409; a failure of the server behind the inbox stays a 502.
func TestSessionRefusals(t *testing.T) {
	s, f, reg := sessionServer(t)
	rejected := func(name, msg string) error {
		return fmt.Errorf("%s: %w: %w", name, client.ErrRejected, temporal.NewApplicationError(msg, "wrapError"))
	}
	for _, c := range []struct {
		err    error
		path   string
		body   any
		status int
		want   string
	}{
		{rejected("message", `"kube" may not message s1: senders are bob and its requester`), "/api/session/message",
			SessionMessageRequest{ID: "s1", Text: "hi", Mode: workflows.MessageQueue}, 403, `"kube" may not message s1: senders are bob and its requester`},
		{rejected("control", "s1 is not paused"), "/api/session/control", SessionControlRequest{ID: "s1", Action: workflows.ControlResume}, 409, "s1 is not paused"},
		{rejected("message", "s1 is a single turn, not a session: ..."), "/api/session/message",
			SessionMessageRequest{ID: "s1", Text: "later", Mode: workflows.MessageQueue}, 409, "not a session"},
		{fmt.Errorf("s1 takes no messages: %w (%w)", client.ErrEnded, errors.New("workflow not found")), "/api/session/message",
			SessionMessageRequest{ID: "s1", Text: "hi", Mode: workflows.MessageSteer}, 409, "s1 takes no messages: it has ended"},
		{errors.New("message: connection refused"), "/api/session/message",
			SessionMessageRequest{ID: "s1", Text: "hi", Mode: workflows.MessageSteer}, 502, "connection refused"},
	} {
		f.err = c.err
		before := unauthorized(t, reg)
		w := do(s, "POST", c.path, "tok-k", c.body)
		var out struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(w.Body.Bytes(), &out)
		if w.Code != c.status || !strings.Contains(out.Error, c.want) || strings.Contains(out.Error, "wrapError") {
			t.Errorf("%v: %d %s, want %d %q", c.err, w.Code, w.Body.String(), c.status, c.want)
		}
		if c.status == 403 && !strings.HasPrefix(out.Error, `"kube" may not`) {
			t.Errorf("403 reason %q: want the workflow's reason alone", out.Error)
		}
		if got, want := unauthorized(t, reg)-before, map[bool]float64{true: 1}[c.status == 403]; got != want {
			t.Errorf("%v: unauthorized rose by %v, want %v", c.err, got, want)
		}
	}
}

func unauthorized(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "warden_inbox_unauthorized_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestSessionView: GET /api/session and the page show the state (paused
// by whom and why, turns, queued messages), the waiting calls and the
// session's messages, calls and answers; a user whose roles cover no
// waiting call sees the state but not the conversation (as GET
// /conversation).
func TestSessionView(t *testing.T) {
	s, f, _ := sessionServer(t)
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	f.state = workflows.Summary{Iterations: 3, ToolCalls: 2,
		Pending: []workflows.Pending{{CallID: "c9", Tool: "Bash", Kind: workflows.PendingApproval, Input: json.RawMessage(`{"command":"touch x"}`)}},
		Session: &workflows.SessionSummary{Session: true, State: "paused", Turns: 2, Queued: 1,
			Paused: &workflows.SessionControl{Action: workflows.ControlPause, By: "alice", Via: "inbox", Reason: "weekend", At: at}}}
	f.events = []workflows.Event{
		{Seq: 0, Type: workflows.EventMessage, Text: "message from alice queued for turn 3: also the changelog"},
		{Seq: 1, Type: workflows.EventUsage, Text: "10 tokens"},
		{Seq: 2, Type: workflows.EventModel, Text: " "},
		{Seq: 3, Type: workflows.EventToolCall, CallID: "c9", Tool: "Bash", Input: `{"command":"touch x"}`},
		{Seq: 4, Type: workflows.EventControl, Text: "paused by alice (via inbox): weekend"},
		{Seq: 5, Type: workflows.EventFinal, Text: "done <b>"},
	}
	w := do(s, "GET", "/api/session?id=s1", "tok-a", nil)
	var v SessionView
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &v) != nil {
		t.Fatalf("GET /api/session: %d %s", w.Code, w.Body.String())
	}
	if v.State != "paused" || v.Turns != 2 || v.Queued != 1 || !v.Session || v.Paused == nil || v.Paused.By != "alice" || v.Paused.Reason != "weekend" || v.User != "alice" {
		t.Errorf("view = %+v", v)
	}
	if len(v.Waiting) != 1 || v.Waiting[0] != (WaitingCall{CallID: "c9", Tool: "Bash", Kind: workflows.PendingApproval}) {
		t.Errorf("waiting = %+v", v.Waiting)
	}
	var seqs []int
	for _, e := range v.Events {
		seqs = append(seqs, e.Seq)
	}
	if fmt.Sprint(seqs) != "[0 3 4 5]" || v.Events[3].Line != "answer:  done <b>" || !strings.Contains(v.Events[1].Line, "c9 Bash") {
		t.Errorf("events %v: %+v", seqs, v.Events)
	}
	// kube's roles cover kubectl only: no conversation for kube.
	w = do(s, "GET", "/api/session?id=s1", "tok-k", nil)
	v = SessionView{}
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &v) != nil || len(v.Events) != 0 || !strings.Contains(v.Hidden, "your roles cover no waiting call") || v.State != "paused" {
		t.Errorf("kube's view: %d %s", w.Code, w.Body.String())
	}
	for path, status := range map[string]int{"/api/session": 400, "/api/session?id=nope": 404, "/api/session?id=s1": 401} {
		tok := "tok-a"
		if status == 401 {
			tok = ""
		}
		if w := do(s, "GET", path, tok, nil); w.Code != status {
			t.Errorf("GET %s: %d, want %d", path, w.Code, status)
		}
	}

	// The page: the state, the events as text, this session's entries
	// only (the listing's filter is a prefix: s10 is another session).
	s.lister = func(_ context.Context, q query) ([]client.PendingEntry, error) {
		if q.Workflow != "s1" {
			t.Errorf("page listed %+v", q)
		}
		return []client.PendingEntry{
			{WorkflowID: "s1", Pending: workflows.Pending{CallID: "c9", Tool: "Bash", Kind: workflows.PendingApproval, Input: json.RawMessage(`{"command":"touch x"}`)}},
			{WorkflowID: "s10", Pending: workflows.Pending{CallID: "c1", Tool: "Bash", Kind: workflows.PendingApproval, Input: json.RawMessage(`{"command":"rm other"}`)}},
		}, nil
	}
	w = do(s, "GET", "/session?id=s1", "tok-a", nil)
	page := w.Body.String()
	for _, want := range []string{`data-session="s1"`, `id="state">paused</span>`, "paused by <b>alice</b> (via inbox) at 2025-01-02T03:04:05Z: weekend",
		`<b id="queued-n">1</b> queued`, "touch x", "answer:  done &lt;b&gt;", `<option value="queue" selected>`, `static/session.js`} {
		if !strings.Contains(page, want) {
			t.Errorf("session page lacks %q", want)
		}
	}
	if w.Code != 200 || strings.Contains(page, "rm other") || strings.Contains(page, `id="pause" data-control="pause">`) {
		t.Errorf("session page: %d, shows another session's entry or an enabled pause:\n%s", w.Code, page)
	}
}

// TestSessionsList: the open sessions, one row each (a session's runs
// that continued as new are left out), grouped by state on the page;
// ended ones only when asked for.
func TestSessionsList(t *testing.T) {
	s, f, _ := sessionServer(t)
	now := time.Now()
	f.rows = []client.SessionRow{
		{WorkflowID: "a", State: "idle", Status: "Running", Started: now},
		{WorkflowID: "a", State: "running", Status: "ContinuedAsNew", Started: now.Add(-time.Hour)},
		{WorkflowID: "b", State: "paused", Status: "Running", Started: now},
		{WorkflowID: "c", State: "ended", Status: "Completed", Started: now},
		{WorkflowID: "d", State: "waiting", Status: "Running", Started: now},
	}
	ids := func(path string) string {
		t.Helper()
		w := do(s, "GET", path, "tok-k", nil)
		var l SessionList
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &l) != nil {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body.String())
		}
		var out []string
		for _, r := range l.Sessions {
			out = append(out, r.WorkflowID+":"+r.State)
		}
		return strings.Join(out, " ")
	}
	if got := ids("/api/sessions"); got != "a:idle b:paused d:waiting" {
		t.Errorf("open sessions: %s", got)
	}
	if got := ids("/api/sessions?state=ended"); got != "c:ended" {
		t.Errorf("ended sessions: %s", got)
	}
	if w := do(s, "GET", "/api/sessions?state=sleeping", "tok-a", nil); w.Code != 400 {
		t.Errorf("unknown state: %d", w.Code)
	}
	w := do(s, "GET", "/sessions", "tok-a", nil)
	page := w.Body.String()
	order := []string{`data-state="waiting"`, `href="session?id=d"`, `data-state="paused"`, `href="session?id=b"`, `data-state="running"`, `<li class="none">none</li>`, `data-state="idle"`, `href="session?id=a"`}
	at := 0
	for _, want := range order {
		i := strings.Index(page[at:], want)
		if i < 0 {
			t.Fatalf("sessions page lacks %q after offset %d:\n%s", want, at, page)
		}
		at += i
	}
	if strings.Contains(page, "session?id=c") {
		t.Error("the sessions page lists an ended session")
	}
}
