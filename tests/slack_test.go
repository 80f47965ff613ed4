package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/activities"
	"github.com/wardenhq/warden/chat"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/permission"
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
	cl := startWorker(t, warden.Options{Chat: &activities.Chat{Service: chat.New("xoxb-tests", srv.URL, nil), Channel: "C0DEFAULT",
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

// slackClick is a block_actions callback as Slack posts it: a form with
// the JSON payload, signed with the signing secret at ts.
func slackClick(t *testing.T, url, secret string, ts time.Time, user, action, value, responseURL string) (*http.Response, []byte) {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{"type": "block_actions", "user": map[string]any{"id": user},
		"response_url": responseURL, "actions": []map[string]any{{"action_id": action, "block_id": "warden_actions", "value": value, "type": "button", "action_ts": fmt.Sprint(ts.Unix())}}})
	body := []byte("payload=" + neturl.QueryEscape(string(payload)))
	return slackPost(t, url, secret, ts, body), body
}

func slackPost(t testing.TB, url, secret string, ts time.Time, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/slack/interactivity", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(chat.HeaderTimestamp, fmt.Sprint(ts.Unix()))
	req.Header.Set(chat.HeaderSignature, chat.Sign(secret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestSlackInteractivity: Slack's button clicks on the inbox's server,
// signed as Slack signs them, against a real server and worker. Refused,
// with the call still waiting: a bad signature, a timestamp older than
// 5 minutes, an unmapped Slack user and a user outside the call's roles
// (both told so ephemerally at response_url), and on a server whose
// chat.slack.step_up matches the tool a forged allow. Accepted (the
// controls): the same click by a mapped unrestricted user allows the call
// and the tool runs; on the step-up server a deny is recorded. A replay
// of an accepted click is refused.
func TestSlackInteractivity(t *testing.T) {
	const secret = "slack-signing-secret-tests"
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 90*time.Second)
	rs, lastReply := replyRecorder(t)
	newInbox := func(stepUp []string) *httptest.Server {
		srv, err := inbox.New(inbox.Config{Client: cl, Registerer: prometheus.NewRegistry(), SlackSecret: secret, SlackStepUp: stepUp,
			Users: map[string]config.InboxUser{"alice": {Token: "ta", Slack: "U0ALICE", Roles: []string{"k8s"}}, "bob": {Token: "tb", Slack: "U0BOB"}},
			Roles: map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)"}}}})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		return hs
	}
	plain, stepped := newInbox(nil), newInbox([]string{"Bash"})
	start := func(name, cmd string) (string, workflows.Pending) {
		s := script(t, "steps:\n  - tool_calls: [{id: k1, name: Bash, input: {command: \""+cmd+"\"}}]\n  - text: ok\n")
		id := name + "-" + fmt.Sprint(time.Now().UnixNano())
		if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
			t.Fatal(err)
		}
		return id, waitPending(t, cl, id, 1)[0]
	}
	stillWaiting := func(step, id string) {
		t.Helper()
		if ps, err := cl.Pending(ctx, id); err != nil || len(ps) != 1 {
			t.Fatalf("%s: pending = %v, %v; want the call still waiting", step, ps, err)
		}
	}
	id, p := start("slack-click", "touch from-slack")
	val := chat.Value(id, p)
	now := time.Now()

	// A bad signature and an old timestamp: 401, nothing answered.
	_, body := slackClick(t, plain.URL, "wrong-secret", now, "U0BOB", chat.ActionAllow, val, rs.URL)
	if resp := slackPost(t, plain.URL, "wrong-secret", now, body); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("bad signature: %d", resp.StatusCode)
	}
	if resp, _ := slackClick(t, plain.URL, secret, now.Add(-6*time.Minute), "U0BOB", chat.ActionAllow, val, rs.URL); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("old timestamp: %d", resp.StatusCode)
	}
	stillWaiting("bad signature, old timestamp", id)
	// An unmapped Slack user and one outside the call's roles.
	slackClick(t, plain.URL, secret, now, "U0NOBODY", chat.ActionAllow, val, rs.URL)
	if r := lastReply(); !strings.HasPrefix(r, "ephemeral: You are not a warden approver") {
		t.Errorf("unmapped user reply = %q", r)
	}
	slackClick(t, plain.URL, secret, now.Add(time.Second), "U0ALICE", chat.ActionAllow, val, rs.URL)
	if r := lastReply(); !strings.Contains(r, "may not answer") {
		t.Errorf("user outside the roles: reply = %q", r)
	}
	stillWaiting("unmapped user, user outside the roles", id)

	// The control: bob allows from Slack; the tool runs.
	resp, body := slackClick(t, plain.URL, secret, now.Add(2*time.Second), "U0BOB", chat.ActionAllow, val, rs.URL)
	if resp.StatusCode != http.StatusOK || !strings.Contains(lastReply(), "allow recorded") {
		t.Fatalf("bob's allow: %d, reply %q", resp.StatusCode, lastReply())
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "from-slack")); err != nil {
		t.Errorf("the allowed call did not run: %v", err)
	}
	// The same signed request again: a replay.
	if resp := slackPost(t, plain.URL, secret, now.Add(2*time.Second), body); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("replay: %d", resp.StatusCode)
	}

	// Step-up: no allow from Slack (a forged allow payload is refused),
	// a deny is recorded.
	id2, p2 := start("slack-stepup", "touch stepped")
	val2 := chat.Value(id2, p2)
	slackClick(t, stepped.URL, secret, now.Add(3*time.Second), "U0BOB", chat.ActionAllow, val2, rs.URL)
	if r := lastReply(); !strings.Contains(r, "needs review in the inbox") {
		t.Errorf("forged allow on a step-up call: reply %q", r)
	}
	stillWaiting("forged allow", id2)
	slackClick(t, stepped.URL, secret, now.Add(4*time.Second), "U0BOB", chat.ActionDeny, val2, rs.URL)
	if r := lastReply(); !strings.Contains(r, "deny recorded") {
		t.Errorf("deny on a step-up call: reply %q", r)
	}
	if _, err := cl.Result(ctx, id2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "stepped")); err == nil {
		t.Error("the denied call ran")
	}
}

// TestSlackOneMessageThroughSIGKILL: the worker binary as a user starts
// it (embedded server, chat.slack in its config file, the bot token in
// its environment) posts one message for a waiting call; SIGKILLed once
// the turn has recorded the message and started again, it does not post
// it again, and the answer updates that
// same message.
func TestSlackOneMessageThroughSIGKILL(t *testing.T) {
	si := &slackStandIn{}
	srv := httptest.NewServer(si)
	defer srv.Close()
	t.Setenv(chat.EnvBotToken, "xoxb-tests")
	wbin := buildWorker(t)
	dataDir, workdir, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	cfg := filepath.Join(cwd, "config.yaml")
	if err := os.WriteFile(cfg, []byte(contentConfig()+"chat:\n  slack:\n    channel: C0CRASH\n    api_url: "+srv.URL+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(freePort(t))
	args := []string{"--config", cfg, "--data-dir", dataDir, "--port", port, "--ui-port", "0", "--metrics-addr", "off",
		"--task-queue", "slack-crash", "--workdir", workdir}
	proc, addr := startEmbedded(t, wbin, workdir, args...)
	defer func() { killProcess(t, proc) }()
	ctx := ctxT(t, 3*time.Minute)
	c := dialAt(t, addr, filepath.Join(dataDir, "auth", "operator.key"))
	cl := client.New(c, "slack-crash")
	cl.PollInterval = 50 * time.Millisecond
	s := script(t, "steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch after-crash\"}}]\n  - text: ok\n")
	id := "slack-crash-" + tag()
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 1)
	waitFor(t, ctx, func() bool { p, _, _ := si.snapshot(); return len(p) == 1 })
	// Killed once the turn has recorded where the message is (its
	// pending entry names it): a worker killed between the post and that
	// record posts again on retry, as ChatPost's doc says.
	waitFor(t, ctx, func() bool { ps, err := cl.Pending(ctx, id); return err == nil && len(ps) == 1 && len(ps[0].Chat) == 1 })
	c.Close()
	killProcess(t, proc)

	proc, addr = startEmbedded(t, wbin, workdir, args...)
	c = dialAt(t, addr, filepath.Join(dataDir, "auth", "operator.key"))
	defer c.Close()
	cl = client.New(c, "slack-crash")
	cl.PollInterval = 50 * time.Millisecond
	cl.Via = "operator" // the key dialAt authenticates with
	ps := waitPending(t, cl, id, 1)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "c1", Decision: workflows.DecisionAllow, Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool { _, u, _ := si.snapshot(); return len(u) == 1 })
	time.Sleep(time.Second)
	posts, updates, _ := si.snapshot()
	if len(posts) != 1 || posts[0].channel != "C0CRASH" || len(updates) != 1 || updates[0].ts != "1700000000.000001" {
		t.Fatalf("posts %d, updates %+v; want one message, updated once after the crash", len(posts), updates)
	}
}

// slackClickReason is slackClick with the text of the message's reason
// field in the payload's state, as Slack sends it with a click.
func slackClickReason(t testing.TB, url, secret string, ts time.Time, user, action, value, responseURL, reason string) {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{"type": "block_actions", "user": map[string]any{"id": user},
		"response_url": responseURL, "actions": []map[string]any{{"action_id": action, "block_id": "warden_actions", "value": value, "type": "button", "action_ts": fmt.Sprint(ts.Unix())}},
		"state": map[string]any{"values": map[string]any{chat.BlockReason: map[string]any{chat.ActionReason: map[string]any{"type": "plain_text_input", "value": reason}}}}})
	slackPost(t, url, secret, ts, []byte("payload="+neturl.QueryEscape(string(payload))))
}

// TestSlackReasonAndQuorum: a call under a two-person rule that needs a
// reason. From Slack, an allow without a reason is refused (nothing
// answered); with one typed in the message's reason field, it counts as
// the first of two ("1 of 2" in the reply) and the call still waits; a
// second approver's allow runs it, and the audit trail (the answered
// events) carries each person's own reason. Control: the message shows
// the quorum and a required reason field.
func TestSlackReasonAndQuorum(t *testing.T) {
	const secret = "slack-signing-secret-quorum"
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 90*time.Second)
	rs, last := replyRecorder(t)
	srv, err := inbox.New(inbox.Config{Client: cl, Registerer: prometheus.NewRegistry(), SlackSecret: secret,
		Users: map[string]config.InboxUser{"bob": {Token: "tb", Slack: "U0BOB"}, "carol": {Token: "tc", Slack: "U0CAROL"}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	pc, err := permission.Policy{Quorum: []permission.QuorumRule{{Rule: "Bash(touch:*)", Approvals: 2, RequireReason: true}}}.Context()
	if err != nil {
		t.Fatal(err)
	}
	s := script(t, "steps:\n  - tool_calls: [{id: q1, name: Bash, input: {command: \"touch two-approvers\"}}]\n  - text: ok\n")
	id := "slack-quorum-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}, Permission: pc}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]
	msg, _ := json.Marshal(chat.Blocks(id, p, "", ""))
	if !strings.Contains(string(msg), "needs 2 distinct approvers") || !strings.Contains(string(msg), chat.ActionReason) || strings.Contains(string(msg), `"optional":true`) {
		t.Errorf("the message lacks the quorum or a required reason field: %s", msg)
	}
	val := chat.Value(id, p)
	now := time.Now()
	slackClickReason(t, hs.URL, secret, now, "U0BOB", chat.ActionAllow, val, rs.URL, "")
	if r := last(); !strings.Contains(r, "needs a reason") {
		t.Errorf("an allow without a reason: reply %q", r)
	}
	slackClickReason(t, hs.URL, secret, now.Add(time.Second), "U0BOB", chat.ActionAllow, val, rs.URL, "CHG-1 rollout")
	if r := last(); !strings.Contains(r, "1 of 2") {
		t.Errorf("the first allow: reply %q", r)
	}
	if ps, err := cl.Pending(ctx, id); err != nil || len(ps) != 1 || len(ps[0].Approvals) != 1 {
		t.Fatalf("after one allow: %+v %v", ps, err)
	}
	slackClickReason(t, hs.URL, secret, now.Add(2*time.Second), "U0CAROL", chat.ActionAllow, val, rs.URL, "second pair of eyes")
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "two-approvers")); err != nil {
		t.Errorf("the call did not run after two allows: %v", err)
	}
	page, err := cl.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var answered []string
	for _, e := range page.Events {
		if e.Type == workflows.EventAnswered {
			answered = append(answered, e.Text)
		}
	}
	all := strings.Join(answered, "\n")
	if !strings.Contains(all, "from Slack: CHG-1 rollout") || !strings.Contains(all, "from Slack: second pair of eyes") {
		t.Errorf("answered events %q lack the reasons", answered)
	}
}

// replyRecorder is a response_url receiver: it keeps the messages the
// inbox sends back to Slack ("ephemeral: text"), and last returns the
// latest ("" none).
func replyRecorder(t *testing.T) (srv *httptest.Server, last func() string) {
	var mu sync.Mutex
	var replies []string
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		replies = append(replies, fmt.Sprint(m["response_type"], ": ", m["text"]))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(replies) == 0 {
			return ""
		}
		return replies[len(replies)-1]
	}
}

// rehash applies a policy to store that leaves turn id's one waiting
// call (old) waiting, which re-hashes it, and returns the call as it
// waits then.
func rehash(t *testing.T, ctx context.Context, cl *client.Client, store, id string, old workflows.Pending) workflows.Pending {
	t.Helper()
	if _, err := cl.SetPolicy(ctx, store, workflows.LiveRules{Allow: []string{"Bash(echo:*)"}}, "ops"); err != nil {
		t.Fatal(err)
	}
	var cur workflows.Pending
	waitFor(t, ctx, func() bool {
		ps, err := cl.Pending(ctx, id)
		if err == nil && len(ps) == 1 && ps[0].Hash != old.Hash {
			cur = ps[0]
			return true
		}
		return false
	})
	return cur
}

// TestSlackStaleMessageRefreshed: a call waits in a turn that follows a
// policy store, and its Slack message carries the call's hash. A policy
// change decides the call again (it still waits, with a new hash). A
// click on the old message answers nothing: the inbox replaces that
// message (replace_original through the response_url) with the call as
// it is now, and a click on the refreshed message's button runs the
// call. Control: the old hash is what the refreshed message no longer
// carries, and the call did not run after the stale click.
func TestSlackStaleMessageRefreshed(t *testing.T) {
	const secret = "slack-signing-secret-stale"
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir, Client: env.c})
	ctx := ctxT(t, 90*time.Second)
	store := "policy-stale-" + tag()
	if _, err := cl.StartPolicyStore(ctx, store); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bodies []map[string]any
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		bodies = append(bodies, m)
		mu.Unlock()
	}))
	defer rs.Close()
	srv, err := inbox.New(inbox.Config{Client: cl, Registerer: prometheus.NewRegistry(), SlackSecret: secret, PublicURL: "https://inbox.example",
		Users: map[string]config.InboxUser{"bob": {Token: "tb", Slack: "U0BOB"}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	id := "slack-stale-" + tag()
	liveTurn(t, ctx, cl, id, store, "", "steps:\n  - tool_calls: [{id: s1, name: Bash, input: {command: \"touch after-refresh\"}}]\n  - text: ok\n", nil)
	old := waitPending(t, cl, id, 1)[0]
	oldVal := chat.Value(id, old)
	cur := rehash(t, ctx, cl, store, id, old)
	now := time.Now()
	slackClick(t, hs.URL, secret, now, "U0BOB", chat.ActionAllow, oldVal, rs.URL)
	mu.Lock()
	got := slices.Clone(bodies)
	mu.Unlock()
	var refreshed, note string
	for _, b := range got {
		raw, _ := json.Marshal(b)
		if b["replace_original"] == true {
			refreshed = string(raw)
		} else {
			note = fmt.Sprint(b["text"])
		}
	}
	newVal := chat.Value(id, cur)
	if !strings.Contains(refreshed, newVal) || strings.Contains(refreshed, oldVal) || !strings.Contains(refreshed, "inbox.example") {
		t.Fatalf("the stale click did not replace the message with the call as it is (want value %s, not %s):\n%s", newVal, oldVal, refreshed)
	}
	if !strings.Contains(note, "decided again") || !strings.Contains(note, "Nothing was answered") {
		t.Errorf("the stale click's reply: %q", note)
	}
	if _, err := os.Stat(filepath.Join(workdir, "after-refresh")); err == nil {
		t.Fatal("the stale click ran the call")
	}
	slackClick(t, hs.URL, secret, now.Add(time.Second), "U0BOB", chat.ActionAllow, newVal, rs.URL)
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "after-refresh")); err != nil {
		t.Errorf("the click on the refreshed message did not run the call: %v", err)
	}
}

// TestSlackMessageFollowsPolicyChange: a call waits in a turn that
// follows a policy store; its Slack message (posted by the worker to the
// Slack stand-in) carries the call's hash. A policy apply decides the
// call again and it still waits, with a new hash: without any click the
// worker updates that message (same channel and ts) with buttons that
// carry the new hash, and webhooks get approval_updated with that hash.
// A click on the updated message's button runs the call. The control is
// the message as posted: its value is the old hash, which the server no
// longer takes.
func TestSlackMessageFollowsPolicyChange(t *testing.T) {
	const secret = "slack-signing-secret-follow"
	si := &slackStandIn{}
	slackSrv := httptest.NewServer(si)
	defer slackSrv.Close()
	hook := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}}
	hookSrv := httptest.NewServer(hook)
	defer hookSrv.Close()
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir, Client: env.c,
		Chat:     &activities.Chat{Service: chat.New("xoxb-tests", slackSrv.URL, nil), Channel: "C0F"},
		Notifier: &notify.Sender{URLs: []string{hookSrv.URL}, Secret: hookSecret}})
	ctx := ctxT(t, 90*time.Second)
	store := "policy-follow-" + tag()
	if _, err := cl.StartPolicyStore(ctx, store); err != nil {
		t.Fatal(err)
	}
	srv, err := inbox.New(inbox.Config{Client: cl, Registerer: prometheus.NewRegistry(), SlackSecret: secret,
		Users: map[string]config.InboxUser{"bob": {Token: "tb", Slack: "U0BOB"}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	rs, _ := replyRecorder(t)
	defer rs.Close()

	id := "slack-follow-" + tag()
	liveTurn(t, ctx, cl, id, store, "", "steps:\n  - tool_calls: [{id: f1, name: Bash, input: {command: \"touch followed\"}}]\n  - text: ok\n", nil)
	old := waitPending(t, cl, id, 1)[0]
	oldVal := chat.Value(id, old)
	waitFor(t, ctx, func() bool { ps, _, _ := si.snapshot(); return len(ps) == 1 })
	posts, _, _ := si.snapshot()
	if !strings.Contains(posts[0].blocks, oldVal) {
		t.Fatalf("the posted message does not carry the call's hash %s:\n%s", oldVal, posts[0].blocks)
	}

	cur := rehash(t, ctx, cl, store, id, old)
	newVal := chat.Value(id, cur)
	var upd slackCall
	waitFor(t, ctx, func() bool {
		_, us, _ := si.snapshot()
		for _, u := range us {
			if strings.Contains(u.blocks, newVal) {
				upd = u
				return true
			}
		}
		return false
	})
	if upd.channel != "C0F" || upd.ts != "1700000000.000001" {
		t.Errorf("the update went to %s/%s, not the posted message", upd.channel, upd.ts)
	}
	if strings.Contains(upd.blocks, oldVal) || !strings.Contains(upd.blocks, chat.ActionAllow) {
		t.Fatalf("the updated message still carries the old hash, or lost its buttons:\n%s", upd.blocks)
	}
	waitFor(t, ctx, func() bool {
		hook.mu.Lock()
		defer hook.mu.Unlock()
		return slices.ContainsFunc(hook.events, func(e notify.Event) bool {
			return e.Type == notify.TypeApprovalUpdated && e.CallID == "f1" && e.Hash == cur.Hash
		})
	})
	if _, err := os.Stat(filepath.Join(workdir, "followed")); err == nil {
		t.Fatal("the call ran before anyone answered")
	}
	// The value as the updated message carries it, clicked.
	slackClick(t, hs.URL, secret, time.Now(), "U0BOB", chat.ActionAllow, newVal, rs.URL)
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "followed")); err != nil {
		t.Errorf("the click on the updated message did not run the call: %v", err)
	}
}

// TestSlackWithdrawnOnInterrupt: an interrupt sent to a turn whose call
// waits for an approval withdraws the call, and its Slack message is
// updated to say so (who interrupted, no buttons left); the call never
// runs. The control is the message as posted, with its buttons.
func TestSlackWithdrawnOnInterrupt(t *testing.T) {
	si := &slackStandIn{}
	srv := httptest.NewServer(si)
	defer srv.Close()
	cl := startWorker(t, warden.Options{Chat: &activities.Chat{Service: chat.New("xoxb-tests", srv.URL, nil), Channel: "C0DEFAULT"}})
	ctx := ctxT(t, 90*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: w1, name: Bash, input: {command: \"touch withdrawn-by-slack\"}}]\n  - text: ok\n")
	id := "slack-withdraw-" + tag()
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 1)
	waitFor(t, ctx, func() bool { p, _, _ := si.snapshot(); return len(p) == 1 })
	if ack, err := cl.Send(ctx, id, workflows.SessionMessage{Text: "wrong branch", Mode: workflows.MessageInterrupt, By: "dave"}); err != nil || ack.Status != "interrupted" {
		t.Fatalf("interrupt: %+v, %v", ack, err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rs := toolResults(res); len(rs) != 1 || !strings.Contains(rs[0].Content, "did not run") {
		t.Fatalf("tool results %+v", rs)
	}
	waitFor(t, ctx, func() bool { _, u, _ := si.snapshot(); return len(u) == 1 })
	posts, updates, _ := si.snapshot()
	if !strings.Contains(posts[0].blocks, chat.ActionAllow) {
		t.Fatalf("the posted message has no buttons: %s", posts[0].blocks)
	}
	if u := updates[0].blocks; !strings.Contains(u, "withdrawn* by dave") || !strings.Contains(u, "wrong branch") || strings.Contains(u, chat.ActionAllow) {
		t.Errorf("updated message = %s; want withdrawn by dave, the message, no buttons", u)
	}
}

// TestQuorumProgressInChannels: a call that needs two approvers, allowed
// by bob: its Slack message is updated to say who allowed (1 of 2) with
// its buttons still live, and webhooks get approval_progress naming bob;
// once carol allows too, the message and approval_answered name both.
// The control is the message as posted: 0 of 2, nobody named.
func TestQuorumProgressInChannels(t *testing.T) {
	si := &slackStandIn{}
	slackSrv := httptest.NewServer(si)
	defer slackSrv.Close()
	hook := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}}
	hookSrv := httptest.NewServer(hook)
	defer hookSrv.Close()
	cl := startWorker(t, warden.Options{Chat: &activities.Chat{Service: chat.New("xoxb-tests", slackSrv.URL, nil), Channel: "C0Q"},
		Notifier: &notify.Sender{URLs: []string{hookSrv.URL}, Secret: hookSecret}})
	ctx := ctxT(t, 90*time.Second)
	pc, err := permission.Policy{Quorum: []permission.QuorumRule{{Rule: "Bash(touch:*)", Approvals: 2}}}.Context()
	if err != nil {
		t.Fatal(err)
	}
	s := script(t, "steps:\n  - tool_calls: [{id: q1, name: Bash, input: {command: \"touch quorum-progress\"}}]\n  - text: ok\n")
	id := "quorum-progress-" + tag()
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}, Permission: pc}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]
	waitFor(t, ctx, func() bool { ps, _, _ := si.snapshot(); return len(ps) == 1 })
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "q1", Hash: p.Hash, Decision: workflows.DecisionAllow, By: "bob"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool { _, u, _ := si.snapshot(); return len(u) == 1 })
	posts, updates, _ := si.snapshot()
	if !strings.Contains(posts[0].blocks, "0 of 2 so far") || strings.Contains(posts[0].blocks, "allowed by") {
		t.Fatalf("the posted message: %s", posts[0].blocks)
	}
	if u := updates[0].blocks; !strings.Contains(u, "(1 of 2 so far); allowed by bob") || !strings.Contains(u, chat.ActionAllow) {
		t.Fatalf("after bob's allow the message is %s; want 1 of 2 by bob, buttons live", u)
	}
	events := func() []notify.Event {
		hook.mu.Lock()
		defer hook.mu.Unlock()
		return slices.Clone(hook.events)
	}
	waitFor(t, ctx, func() bool {
		return slices.ContainsFunc(events(), func(e notify.Event) bool {
			return e.Type == notify.TypeApprovalRequested && strings.HasPrefix(e.Message, "Permission required for Bash") && e.Reason != ""
		})
	})
	waitFor(t, ctx, func() bool {
		return slices.ContainsFunc(events(), func(e notify.Event) bool {
			return e.Type == notify.TypeApprovalProgress && e.Answer != nil && e.Answer.Partial && slices.Equal(e.Answer.Approvers, []string{"bob"}) && e.Answer.Progress == "1 of 2"
		})
	})
	p = waitPending(t, cl, id, 1)[0]
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "q1", Hash: p.Hash, Decision: workflows.DecisionAllow, By: "carol"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool { _, u, _ := si.snapshot(); return len(u) == 2 })
	_, updates, _ = si.snapshot()
	if u := updates[1].blocks; !strings.Contains(u, "allow* by bob, carol") || !strings.Contains(u, "2 of 2 approvals") || strings.Contains(u, chat.ActionAllow) {
		t.Errorf("the answered message is %s; want both approvers, no buttons", u)
	}
	waitFor(t, ctx, func() bool {
		return slices.ContainsFunc(events(), func(e notify.Event) bool {
			return e.Type == notify.TypeApprovalAnswered && e.Answer != nil && slices.Equal(e.Answer.Approvers, []string{"bob", "carol"})
		})
	})
}
