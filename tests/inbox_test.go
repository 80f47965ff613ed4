package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/workflows"
)

const chromiumPath = "/usr/bin/chromium"

// serveInbox serves an inbox for cl on httptest with an unrestricted
// user alice and a user kube limited to kubectl commands.
func serveInbox(t *testing.T, cl *client.Client) (*httptest.Server, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	srv, err := inbox.New(inbox.Config{
		Client: cl,
		Users: map[string]config.InboxUser{
			"alice": {Token: "alice-token", Password: "alice-pw"},
			"kube":  {Token: "kube-token", Roles: []string{"k8s"}},
		},
		Roles:      map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)"}}},
		Registerer: reg,
		Refresh:    time.Second,
		Content:    env.store,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs, reg
}

// startAsk starts a scripted turn whose first step calls tool with input.
func startAsk(t *testing.T, ctx context.Context, cl *client.Client, id, tool, input string) {
	t.Helper()
	s := script(t, fmt.Sprintf("steps:\n  - tool_calls: [{id: c1, name: %s, input: %s}]\n  - text: finished\n", tool, input))
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
}

// waitListed waits until the cross-turn listing shows every id.
func waitListed(t *testing.T, ctx context.Context, cl *client.Client, ids ...string) {
	t.Helper()
	waitFor(t, ctx, func() bool {
		es, err := cl.ListPending(ctx, client.Filter{})
		if err != nil {
			return false
		}
		for _, id := range ids {
			if !slices.ContainsFunc(es, func(e client.PendingEntry) bool { return e.WorkflowID == id }) {
				return false
			}
		}
		return true
	})
}

func unauthorizedCount(t *testing.T, reg *prometheus.Registry) float64 {
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
	t.Fatal("warden_inbox_unauthorized_total not registered")
	return 0
}

func apiPost(t *testing.T, url, auth string, body any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Warden-Inbox", "1")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// TestInboxAuthorization checks the inbox's refusals over real HTTP
// against a real turn: no credentials → 401, a user whose role does not
// cover the call → 403 and the counter goes up, a covered user's denial
// reaches the model with the approver's name.
func TestInboxAuthorization(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	hs, reg := serveInbox(t, cl)
	id := "inbox-authz-" + fmt.Sprint(time.Now().UnixNano())
	startAsk(t, ctx, cl, id, "Bash", `{command: "touch not-kubectl"}`)
	ps := waitPending(t, cl, id, 1)

	for _, path := range []string{"/", "/api/pending"} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("GET %s without credentials: %d %q, want 401 with a basic challenge", path, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	if code, _ := apiPost(t, hs.URL+"/api/approve", "", map[string]string{"workflow_id": id, "call_id": "c1"}); code != http.StatusUnauthorized {
		t.Errorf("unauthenticated approve: %d, want 401", code)
	}
	before := unauthorizedCount(t, reg)
	code, body := apiPost(t, hs.URL+"/api/approve", "kube-token", map[string]string{"workflow_id": id, "call_id": "c1", "hash": ps[0].Hash})
	if code != http.StatusForbidden || !strings.Contains(body, "may not answer") {
		t.Errorf("kube approving touch: %d %s, want 403", code, body)
	}
	code, _ = apiPost(t, hs.URL+"/api/deny", "kube-token", map[string]string{"workflow_id": id, "call_id": "c1", "reason": "x"})
	if code != http.StatusForbidden {
		t.Errorf("kube denying touch: %d, want 403", code)
	}
	if got := unauthorizedCount(t, reg) - before; got != 2 {
		t.Errorf("warden_inbox_unauthorized_total rose by %v, want 2", got)
	}
	// The kube user's page marks the call as not theirs.
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/?workflow="+id, nil)
	req.Header.Set("Authorization", "Bearer kube-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "touch not-kubectl") || !strings.Contains(string(page), "Your roles do not cover this call") {
		t.Errorf("kube's page: %d\n%s", resp.StatusCode, page)
	}
	// A stale hash is refused by the workflow's validator: 409.
	if code, body := apiPost(t, hs.URL+"/api/approve", "alice-token", map[string]string{"workflow_id": id, "call_id": "c1", "hash": "0000"}); code != http.StatusConflict {
		t.Errorf("stale hash: %d %s, want 409", code, body)
	}
	if code, body := apiPost(t, hs.URL+"/api/deny", "alice-token", map[string]string{"workflow_id": id, "call_id": "c1", "hash": ps[0].Hash, "reason": "not now"}); code != 200 {
		t.Fatalf("alice deny: %d %s", code, body)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rs := toolResults(res); len(rs) != 1 || !strings.Contains(rs[0].Content, "by alice: not now") {
		t.Errorf("tool results = %+v", rs)
	}
}

// needChromium fails the test when chromium is missing, unless
// WARDEN_SKIP_BROWSER=1 says to skip the browser tests.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("WARDEN_SKIP_BROWSER") == "1" {
			t.Skip("chromium not installed and WARDEN_SKIP_BROWSER=1")
		}
		t.Fatalf("chromium not found at %s (apt-get install -y chromium, or set WARDEN_SKIP_BROWSER=1): %v", chromiumPath, err)
	}
}

// browser starts a headless chromium for the test and returns its
// context; it stops with the test.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	actx, cancelA := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1100),
	)
	t.Cleanup(cancelA)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(cancelB)
	return bctx
}

// TestInboxBrowser drives the inbox page with a real headless Chromium:
// allow one turn's call, deny another's with a typed reason, answer an
// AskUser question; each turn resumes and the page drops the entry.
func TestInboxBrowser(t *testing.T) {
	needChromium(t)
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 120*time.Second)
	hs, _ := serveInbox(t, cl)
	prefix := "inbox-ui-" + fmt.Sprint(time.Now().UnixNano())
	allowID, denyID, askID := prefix+"-allow", prefix+"-deny", prefix+"-ask"
	startAsk(t, ctx, cl, allowID, "Bash", `{command: "touch inbox-made"}`)
	startAsk(t, ctx, cl, denyID, "Write", `{file_path: "`+filepath.Join(workdir, "notes.txt")+`", content: "line one\nline two\n"}`)
	startAsk(t, ctx, cl, askID, "AskUser", `{questions: [{question: "Which environment?", header: "Env", options: [{label: staging, description: "safe"}, {label: production, description: "careful"}]}]}`)
	waitListed(t, ctx, cl, allowID, denyID, askID)

	// Screenshots outlive the test so a person can look at them.
	shots, err := os.MkdirTemp("", "warden-inbox-shots-")
	if err != nil {
		t.Fatal(err)
	}
	bctx := browser(t, ctx)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		p := filepath.Join(shots, name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", p)
	}
	entry := func(id string) string { return fmt.Sprintf(`li.entry[data-wf=%q][data-call="c1"]`, id) }
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	if err := chromedp.Do(bctx,
		chromedp.Navigate(hs.URL+"/?token=alice-token&workflow="+prefix),
		chromedp.WaitReady(css(`body[data-live="sse"]`)), // updates come by server push
		chromedp.WaitVisible(css(entry(allowID))),
		chromedp.WaitVisible(css(entry(denyID))),
		chromedp.WaitVisible(css(entry(askID))),
	); err != nil {
		t.Fatalf("load inbox: %v", err)
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(css(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	cmd, diff, user := text(entry(allowID)+" pre.cmd"), text(entry(denyID)+" pre.diff"), text("#user")
	if !strings.Contains(cmd, "touch inbox-made") || !strings.Contains(diff, "+ line one") || user != "alice" {
		t.Errorf("page shows command %q, diff %q, user %q", cmd, diff, user)
	}
	shot("1-pending")
	// A notification's link opens its entry: filtered to the turn,
	// scrolled to and highlighted.
	if err := chromedp.Do(bctx,
		chromedp.Navigate(hs.URL+"/?workflow="+denyID+"#"+denyID+"/c1"),
		chromedp.WaitVisible(css(entry(denyID)+".focus")),
	); err != nil {
		t.Fatalf("open the linked entry: %v", err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(hs.URL+"/?workflow="+prefix)); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("cp", filepath.Join(shots, "1-pending.png"), "/tmp/warden-inbox.png").Run(); err != nil {
		t.Logf("copy screenshot: %v", err)
	}

	// Allow once.
	if err := chromedp.Do(bctx, chromedp.Click(css(entry(allowID)+" button.allow"))); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, allowID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "inbox-made")); err != nil || res.Answer != "finished" {
		t.Errorf("allowed call did not run: %v, answer %q, results %+v", err, res.Answer, toolResults(res))
	}
	if err := chromedp.Do(bctx, chromedp.WaitNotPresent(css(entry(allowID)))); err != nil {
		t.Fatalf("allowed entry still shown: %v", err)
	}

	// Deny with a typed reason.
	reason := "use the staging bucket instead"
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(css(entry(denyID)+" input.deny-reason"), reason),
		chromedp.Click(css(entry(denyID)+" button.deny")),
	); err != nil {
		t.Fatal(err)
	}
	res, err = cl.Result(ctx, denyID)
	if err != nil {
		t.Fatal(err)
	}
	if rs := toolResults(res); len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Content, reason) || !strings.Contains(rs[0].Content, "alice") {
		t.Errorf("denied call's result = %+v", rs)
	}
	if _, err := os.Stat(filepath.Join(workdir, "notes.txt")); err == nil {
		t.Error("denied Write ran")
	}
	if err := chromedp.Do(bctx, chromedp.WaitNotPresent(css(entry(denyID)))); err != nil {
		t.Fatalf("denied entry still shown: %v", err)
	}
	shot("2-after-decisions")

	// Answer the AskUser question with an option and free text.
	if err := chromedp.Do(bctx,
		chromedp.Click(css(entry(askID)+` input[value="staging"]`)),
		chromedp.SendKeys(css(entry(askID)+" input.other"), "after 5pm"),
		chromedp.Click(css(entry(askID)+" button.answer")),
	); err != nil {
		t.Fatal(err)
	}
	res, err = cl.Result(ctx, askID)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != 1 || rs[0].IsError || !strings.Contains(rs[0].Content, "Which environment? → staging") || !strings.Contains(rs[0].Content, "after 5pm") {
		t.Errorf("AskUser result = %+v", rs)
	}
	if err := chromedp.Do(bctx,
		chromedp.WaitNotPresent(css(entry(askID))),
		chromedp.WaitVisible(css("#empty")),
	); err != nil {
		t.Fatalf("page not emptied: %v", err)
	}
	if status := text("#status"); status != "0 waiting" {
		t.Errorf("status line %q, want 0 waiting", status)
	}
	shot("3-empty")
}

// TestInboxStreamPushes reads the inbox's server-sent events: the first
// event lists a waiting call, and once the call is answered a later
// event no longer does, without the page asking again.
func TestInboxStreamPushes(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	hs, _ := serveInbox(t, cl)
	id := "inbox-sse-" + fmt.Sprint(time.Now().UnixNano())
	startAsk(t, ctx, cl, id, "Bash", `{command: "touch sse-made"}`)
	waitListed(t, ctx, cl, id)

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/api/stream?workflow="+id, nil)
	req.Header.Set("Authorization", "Bearer alice-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, ct)
	}
	events := make(chan []client.PendingEntry)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var l struct {
				Items []client.PendingEntry `json:"items"`
			}
			if json.Unmarshal([]byte(data), &l) == nil {
				select {
				case events <- l.Items:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	next := func() []client.PendingEntry {
		t.Helper()
		select {
		case es := <-events:
			return es
		case <-ctx.Done():
			t.Fatal("no event from the stream")
		}
		return nil
	}
	first := next()
	if len(first) != 1 || first[0].WorkflowID != id {
		t.Fatalf("first event lists %+v, want the waiting call of %s", first, id)
	}
	if _, err := cl.ApproveListed(ctx, id, first[0].Pending, workflows.Approval{Decision: workflows.DecisionAllow, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for len(next()) != 0 {
	}
	t.Logf("the answered call left the stream after %s", time.Since(start).Round(time.Millisecond))
}

// TestInboxShowsWhatTheAgentWasDoing: an entry shows the turn's prompt,
// what the agent said in the step, an Edit as a diff against the file as
// it is, and marks the part of a compound command that asked.
func TestInboxShowsWhatTheAgentWasDoing(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 60*time.Second)
	hs, _ := serveInbox(t, cl)
	file := filepath.Join(workdir, "notes.txt")
	if err := os.WriteFile(file, []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := script(t, fmt.Sprintf(`prompt: fix the typo in the notes
steps:
  - tool_calls: [{id: r1, name: Read, input: {file_path: %q}}]
    usage: {input_tokens: 100, output_tokens: 10}
  - text: The second line is misspelled; I will fix it and check the site.
    usage: {input_tokens: 200, output_tokens: 20}
    tool_calls:
      - {id: e1, name: Edit, input: {file_path: %q, old_string: beta, new_string: BETA}}
      - {id: b1, name: Bash, input: {command: "ls && curl -s http://example.com"}}
  - text: done
`, file, file))
	id := "inbox-context-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Prompt: "fix the typo in the notes", Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 2)
	for _, p := range ps {
		if p.Prompt != "fix the typo in the notes" || !strings.Contains(p.Context, "misspelled") {
			t.Errorf("%s: prompt %q, context %q", p.CallID, p.Prompt, p.Context)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/api/pending?workflow="+id, nil)
	req.Header.Set("Authorization", "Bearer alice-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct {
		Items []struct {
			CallID string `json:"call_id"`
			HTML   string `json:"html"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	html := map[string]string{}
	for _, it := range l.Items {
		html[it.CallID] = it.HTML
	}
	for _, want := range []string{`<span class="del">- beta</span>`, `<span class="add">&#43; BETA</span>`, `<span class="ctx">  alpha</span>`, "misspelled", "fix the typo"} {
		if !strings.Contains(html["e1"], want) {
			t.Errorf("edit entry lacks %q:\n%s", want, html["e1"])
		}
	}
	if !strings.Contains(html["b1"], `<mark title="this part asked">curl -s http://example.com</mark>`) {
		t.Errorf("bash entry does not mark the part that asked:\n%s", html["b1"])
	}
	// The approver sees what the turn spent so far.
	if want := "<b>turn so far:</b> " + template.HTMLEscapeString((model.Usage{InputTokens: 300, OutputTokens: 30}).String()); !strings.Contains(html["e1"], want) {
		t.Errorf("edit entry lacks the turn's usage %q:\n%s", want, html["e1"])
	}
	// The approver sees how the call will run.
	for _, p := range ps {
		if p.Sandbox == "" || !strings.Contains(p.Sandbox, "network off") {
			t.Errorf("%s: pending sandbox %q", p.CallID, p.Sandbox)
		}
		if want := "<b>will run with:</b> " + template.HTMLEscapeString(p.Sandbox); !strings.Contains(html[p.CallID], want) {
			t.Errorf("%s entry lacks %q:\n%s", p.CallID, want, html[p.CallID])
		}
	}
}

// TestInboxRemembersExactInput: the inbox's "this exact input" choice
// remembers the call in the turn's policy store without a rule. Its user
// dev may answer the exact call but not add the suggested rule (wider
// than dev's role), which the input scope does not add.
func TestInboxRemembersExactInput(t *testing.T) {
	needChromium(t)
	cl, store, workdir := liveWorker(t)
	ctx := ctxT(t, 90*time.Second)
	srv, err := inbox.New(inbox.Config{
		Client:  cl,
		Users:   map[string]config.InboxUser{"dev": {Token: "dev-token", Roles: []string{"touch"}}},
		Roles:   map[string]config.InboxRole{"touch": {Allow: []string{"Bash(touch exact-made)"}}},
		Refresh: time.Second,
		Content: env.store,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	id := "inbox-exact-" + fmt.Sprint(time.Now().UnixNano())
	liveTurn(t, ctx, cl, id, store, "", "steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch exact-made\"}}]\n  - text: finished\n", nil)
	ps := waitPending(t, cl, id, 1)
	if len(ps[0].Suggestions) == 0 {
		t.Fatalf("pending call has no suggestion to refuse: %+v", ps[0])
	}
	// The suggestion is wider than dev's role: always allowing it is refused.
	if code, body := apiPost(t, hs.URL+"/api/approve", "dev-token", inbox.ApproveRequest{WorkflowID: id, CallID: "c1", Hash: ps[0].Hash,
		Decision: workflows.DecisionAlwaysAllow, Scope: workflows.ScopeNamespace}); code != http.StatusForbidden {
		t.Fatalf("namespace scope: %d %s, want 403", code, body)
	}
	bctx := browser(t, ctx)
	entry := fmt.Sprintf(`li.entry[data-wf=%q][data-call="c1"]`, id)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(hs.URL+"/?token=dev-token&workflow="+id),
		chromedp.WaitVisible(chromedp.CSS(entry)),
		chromedp.SetValue(chromedp.CSS(entry+" select.scope-pick"), "input"),
		chromedp.Click(chromedp.CSS(entry+" button.always-allow")),
	); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "exact-made")); err != nil || res.Answer != "finished" {
		t.Errorf("remembered call did not run: %v, answer %q, results %+v", err, res.Answer, toolResults(res))
	}
	st, err := cl.PolicyState(ctx, store)
	if err != nil || len(st.Remembered) != 1 || st.Remembered[0].Scope != workflows.ScopeInput || st.Remembered[0].By != "dev" {
		t.Fatalf("store = %+v %v, want one exact input remembered by dev", st, err)
	}
}

// TestInboxRefusalReadsOnce: an answer the turn refuses (a scoped always
// allow on a turn that follows no policy store) comes back from the
// inbox's API as the turn's own message, once, without the SDK's
// "(type: wrapError, retryable: true)". Control: the same call answered
// once is accepted.
func TestInboxRefusalReadsOnce(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	hs, _ := serveInbox(t, cl)
	id := "inbox-once-" + tag()
	startAsk(t, ctx, cl, id, "Bash", `{command: "touch once-made"}`)
	ps := waitPending(t, cl, id, 1)
	code, body := apiPost(t, hs.URL+"/api/approve", "alice-token", inbox.ApproveRequest{WorkflowID: id, CallID: "c1", Hash: ps[0].Hash,
		Decision: workflows.DecisionAlwaysAllow, Scope: workflows.ScopeNamespace})
	const msg = "follows no policy store"
	if code != http.StatusConflict || strings.Count(body, msg) != 1 || strings.Contains(body, "wrapError") || strings.Contains(body, "retryable") {
		t.Fatalf("refused scoped answer: %d %s", code, body)
	}
	if code, body := apiPost(t, hs.URL+"/api/approve", "alice-token", inbox.ApproveRequest{WorkflowID: id, CallID: "c1", Hash: ps[0].Hash}); code != http.StatusOK {
		t.Fatalf("control: allow once: %d %s", code, body)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
}
