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
)

// queueItem is what the test reads of a listed entry or an answer.
type queueItem struct {
	WorkflowID string    `json:"workflow_id"`
	CallID     string    `json:"call_id"`
	Hash       string    `json:"hash"`
	ClaimedBy  string    `json:"claimed_by"`
	Snoozed    time.Time `json:"snoozed_until"`
	Decision   string    `json:"decision"`
	By         string    `json:"by"`
	Via        string    `json:"via"`
	Reason     string    `json:"reason"`
}

// inboxGet reads base+path as token's user and decodes its items.
func inboxGet(t *testing.T, base, path, token string) ([]queueItem, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	var v struct {
		Items []queueItem `json:"items"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return v.Items, nil
}

func itemIDs(items []queueItem) string {
	var ids []string
	for _, it := range items {
		ids = append(ids, it.WorkflowID)
	}
	return strings.Join(ids, ",")
}

// TestQueueHistoryAndClaims, on the built worker with its inbox (its
// delegate key) and an approver's key: alice claims one waiting call
// and snoozes another on the inbox page (Chromium, 390 px); carol sees the claim and cannot
// claim it; the claim and the snooze survive a SIGKILL of the worker and
// its inbox (server.data_dir/inbox-marks.json). Alice then allows her
// claimed call in the inbox and carol denies the other with her key from
// the CLI: the inbox's history and starter approvals history list both,
// who answered, by which channel (inbox, key) and why, and filter them
// by channel; the history page shows them without overflowing a phone.
// Control: before the answers the history lists nothing.
func TestQueueHistoryAndClaims(t *testing.T) {
	needChromium(t)
	port := freePort(t)
	r := newSessionRig(t, fmt.Sprintf("inbox: {enabled: true, listen: \"127.0.0.1:%d\", users: {alice: {token: alice-token}, carol: {token: carol-token}}}\n", port))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx := ctxT(t, 5*time.Minute)
	up := func() {
		waitFor(t, ctx, func() bool {
			resp, err := http.Get(base + "/")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil
		})
	}
	up()
	r.must("keys", "create", "carol", "--role", "approver")
	carolKey := filepath.Join(r.data, "auth", "carol.key")

	sfx := tag()
	a, b := "queue-a-"+sfx, "queue-b-"+sfx
	for _, id := range []string{a, b} {
		s := r.script(fmt.Sprintf("steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch %s\"}}]\n  - text: done\n", id))
		r.must("run", "--script", s, "--prompt", "queue", "--workflow-id", id, "--detach")
	}
	list := func(token, q string) []queueItem {
		t.Helper()
		items, err := inboxGet(t, base, "/api/pending?workflow=queue-&limit=10"+q, token)
		if err != nil {
			t.Fatal(err)
		}
		return items
	}
	waitFor(t, ctx, func() bool {
		items, err := inboxGet(t, base, "/api/pending?workflow=queue-", "alice-token")
		return err == nil && len(items) == 2
	})
	if h, err := inboxGet(t, base, "/api/history?workflow=queue-", "alice-token"); err != nil || len(h) != 0 {
		t.Fatalf("control: the history before any answer: %v %+v", err, h)
	}

	// Alice claims one and snoozes the other on the page, at phone width.
	bctx := browser(t, ctx)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	entry := func(id string) string { return fmt.Sprintf(`li.entry[data-wf=%q][data-call="c1"]`, id) }
	// The live list re-renders its entries as events come: a button is
	// found and clicked in one step in the page, never through a node
	// id a re-render may have dropped.
	click := func(sel string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).click()`, sel))
	}
	if err := chromedp.Do(bctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(base+"/?token=alice-token&workflow=queue-"),
		chromedp.WaitReady(css(`body[data-live="sse"]`)),
		chromedp.WaitVisible(css(entry(a))),
		chromedp.WaitVisible(css(entry(b))),
		chromedp.WaitVisible(css(entry(a)+` button[data-act="claim"]`)),
		click(entry(a)+` button[data-act="claim"]`),
		chromedp.WaitVisible(css(entry(a)+` .badge.claimed.mine`)),
		chromedp.WaitVisible(css(entry(b)+` button[data-act="snooze"]`)),
		click(entry(b)+` button[data-act="snooze"]`),
		chromedp.WaitNotPresent(css(entry(b))),
	); err != nil {
		t.Fatalf("claim and snooze on the page: %v", err)
	}
	if code, out := apiPost(t, base+"/api/claim", "carol-token", map[string]string{"workflow_id": a, "call_id": "c1", "action": "claim"}); code != http.StatusConflict || !strings.Contains(out, "claimed by alice") {
		t.Errorf("carol claims alice's: %d %s", code, out)
	}
	check := func(when string) {
		t.Helper()
		if got := list("alice-token", "&order=oldest"); itemIDs(got) != a || got[0].ClaimedBy != "alice" {
			t.Errorf("%s: alice's list %s (claimed by %q), want %s claimed by her", when, itemIDs(got), got[0].ClaimedBy, a)
		}
		if got := list("alice-token", "&snoozed=only"); itemIDs(got) != b || got[0].Snoozed.IsZero() {
			t.Errorf("%s: alice's snoozed %+v", when, got)
		}
		got := list("carol-token", "")
		claimed := map[string]string{}
		for _, it := range got {
			claimed[it.WorkflowID] = it.ClaimedBy
		}
		if len(got) != 2 || claimed[a] != "alice" || claimed[b] != "" {
			t.Errorf("%s: carol's list %+v", when, got)
		}
	}
	check("before the restart")
	r.sigkill()
	up()
	waitFor(t, ctx, func() bool {
		items, err := inboxGet(t, base, "/api/pending?workflow=queue-", "carol-token")
		return err == nil && len(items) == 2
	})
	check("after a SIGKILL of the worker and its inbox")

	mine := list("alice-token", "")
	if code, out := apiPost(t, base+"/api/approve", "alice-token", map[string]string{"workflow_id": a, "call_id": "c1",
		"hash": mine[0].Hash, "decision": "allow", "reason": "CHG-7"}); code != http.StatusOK {
		t.Fatalf("alice allows %s in the inbox: %d %s", a, code, out)
	}
	r.must("--key-file", carolKey, "approvals", "deny", b, "c1", "--reason", "not today")

	var hist []queueItem
	waitFor(t, ctx, func() bool {
		var err error
		hist, err = inboxGet(t, base, "/api/history?workflow=queue-", "alice-token")
		return err == nil && len(hist) == 2
	})
	got := map[string]queueItem{}
	for _, h := range hist {
		got[h.WorkflowID] = h
	}
	if h := got[a]; h.Decision != "allow" || h.By != "alice" || h.Via != "inbox" || h.Reason != "CHG-7" {
		t.Errorf("history of %s: %+v, want allow by alice via inbox, CHG-7", a, h)
	}
	if h := got[b]; h.Decision != "deny" || h.By != "carol" || h.Via != "key" || h.Reason != "not today" {
		t.Errorf("history of %s: %+v, want deny by carol via key, not today", b, h)
	}
	if h, err := inboxGet(t, base, "/api/history?workflow=queue-&via=key", "carol-token"); err != nil || itemIDs(h) != b {
		t.Errorf("history via key: %v %+v", err, h)
	}
	out := r.must("--key-file", carolKey, "approvals", "history", "--workflow", "queue-", "--via", "inbox")
	if !strings.Contains(out, a) || !strings.Contains(out, "alice") || !strings.Contains(out, "CHG-7") || strings.Contains(out, b) {
		t.Errorf("starter approvals history --via inbox:\n%s", out)
	}
	out = r.must("--key-file", carolKey, "approvals", "history", "--workflow", "queue-", "--json")
	var js []queueItem
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js) != 2 || js[0].Via == "" {
		t.Errorf("starter approvals history --json: %v\n%s", err, out)
	}
	t.Logf("starter approvals history:\n%s", r.must("approvals", "history", "--workflow", "queue-"))

	// The history page, at phone width, without overflowing it.
	if err := chromedp.Do(bctx,
		chromedp.Navigate(base+"/history?workflow=queue-"),
		chromedp.WaitVisible(css(fmt.Sprintf(`tr.answer[data-wf=%q][data-via="inbox"]`, a))),
		chromedp.WaitVisible(css(fmt.Sprintf(`tr.answer[data-wf=%q][data-via="key"]`, b))),
	); err != nil {
		t.Fatalf("history page: %v", err)
	}
	if fits, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`)); err != nil || !fits {
		t.Errorf("the history page overflows 390 px (%v)", err)
	}
	if png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)); err == nil {
		p := filepath.Join(os.TempDir(), "warden-queue-history.png")
		if os.WriteFile(p, png, 0o644) == nil {
			t.Logf("screenshot %s", p)
		}
	}
}
