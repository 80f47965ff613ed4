package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/wardenhq/warden/workflows"
)

// standIn is a local Slack Web API stand-in speaking its wire format:
// form-encoded chat.postMessage and chat.update with the bot token as a
// bearer, answering {"ok":true,"channel":...,"ts":...}; limited answers
// the first request with 429 and Retry-After, as Slack does.
type standIn struct {
	mu      sync.Mutex
	limited bool
	calls   []apiCall
	n       int
}

type apiCall struct {
	method, token, channel, ts, blocks, metadata string
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limited {
		s.limited = false
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c := apiCall{method: strings.TrimPrefix(r.URL.Path, "/"), token: r.Header.Get("Authorization"), channel: r.Form.Get("channel"),
		ts: r.Form.Get("ts"), blocks: r.Form.Get("blocks"), metadata: r.Form.Get("metadata")}
	if c.token == "" {
		c.token = "Bearer " + r.Form.Get("token")
	}
	s.calls = append(s.calls, c)
	w.Header().Set("Content-Type", "application/json")
	switch c.method {
	case "chat.postMessage":
		s.n++
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":"1700000000.%06d","message":{"text":"x"}}`, c.channel, s.n)
	case "chat.update":
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q,"text":"x"}`, c.channel, c.ts)
	default:
		fmt.Fprint(w, `{"ok":false,"error":"unknown_method"}`)
	}
}

func (s *standIn) snapshot() []apiCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]apiCall(nil), s.calls...)
}

func samplePending() workflows.Pending {
	return workflows.Pending{Kind: workflows.PendingApproval, CallID: "call_1", Tool: "Bash", Input: json.RawMessage(`{"command":"kubectl rollout restart deploy/web"}`),
		Message: "Permission required for Bash", Reason: "Mode: default", Hash: "h1", Context: "restarting web to pick up the config",
		Sandbox: "write /work, network off", Deadline: time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)}
}

// actionIDs lists the action ids of the buttons in a blocks JSON.
func actionIDs(t *testing.T, blocks string) []string {
	t.Helper()
	var bs []struct {
		Type     string `json:"type"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(blocks), &bs); err != nil {
		t.Fatalf("blocks %q: %v", blocks, err)
	}
	var out []string
	for _, b := range bs {
		if b.Type == "actions" {
			for _, e := range b.Elements {
				out = append(out, e.ActionID)
			}
		}
	}
	return out
}

// TestPostAndAnswer: a call's message is posted with the bot token, the
// call in its metadata, its input, why it asks, the sandbox and the
// deadline, and allow / deny / open buttons; once answered, chat.update
// replaces it (same channel and ts) with who answered, how and when,
// and no buttons.
func TestPostAndAnswer(t *testing.T) {
	si := &standIn{}
	srv := httptest.NewServer(si)
	defer srv.Close()
	s := New("xoxb-test", srv.URL, nil)
	ctx := context.Background()
	p := samplePending()
	ref, err := s.Post(ctx, "C0OPS", "turn-1", p, "http://inbox.example/#turn-1/call_1", StepUp(p, nil))
	if err != nil {
		t.Fatal(err)
	}
	if ref.Channel != "C0OPS" || ref.TS == "" {
		t.Fatalf("ref = %+v", ref)
	}
	calls := si.snapshot()
	if len(calls) != 1 || calls[0].method != "chat.postMessage" || calls[0].token != "Bearer xoxb-test" {
		t.Fatalf("calls = %+v", calls)
	}
	for _, want := range []string{"kubectl rollout restart", "Mode: default", "write /work, network off", "2026-12-02 08:00 UTC", "restarting web"} {
		if !strings.Contains(calls[0].blocks, want) {
			t.Errorf("message lacks %q: %s", want, calls[0].blocks)
		}
	}
	if !strings.Contains(calls[0].metadata, `"call_id":"call_1"`) || !strings.Contains(calls[0].metadata, MetadataType) {
		t.Errorf("metadata = %s", calls[0].metadata)
	}
	if got := actionIDs(t, calls[0].blocks); strings.Join(got, ",") != "warden_allow,warden_deny,warden_open" {
		t.Errorf("buttons = %v", got)
	}
	err = s.Answered(ctx, ref, "turn-1", p, workflows.AnswerNote{By: "alice", Via: "inbox", Decision: "allow", Reason: "OPS-9",
		At: time.Date(2026, 12, 2, 5, 1, 2, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	calls = si.snapshot()
	if len(calls) != 2 || calls[1].method != "chat.update" || calls[1].channel != ref.Channel || calls[1].ts != ref.TS {
		t.Fatalf("update = %+v", calls)
	}
	for _, want := range []string{"allow* by alice via inbox", "2026-12-02 05:01:02 UTC", "OPS-9"} {
		if !strings.Contains(calls[1].blocks, want) {
			t.Errorf("updated message lacks %q: %s", want, calls[1].blocks)
		}
	}
	if got := actionIDs(t, calls[1].blocks); len(got) != 0 {
		t.Errorf("answered message still has buttons %v", got)
	}
}

// TestStepUpNoAllowButton: a call that trips a safety check, asks for
// the network, writes outside the working directories or matches a
// step_up rule gets no allow button and says "review in inbox"; the
// plain call (the control) gets one.
func TestStepUpNoAllowButton(t *testing.T) {
	cases := map[string]func(*workflows.Pending){
		"safety check": func(p *workflows.Pending) { p.BypassImmune = true },
		"network": func(p *workflows.Pending) {
			p.Sandbox = "write /work, network to registry.npmjs.org (network_hosts approved by a person)"
		},
		"no sandbox": func(p *workflows.Pending) {
			p.Sandbox = "no sandbox (backend.local.sandbox: off): runs as the worker's user"
		},
		"outside writes": func(p *workflows.Pending) { p.Sandbox = "write /work, may write /etc/nginx, network off" },
		"step_up rule":   func(p *workflows.Pending) { p.Tool = "mcp__deploy" },
	}
	for name, f := range cases {
		p := samplePending()
		f(&p)
		why := StepUp(p, []string{"mcp__*"})
		b, _ := json.Marshal(Blocks("turn-1", p, "", why))
		ids := actionIDs(t, string(b))
		if why == "" || strings.Contains(strings.Join(ids, ","), ActionAllow) || !strings.Contains(string(b), "Review in inbox") {
			t.Errorf("%s: step-up %q, buttons %v", name, why, ids)
		}
	}
	p := samplePending()
	if why := StepUp(p, []string{"mcp__*"}); why != "" {
		t.Errorf("plain call: step-up %q", why)
	}
}

// TestRateLimited: Slack's 429 comes back as RateLimited with its
// Retry-After, so the caller retries after that delay; the next attempt
// posts.
func TestRateLimited(t *testing.T) {
	si := &standIn{limited: true}
	srv := httptest.NewServer(si)
	defer srv.Close()
	s := New("xoxb-test", srv.URL, nil)
	_, err := s.Post(context.Background(), "C1", "turn-1", samplePending(), "", "")
	var rl *RateLimited
	if !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
		t.Fatalf("err = %v, want RateLimited after 2s", err)
	}
	if _, err := s.Post(context.Background(), "C1", "turn-1", samplePending(), "", ""); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if n := len(si.snapshot()); n != 1 {
		t.Fatalf("%d messages posted, want 1", n)
	}
}

// TestVerify: a callback signed as Slack signs it passes; a wrong
// secret, a changed body, a timestamp outside the window, and missing
// headers are refused.
func TestVerify(t *testing.T) {
	now := time.Now()
	body := []byte("payload=%7B%22type%22%3A%22block_actions%22%7D")
	h := func(secret string, ts time.Time, b []byte) http.Header {
		return http.Header{HeaderSignature: {Sign(secret, ts, b)}, HeaderTimestamp: {fmt.Sprint(ts.Unix())}}
	}
	if err := Verify("s3cret", h("s3cret", now, body), body, now); err != nil {
		t.Fatalf("good signature: %v", err)
	}
	for name, c := range map[string]struct {
		h    http.Header
		want error
	}{
		"bad secret":   {h("other", now, body), ErrSignature},
		"changed body": {h("s3cret", now, []byte("payload=x")), ErrSignature},
		"old":          {h("s3cret", now.Add(-6*time.Minute), body), ErrTimestamp},
		"future":       {h("s3cret", now.Add(6*time.Minute), body), ErrTimestamp},
		"no headers":   {http.Header{}, ErrHeaders},
	} {
		if err := Verify("s3cret", c.h, body, now); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
	}
	if err := Verify("", h("", now, body), body, now); !errors.Is(err, ErrNoSecret) {
		t.Errorf("empty secret: %v", err)
	}
}

// budgetPending is a budget approval as a turn parks it.
func budgetPending(req workflows.BudgetRequest) workflows.Pending {
	in, _ := json.Marshal(req)
	return workflows.Pending{Kind: workflows.PendingBudget, CallID: "budget_1", Tool: workflows.BudgetTool, Input: in, Hash: "h1",
		Message:  fmt.Sprintf("budget %s reached: %s of %s spent; the turn was about to call the model.", req.Kind, req.Spent, req.Limit),
		Deadline: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)}
}

// TestBudgetMessage: a budget approval's message says what was spent
// and the limit, and offers a raise by the limit once more (the button
// says how much), a deny and the inbox for other amounts; no allow
// button. Under step-up, or for a bound that does not read, there is no
// raise button. Once answered, the message names who raised it and by
// how much.
func TestBudgetMessage(t *testing.T) {
	p := budgetPending(workflows.BudgetRequest{Kind: "cost", Spent: "5.01", Limit: "5", Next: "call the model"})
	b, _ := json.Marshal(Blocks("turn-1", p, "https://inbox.example/?workflow=turn-1#turn-1/budget_1", ""))
	ids := strings.Join(actionIDs(t, string(b)), ",")
	for _, want := range []string{"budget cost reached: 5.01 of 5", "Raise: cost +5", "limit once more (cost +5)", "Deny (end the turn)", "Open in inbox"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("budget message lacks %q: %s", want, b)
		}
	}
	if ids != ActionRaise+","+ActionDeny+","+ActionOpen {
		t.Errorf("buttons %s, want raise, deny, open", ids)
	}
	if r, ok := LimitAgain(p); !ok || r.Cost != 5 {
		t.Errorf("LimitAgain = %+v, %v", r, ok)
	}
	for name, q := range map[string]workflows.Pending{
		"step-up":      p,
		"unread bound": budgetPending(workflows.BudgetRequest{Kind: "cost", Spent: "x", Limit: "lots"}),
		"not a budget": samplePending(),
	} {
		why := ""
		if name == "step-up" {
			why = StepUp(q, []string{"Budget"})
		}
		b, _ := json.Marshal(Blocks("turn-1", q, "", why))
		if strings.Contains(strings.Join(actionIDs(t, string(b)), ","), ActionRaise) {
			t.Errorf("%s: a raise button: %s", name, b)
		}
	}
	done, _ := json.Marshal(AnsweredBlocks("turn-1", p, workflows.AnswerNote{By: "bob", Decision: "allow", Raise: &workflows.Budget{Cost: 5}}))
	if !strings.Contains(string(done), "*allow* by bob") || !strings.Contains(string(done), "Raised by:* cost +5") ||
		!strings.Contains(string(done), "5.01 of 5") || strings.Contains(string(done), ActionRaise) {
		t.Errorf("answered budget message: %s", done)
	}
}

// TestInputShownUnescaped: a call's input reads in its message and in the
// answered message as typed (>> and && as themselves), not as Go's
// \u003e escapes.
func TestInputShownUnescaped(t *testing.T) {
	p := samplePending()
	in, err := json.Marshal(map[string]string{"command": "echo up >> /var/log/deploy && kubectl get pods"})
	if err != nil {
		t.Fatal(err)
	}
	p.Input = in
	for name, blocks := range map[string][]slack.Block{
		"waiting":  Blocks("wf-1", p, "", ""),
		"answered": AnsweredBlocks("wf-1", p, workflows.AnswerNote{Decision: string(workflows.DecisionAllow), By: "carol"}),
	} {
		var text strings.Builder
		for _, b := range blocks {
			if s, ok := b.(*slack.SectionBlock); ok && s.Text != nil {
				text.WriteString(s.Text.Text + "\n")
			}
		}
		got := text.String()
		if !strings.Contains(got, `echo up >> /var/log/deploy && kubectl get pods`) || strings.Contains(got, `\u00`) {
			t.Errorf("%s message shows the input escaped:\n%s", name, got)
		}
	}
}
