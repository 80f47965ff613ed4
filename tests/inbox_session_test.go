package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/workflows"
)

// TestInboxSessionPage drives a session's page in the inbox the built
// worker serves (with its delegate key) in a headless Chromium at phone
// width: a steer and a queued message sent from the page while a tool
// call runs, a pause that holds the next model call until the page's
// resume, a waiting call answered on the page, and a cancel with a
// reason. What the session then shows is read with the operator's
// client. Over HTTP: a user the session does not take is refused with
// the workflow's reason (403), a pause of a paused session and a message
// to a cancelled one are refused (409).
func TestInboxSessionPage(t *testing.T) {
	needChromium(t)
	port := freePort(t)
	r := newSessionRig(t, fmt.Sprintf("inbox: {enabled: true, listen: \"127.0.0.1:%d\", users: {alice: {token: alice-token}, carol: {token: carol-token}}}\n", port))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx := ctxT(t, 4*time.Minute)
	waitFor(t, ctx, func() bool {
		resp, err := http.Get(base + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	op := dialAt(t, r.addr, filepath.Join(r.data, "auth", "operator.key"))
	t.Cleanup(op.Close)
	cl := client.New(op, "session")
	state := func(id string) workflows.Summary {
		t.Helper()
		st, err := cl.State(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	mark := r.tick + "-UI"
	s := r.script(fmt.Sprintf("steps:\n"+
		"  - tool_calls: [{id: t1, name: Bash, input: {command: \"sh tick.sh %s 40\"}}]\n"+
		"  - text: first done\n    echo: true\n"+
		"  - tool_calls: [{id: a1, name: Bash, input: {command: \"touch from-session-page\"}}]\n"+
		"  - text: second done\n    echo: true\n", mark))
	id := "session-ui-" + tag()
	r.must("session", "start", "--script", s, "--prompt", "go", "--session", id, "--sender", "alice", "--detach")
	waitFor(t, ctx, func() bool { return len(markedPIDs(mark)) > 0 })

	bctx := browser(t, ctx)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	if err := chromedp.Do(bctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(base+"/session?token=alice-token&id="+id),
		chromedp.WaitVisible(css(`#session[data-state="running"]`)),
	); err != nil {
		t.Fatalf("open the session page: %v", err)
	}
	shots, err := os.MkdirTemp("", "warden-inbox-session-")
	if err != nil {
		t.Fatal(err)
	}
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
	fits := func(page string) {
		t.Helper()
		w, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if w > 390 {
			wide, _ := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("body *")).filter(function (e) {
				return e.getBoundingClientRect().right > 390; }).slice(0, 12).map(function (e) {
				return e.tagName.toLowerCase() + "." + e.className + " " + Math.round(e.getBoundingClientRect().right); })`))
			t.Errorf("%s is %d px wide at a 390 px viewport: %v", page, w, wide)
		}
	}
	fits("the session page")
	send := func(text, mode string) {
		t.Helper()
		if err := chromedp.Do(bctx,
			chromedp.SendKeys(css("#message"), text),
			chromedp.SetValue(css("#mode"), mode),
			chromedp.Click(css("#send")),
		); err != nil {
			t.Fatalf("send %q: %v", text, err)
		}
		// The page says where the message went (each toast differs).
		want := map[string]string{"steer": "steering", "queue": "queued"}[mode]
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](fmt.Sprintf(`document.getElementById("toast").textContent.startsWith(%q)`, want))); err != nil {
			toast, _ := chromedp.Run(bctx, chromedp.Text(css("#toast")))
			t.Fatalf("send %q (%s): the page says %q, want %q: %v", text, mode, toast, want, err)
		}
	}
	send("also update the changelog", "steer")
	send("then the release notes", "queue")

	// Pause while t1 runs: it finishes, the next model call waits.
	if err := chromedp.Do(bctx,
		chromedp.Click(css("#pause")),
		chromedp.WaitVisible(css(`#session[data-state="paused"] #paused`)),
		chromedp.WaitVisible(css(`#resume:not([disabled])`)),
	); err != nil {
		t.Fatalf("pause: %v", err)
	}
	paused, err := chromedp.Run(bctx, chromedp.Text(css("#paused")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(paused, "paused by alice (via inbox)") {
		t.Errorf("the page says %q", paused)
	}
	st := state(id)
	if p := st.Session.Paused; p == nil || p.By != "alice" || p.Via != "inbox" || st.Session.Queued != 1 || st.Session.Steers != 1 {
		t.Fatalf("after the page's pause: %+v", st.Session)
	}
	shot("1-paused")
	// HTTP: a second pause is refused (409), carol is not a sender (403).
	code, body := apiPost(t, base+"/api/session/control", "alice-token", inbox.SessionControlRequest{ID: id, Action: workflows.ControlPause})
	if code != http.StatusConflict || !strings.Contains(body, "is already paused (by alice)") || strings.Contains(body, "wrapError") {
		t.Errorf("second pause: %d %s", code, body)
	}
	code, body = apiPost(t, base+"/api/session/message", "carol-token", inbox.SessionMessageRequest{ID: id, Text: "let me in", Mode: workflows.MessageSteer})
	if code != http.StatusForbidden || !strings.Contains(body, `\"carol\" may not message `+id) {
		t.Errorf("carol's message: %d %s", code, body)
	}
	waitFor(t, ctx, func() bool { _, err := os.Stat(filepath.Join(r.work, mark+".count")); return err == nil })
	time.Sleep(2 * time.Second)
	if st := state(id); st.Iterations != 1 || st.Session.Turns != 0 {
		t.Fatalf("the paused session made a model call: %d model calls, %+v", st.Iterations, st.Session)
	}

	// Resume: turn 1 answers with the steer, the queued message opens
	// turn 2, whose call waits for an approval, answered on the page.
	if err := chromedp.Do(bctx,
		chromedp.Click(css("#resume")),
		chromedp.WaitVisible(css(`li.entry[data-call="a1"] button.allow`)),
		chromedp.WaitVisible(css(`#session[data-state="waiting"]`)),
	); err != nil {
		t.Fatalf("resume: %v", err)
	}
	fits("the session page with a waiting call")
	shot("2-waiting")
	if err := chromedp.Do(bctx,
		chromedp.Click(css(`li.entry[data-call="a1"] button.allow`)),
		chromedp.WaitVisible(css(`#session[data-state="idle"]`)),
		chromedp.WaitVisible(css(`#empty`)),
	); err != nil {
		t.Fatalf("allow on the session page: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.work, "from-session-page")); err != nil {
		t.Errorf("the call allowed on the page did not run: %v", err)
	}
	st = state(id)
	if st.Session.Turns != 2 || st.Session.State != "idle" {
		t.Fatalf("after turn 2: %+v", st.Session)
	}
	page, err := cl.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ans := lastOf(page.Events, workflows.EventFinal).Text; !strings.Contains(ans, "(3 user messages; the last: then the release notes)") {
		t.Errorf("turn 2's answer %q: want the prompt, the steer and the queued message", ans)
	}
	// The conversation on the page has the steer as a user message.
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.getElementById("conversation").textContent.includes("then the release notes")`)); err != nil {
		t.Fatalf("conversation: %v", err)
	}
	conv, err := chromedp.Run(bctx, chromedp.Text(css("#conversation")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(conv, "also update the changelog") {
		t.Errorf("the page's conversation lacks the steer:\n%s", conv)
	}
	shot("3-idle")

	// The sessions list shows it as idle, at phone width too.
	if err := chromedp.Do(bctx,
		chromedp.Navigate(base+"/sessions"),
		chromedp.WaitVisible(css(fmt.Sprintf(`section[data-state="idle"] li.session-row[data-id=%q] a`, id))),
	); err != nil {
		t.Fatalf("sessions list: %v", err)
	}
	fits("the sessions list")
	shot("4-sessions")

	// Cancel with a reason from the page; then a message is refused.
	if err := chromedp.Do(bctx,
		chromedp.Navigate(base+"/session?id="+id),
		chromedp.WaitVisible(css(`#session[data-state="idle"]`)),
		chromedp.SendKeys(css("#cancel-reason"), "done for today"),
		chromedp.Click(css("#cancel")),
		chromedp.WaitVisible(css(`#cancel[disabled]`)),
	); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil || res.Stopped != "cancelled" || !strings.Contains(res.StopReason, "cancelled by alice (via inbox): done for today") {
		t.Fatalf("cancelled session: %+v %v", res, err)
	}
	code, body = apiPost(t, base+"/api/session/message", "alice-token", inbox.SessionMessageRequest{ID: id, Text: "anyone?", Mode: workflows.MessageQueue})
	if code != http.StatusConflict || !strings.Contains(body, "takes no messages") {
		t.Errorf("message to the cancelled session: %d %s", code, body)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/session?id="+id, nil)
	req.Header.Set("Authorization", "Bearer alice-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var v inbox.SessionView
	if err := json.Unmarshal(b, &v); err != nil || v.State != "ended" || v.Turns != 2 {
		t.Errorf("GET /api/session after the cancel: %d %s", resp.StatusCode, b)
	}
}
