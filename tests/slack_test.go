package tests

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/activities"
	"github.com/wardenhq/warden/chat"
	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/workflows"
)

// slackStandIn is a local Slack Web API stand-in speaking its wire
// format (form-encoded chat.postMessage and chat.update with the bot
// token, JSON answers with channel and ts). With limit set, it answers
// the first chat.postMessage 429 with Retry-After: 1, as Slack does.
type slackStandIn struct {
	mu      sync.Mutex
	limit   bool
	limited int
	posts   []slackCall
	updates []slackCall
}

type slackCall struct {
	at                         time.Time
	token, channel, ts, blocks string
}

func (s *slackStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	method := strings.TrimPrefix(r.URL.Path, "/")
	if s.limit && method == "chat.postMessage" && s.limited == 0 {
		s.limited++
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c := slackCall{at: time.Now(), token: r.Header.Get("Authorization"), channel: r.Form.Get("channel"), ts: r.Form.Get("ts"), blocks: r.Form.Get("blocks")}
	if c.token == "" {
		// slack-go sends the token as a form field; Slack also takes it as a bearer.
		c.token = "Bearer " + r.Form.Get("token")
	}
	w.Header().Set("Content-Type", "application/json")
	if c.token != "Bearer xoxb-tests" {
		fmt.Fprint(w, `{"ok":false,"error":"invalid_auth"}`)
		return
	}
	switch method {
	case "chat.postMessage":
		s.posts = append(s.posts, c)
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":"1700000000.%06d","message":{"text":"x"}}`, c.channel, len(s.posts))
	case "chat.update":
		s.updates = append(s.updates, c)
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q,"text":"x"}`, c.channel, c.ts)
	default:
		fmt.Fprint(w, `{"ok":false,"error":"unknown_method"}`)
	}
}

func (s *slackStandIn) snapshot() (posts, updates []slackCall, limited int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]slackCall(nil), s.posts...), append([]slackCall(nil), s.updates...), s.limited
}

// TestSlackMessagePerCallUpdatedOnAnswer: through a real server and
// worker, a waiting call gets one Slack message in the channel its route
// picks (the first post answered 429: retried after Retry-After, still
// one message), and once the call is answered elsewhere (the typed
// client, as the inbox and CLI do) that message (same channel and ts) is
// updated with who answered and loses its buttons. The control: a call
// of another agent goes to the default channel.
func TestSlackMessagePerCallUpdatedOnAnswer(t *testing.T) {
	si := &slackStandIn{limit: true}
	srv := httptest.NewServer(si)
	defer srv.Close()
	cl := startWorker(t, warden.Options{Chat: &activities.Chat{Slack: chat.New("xoxb-tests", srv.URL, nil), Channel: "C0DEFAULT",
		Routes: []activities.ChatRoute{{Match: notify.Match{Agent: "ops-*"}, Channel: "C0OPS"}}}})
	ctx := ctxT(t, 90*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: s1, name: Bash, input: {command: \"touch from-slack\"}}]\n  - text: ok\n")
	id := "slack-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}, Agent: "ops-1"}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	waitFor(t, ctx, func() bool { p, _, _ := si.snapshot(); return len(p) == 1 })
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "s1", Decision: workflows.DecisionAllow, By: "carol", Reason: "CHG-3", Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool { _, u, _ := si.snapshot(); return len(u) == 1 })
	time.Sleep(500 * time.Millisecond)
	posts, updates, limited := si.snapshot()
	if limited != 1 || len(posts) != 1 || posts[0].channel != "C0OPS" {
		t.Fatalf("429s %d, posts %+v: want one 429, then one message in C0OPS", limited, posts)
	}
	for _, want := range []string{"touch from-slack", chat.ActionAllow, chat.ActionDeny, id} {
		if !strings.Contains(posts[0].blocks, want) {
			t.Errorf("message lacks %q: %s", want, posts[0].blocks)
		}
	}
	if len(updates) != 1 || updates[0].channel != "C0OPS" || updates[0].ts != "1700000000.000001" {
		t.Fatalf("updates = %+v, want one of the posted message", updates)
	}
	if u := updates[0].blocks; !strings.Contains(u, "allow* by carol") || !strings.Contains(u, "CHG-3") || strings.Contains(u, chat.ActionAllow) {
		t.Errorf("updated message = %s; want who answered, the reason, no buttons", u)
	}

	// The control: a turn of another agent goes to the default channel.
	s2 := script(t, "steps:\n  - tool_calls: [{id: s2, name: Bash, input: {command: \"touch other\"}}]\n  - text: ok\n")
	id2 := "slack-default-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id2, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s2}}); err != nil {
		t.Fatal(err)
	}
	ps2 := waitPending(t, cl, id2, 1)
	waitFor(t, ctx, func() bool { p, _, _ := si.snapshot(); return len(p) == 2 })
	if _, err := cl.Approve(ctx, id2, workflows.Approval{CallID: "s2", Decision: workflows.DecisionDeny, By: "carol", Hash: ps2[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id2); err != nil {
		t.Fatal(err)
	}
	posts, _, _ = si.snapshot()
	if posts[1].channel != "C0DEFAULT" {
		t.Errorf("unrouted call posted to %s, want C0DEFAULT", posts[1].channel)
	}
}
