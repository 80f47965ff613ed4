package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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

// budgetTeam is the inbox team of the budget channel tests: fin may
// answer budget approvals only (a role naming Budget), kube kubectl
// commands only; neither is an admin.
func budgetTeam() (map[string]config.InboxUser, map[string]config.InboxRole) {
	return map[string]config.InboxUser{
			"fin":  {Token: "fin-token", Slack: "U0FIN", Roles: []string{"budget"}},
			"kube": {Token: "kube-token", Slack: "U0KUBE", Roles: []string{"k8s"}},
		}, map[string]config.InboxRole{
			"budget": {Allow: []string{workflows.BudgetTool}},
			"k8s":    {Allow: []string{"Bash(kubectl:*)"}},
		}
}

// startBudgetTurn starts a turn with a budget of 1000 tokens, whose
// first model call spends 1200 and asks to touch file in workdir: it
// parks on budget_1 before the call runs. The turn's approvers are the
// inbox team's.
func startBudgetTurn(t *testing.T, ctx context.Context, cl *client.Client, id, workdir, file string) workflows.Pending {
	t.Helper()
	users, roles := budgetTeam()
	approvers, err := client.Approvers(config.Inbox{Users: users, Roles: roles})
	if err != nil {
		t.Fatal(err)
	}
	b, err := client.ParseBudget("tokens=1000", false)
	if err != nil {
		t.Fatal(err)
	}
	s := script(t, fmt.Sprintf(`steps:
  - tool_calls: [{name: Bash, input: {command: "touch %s"}}]
    usage: {input_tokens: 1000, output_tokens: 200}
  - text: done
`, file))
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: permission.Context{Mode: permission.ModeBypass}, Workdir: workdir, Budget: &b, Approvers: approvers}); err != nil {
		t.Fatal(err)
	}
	return waitPendingCall(t, cl, id, "budget_1")
}

// TestInboxBudgetRaiseAndDeny: two turns park on a budget approval. In
// the inbox, the entry shows what it is (a budget badge, 1200 of 1000
// tokens spent) with a raise form pre-filled with the limit once more,
// to fin, whose role names Budget; kube's page offers no form, and
// kube's raise through the API is refused (403), as is an answer to the
// budget entry through /api/approve (400, pointing to /api/budget). In
// Chromium, fin raises one turn (it runs its call and answers) and
// denies the other with a typed reason (it stops with "budget", the
// reason and fin's name; its call never runs).
func TestInboxBudgetRaiseAndDeny(t *testing.T) {
	needChromium(t)
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 120*time.Second)
	users, roles := budgetTeam()
	srv, err := inbox.New(inbox.Config{Client: cl, Users: users, Roles: roles, Registerer: prometheus.NewRegistry(), Refresh: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close) // after the browser's cleanups: its event stream ends first
	prefix := "inbox-budget-" + fmt.Sprint(time.Now().UnixNano())
	raiseID, denyID := prefix+"-raise", prefix+"-deny"
	startBudgetTurn(t, ctx, cl, raiseID, workdir, "raised")
	pd := startBudgetTurn(t, ctx, cl, denyID, workdir, "denied")
	waitListed(t, ctx, cl, raiseID, denyID)

	// kube: no form on the page, a raise refused by the inbox.
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/api/pending?workflow="+prefix, nil)
	req.Header.Set("Authorization", "Bearer kube-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var listing struct {
		Items []struct {
			HTML string `json:"html"`
		} `json:"items"`
	}
	err = json.NewDecoder(resp.Body).Decode(&listing)
	resp.Body.Close()
	if err != nil || len(listing.Items) != 2 || strings.Contains(listing.Items[0].HTML, `data-act="raise"`) ||
		!strings.Contains(listing.Items[0].HTML, "Your roles do not cover budget approvals") {
		t.Errorf("kube's listing: %v %+v", err, listing)
	}
	if code, body := apiPost(t, hs.URL+"/api/budget", "kube-token", inbox.BudgetAnswerRequest{WorkflowID: denyID, CallID: "budget_1",
		Hash: pd.Hash, Decision: workflows.DecisionAllow, Raise: "tokens=+1M"}); code != http.StatusForbidden {
		t.Errorf("kube's raise: %d %s, want 403", code, body)
	}
	if code, body := apiPost(t, hs.URL+"/api/approve", "fin-token", map[string]string{"workflow_id": denyID, "call_id": "budget_1",
		"hash": pd.Hash}); code != http.StatusBadRequest || !strings.Contains(body, "/api/budget") {
		t.Errorf("an approve of a budget entry: %d %s, want 400 naming /api/budget", code, body)
	}

	bctx := browser(t, ctx)
	entry := func(id string) string { return fmt.Sprintf(`li.entry[data-wf=%q][data-call="budget_1"]`, id) }
	if err := chromedp.Do(bctx,
		chromedp.Navigate(hs.URL+"/?token=fin-token&workflow="+prefix),
		chromedp.WaitVisible(chromedp.CSS(entry(raiseID)+" button.raise")),
		chromedp.WaitVisible(chromedp.CSS(entry(denyID)+" button.deny")),
	); err != nil {
		t.Fatalf("load inbox: %v", err)
	}
	read := func(a chromedp.Action[string]) string {
		t.Helper()
		s, err := chromedp.Run(bctx, a)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	text, badge := read(chromedp.Text(chromedp.CSS(entry(raiseID)))), read(chromedp.Text(chromedp.CSS(entry(raiseID)+" .badge")))
	prefilled := read(chromedp.Value(chromedp.CSS(entry(raiseID) + ` input.raise-amount[data-bound="tokens"]`)))
	// A screenshot outlives the test, for a person to look at.
	if png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)); err == nil {
		if dir, err := os.MkdirTemp("", "warden-inbox-budget-"); err == nil && os.WriteFile(filepath.Join(dir, "budget.png"), png, 0o644) == nil {
			t.Logf("screenshot %s", filepath.Join(dir, "budget.png"))
		}
	}
	if badge != "budget" || !strings.Contains(text, "budget tokens reached: 1200 of 1000") || prefilled != "1000" {
		t.Errorf("the entry shows badge %q, text %q, raise pre-filled %q", badge, text, prefilled)
	}

	// Raise by the pre-filled limit once more: the turn goes on.
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(entry(raiseID)+" button.raise"))); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, raiseID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "done" || res.Stopped != "" {
		t.Errorf("raised turn: answer %q, stopped %q %s", res.Answer, res.Stopped, res.StopReason)
	}
	if _, err := os.Stat(filepath.Join(workdir, "raised")); err != nil {
		t.Errorf("the raised turn's call did not run: %v", err)
	}

	// Deny with a reason: the turn stops with it.
	reason := "over the quarter's spend"
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(chromedp.CSS(entry(denyID)+" input.deny-reason"), reason),
		chromedp.Click(chromedp.CSS(entry(denyID)+" button.deny")),
	); err != nil {
		t.Fatal(err)
	}
	res, err = cl.Result(ctx, denyID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "budget" || !strings.Contains(res.StopReason, reason) || !strings.Contains(res.StopReason, "by fin") {
		t.Errorf("denied turn: stopped %q: %s", res.Stopped, res.StopReason)
	}
	if _, err := os.Stat(filepath.Join(workdir, "denied")); err == nil {
		t.Error("the denied turn's call ran")
	}
	if err := chromedp.Do(bctx, chromedp.WaitNotPresent(chromedp.CSS(entry(raiseID))), chromedp.WaitNotPresent(chromedp.CSS(entry(denyID)))); err != nil {
		t.Fatalf("answered entries still shown: %v", err)
	}
}

// TestSlackBudgetRaiseAndDeny: with chat and webhooks on, a budget
// approval is posted to Slack (what was spent, a Raise button stating
// the raise, the limit once more, and Deny; no allow button) and sent as
// approval_requested. A Raise click by kube (no role naming Budget) is
// refused and the turn still waits; fin's Raise click raises the budget
// and the turn runs its call and answers; fin's Deny click with a typed
// reason stops the other turn with it. Each message is then updated with
// who answered (and the raise), and approval_answered carries the raise.
func TestSlackBudgetRaiseAndDeny(t *testing.T) {
	const secret = "slack-signing-secret-budget"
	si := &slackStandIn{}
	slackSrv := httptest.NewServer(si)
	defer slackSrv.Close()
	hook := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}}
	hookSrv := httptest.NewServer(hook)
	defer hookSrv.Close()
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir, Chat: &activities.Chat{Service: chat.New("xoxb-tests", slackSrv.URL, nil), Channel: "C0BUDGET"},
		Notifier: &notify.Sender{URLs: []string{hookSrv.URL}, Secret: hookSecret}})
	ctx := ctxT(t, 120*time.Second)
	users, roles := budgetTeam()
	srv, err := inbox.New(inbox.Config{Client: cl, Users: users, Roles: roles, Registerer: prometheus.NewRegistry(), SlackSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	rs, last := replyRecorder(t)
	prefix := "slack-budget-" + fmt.Sprint(time.Now().UnixNano())
	raiseID, denyID := prefix+"-raise", prefix+"-deny"
	pr := startBudgetTurn(t, ctx, cl, raiseID, workdir, "slack-raised")
	pd := startBudgetTurn(t, ctx, cl, denyID, workdir, "slack-denied")
	waitFor(t, ctx, func() bool { p, _, _ := si.snapshot(); return len(p) == 2 })
	posts, _, _ := si.snapshot()
	// post is the message about turn id, and its ts (the stand-in
	// numbers its messages).
	post := func(id string) (slackCall, string) {
		for i, p := range posts {
			if strings.Contains(p.blocks, id) {
				return p, fmt.Sprintf("1700000000.%06d", i+1)
			}
		}
		t.Fatalf("no message for %s", id)
		return slackCall{}, ""
	}
	msg, raisedTS := post(raiseID)
	_, deniedTS := post(denyID)
	for _, want := range []string{"budget tokens reached: 1200 of 1000", "Raise: tokens +1000", chat.ActionRaise, chat.ActionDeny} {
		if !strings.Contains(msg.blocks, want) {
			t.Errorf("the message lacks %q: %s", want, msg.blocks)
		}
	}
	if strings.Contains(msg.blocks, chat.ActionAllow) || msg.channel != "C0BUDGET" {
		t.Errorf("message in %s with an allow button: %s", msg.channel, msg.blocks)
	}

	now := time.Now()
	slackClick(t, hs.URL, secret, now, "U0KUBE", chat.ActionRaise, chat.Value(raiseID, pr), rs.URL)
	if r := last(); !strings.Contains(r, "may not answer") {
		t.Errorf("kube's raise: reply %q", r)
	}
	if ps, err := cl.Pending(ctx, raiseID); err != nil || len(ps) != 1 {
		t.Fatalf("after kube's raise: %+v %v; want the budget approval still waiting", ps, err)
	}
	slackClick(t, hs.URL, secret, now.Add(time.Second), "U0FIN", chat.ActionRaise, chat.Value(raiseID, pr), rs.URL)
	if r := last(); !strings.Contains(r, "allow recorded") || !strings.Contains(r, "tokens +1000") {
		t.Errorf("fin's raise: reply %q", r)
	}
	res, err := cl.Result(ctx, raiseID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "done" {
		t.Errorf("raised turn: answer %q, stopped %q %s", res.Answer, res.Stopped, res.StopReason)
	}
	if _, err := os.Stat(filepath.Join(workdir, "slack-raised")); err != nil {
		t.Errorf("the raised turn's call did not run: %v", err)
	}
	slackClickReason(t, hs.URL, secret, now.Add(2*time.Second), "U0FIN", chat.ActionDeny, chat.Value(denyID, pd), rs.URL, "enough for today")
	res, err = cl.Result(ctx, denyID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "budget" || !strings.Contains(res.StopReason, "enough for today") || !strings.Contains(res.StopReason, "by fin") {
		t.Errorf("denied turn: stopped %q: %s", res.Stopped, res.StopReason)
	}
	if _, err := os.Stat(filepath.Join(workdir, "slack-denied")); err == nil {
		t.Error("the denied turn's call ran")
	}

	// The messages are updated with who answered; the webhooks say so.
	waitFor(t, ctx, func() bool { _, u, _ := si.snapshot(); return len(u) == 2 })
	_, updates, _ := si.snapshot()
	for _, u := range updates {
		switch u.ts {
		case raisedTS:
			if !strings.Contains(u.blocks, "allow* by fin") || !strings.Contains(u.blocks, "Raised by:* tokens +1000") {
				t.Errorf("raised message updated to %s", u.blocks)
			}
		case deniedTS:
			if !strings.Contains(u.blocks, "deny* by fin") || !strings.Contains(u.blocks, "enough for today") {
				t.Errorf("denied message updated to %s", u.blocks)
			}
		default:
			t.Errorf("an update of another message: %+v", u)
		}
	}
	waitFor(t, ctx, func() bool { _, _, evs, _ := hook.snapshot(); return len(evs) >= 4 })
	_, _, evs, errs := hook.snapshot()
	got := map[string]notify.Event{}
	for _, ev := range evs {
		got[ev.WorkflowID+" "+ev.Type] = ev
	}
	if ev := got[raiseID+" "+notify.TypeApprovalRequested]; ev.Tool != workflows.BudgetTool || ev.CallID != "budget_1" || !strings.Contains(string(ev.Input), `"limit":"1000"`) {
		t.Errorf("approval_requested of the budget approval: %+v", ev)
	}
	if a := got[raiseID+" "+notify.TypeApprovalAnswered].Answer; a == nil || a.By != "fin" || a.Decision != "allow" || a.Raise != "tokens=+1000" {
		t.Errorf("approval_answered of the raise: %+v", a)
	}
	if a := got[denyID+" "+notify.TypeApprovalAnswered].Answer; a == nil || a.By != "fin" || a.Decision != "deny" || a.Raise != "" ||
		!strings.Contains(a.Reason, "enough for today") {
		t.Errorf("approval_answered of the deny: %+v", a)
	}
	if len(errs) != 0 {
		t.Errorf("receiver errors: %v", errs)
	}
}
