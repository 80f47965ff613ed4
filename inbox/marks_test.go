package inbox

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/workflows"
)

// marksServer is an inbox with users alice and bob (who may answer
// anything) and carol (whose role covers only Read), two waiting Bash
// calls in turn t1, and its marks in file (empty: in memory).
func marksServer(t *testing.T, file string) *Server {
	t.Helper()
	s, err := New(Config{
		Client: client.New(nil, "unused"),
		Users: map[string]config.InboxUser{"alice": {Token: "tok-a"}, "bob": {Token: "tok-b"},
			"carol": {Token: "tok-c", Roles: []string{"reader"}}},
		Roles:     map[string]config.InboxRole{"reader": {Allow: []string{"Read"}}},
		MarksFile: file,
	})
	if err != nil {
		t.Fatal(err)
	}
	entries := []client.PendingEntry{
		{WorkflowID: "t1", Pending: workflows.Pending{CallID: "c1", Tool: "Bash", Kind: workflows.PendingApproval, Hash: "h1",
			Input: json.RawMessage(`{"command":"make deploy"}`), Quorum: 2,
			Approvals: []workflows.Approval{{CallID: "c1", Decision: workflows.DecisionAllow, By: "bob"}}}},
		{WorkflowID: "t1", Pending: workflows.Pending{CallID: "c2", Tool: "Bash", Kind: workflows.PendingApproval, Hash: "h2",
			Input: json.RawMessage(`{"command":"make test"}`)}},
	}
	s.lister = func(context.Context, query) ([]client.PendingEntry, error) { return entries, nil }
	s.waiting = func(_ context.Context, wf string) ([]workflows.Pending, error) {
		var ps []workflows.Pending
		for _, e := range entries {
			if e.WorkflowID == wf {
				ps = append(ps, e.Pending)
			}
		}
		return ps, nil
	}
	return s
}

// listed is GET /api/pending's entries (with query) for the token.
func listed(t *testing.T, s *Server, token, query string) []pendingItem {
	t.Helper()
	w := do(s, "GET", "/api/pending"+query, token, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("GET /api/pending%s: %d %s", query, w.Code, w.Body.String())
	}
	var l pendingList
	if err := json.Unmarshal(w.Body.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func callIDs(items []pendingItem) string {
	var ids []string
	for _, it := range items {
		ids = append(ids, it.CallID)
	}
	return strings.Join(ids, ",")
}

// TestClaimAndSnooze: a claim is shown to every user and refused to
// another unless taken over, a snooze hides the entry from its user's
// list only, the filters select by claim and snooze, and both survive a
// restart of the inbox (its marks file). Control: a user whose roles do
// not cover the call may not claim it.
func TestClaimAndSnooze(t *testing.T) {
	file := filepath.Join(t.TempDir(), "inbox-marks.json")
	s := marksServer(t, file)

	if w := do(s, "POST", "/api/claim", "tok-a", ClaimRequest{WorkflowID: "t1", CallID: "c2", Action: "claim"}); w.Code != http.StatusOK {
		t.Fatalf("alice claims c2: %d %s", w.Code, w.Body.String())
	}
	for _, tok := range []string{"tok-a", "tok-b"} {
		items := listed(t, s, tok, "")
		if callIDs(items) != "c1,c2" || items[1].ClaimedBy != "alice" || items[0].ClaimedBy != "" {
			t.Errorf("%s sees %s claimed by %q, %q", tok, callIDs(items), items[0].ClaimedBy, items[1].ClaimedBy)
		}
	}
	if items := listed(t, s, "tok-a", ""); !strings.Contains(items[1].HTML, "assigned to me") {
		t.Errorf("alice's entry does not say it is assigned to her: %s", items[1].HTML)
	}
	if items := listed(t, s, "tok-b", ""); !strings.Contains(items[1].HTML, "claimed by alice") {
		t.Errorf("bob's entry does not say alice claimed it: %s", items[1].HTML)
	}
	// Bob cannot claim it, nor release alice's claim; he can take it.
	if w := do(s, "POST", "/api/claim", "tok-b", ClaimRequest{WorkflowID: "t1", CallID: "c2", Action: "claim"}); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "claimed by alice") {
		t.Errorf("bob claims alice's: %d %s", w.Code, w.Body.String())
	}
	if w := do(s, "POST", "/api/claim", "tok-b", ClaimRequest{WorkflowID: "t1", CallID: "c2", Action: "release"}); w.Code != http.StatusConflict {
		t.Errorf("bob releases alice's: %d %s", w.Code, w.Body.String())
	}
	// Control: carol's roles do not cover the call.
	if w := do(s, "POST", "/api/claim", "tok-c", ClaimRequest{WorkflowID: "t1", CallID: "c1", Action: "claim"}); w.Code != http.StatusForbidden {
		t.Errorf("carol claims a call she may not answer: %d %s", w.Code, w.Body.String())
	}
	for name, req := range map[string]ClaimRequest{
		"no such call": {WorkflowID: "t1", CallID: "c9", Action: "claim"},
		"bad action":   {WorkflowID: "t1", CallID: "c1", Action: "grab"},
	} {
		if w := do(s, "POST", "/api/claim", "tok-a", req); w.Code != http.StatusNotFound && w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, w.Code, w.Body.String())
		}
	}

	// Bob snoozes c1: gone from his list, still in alice's.
	w := do(s, "POST", "/api/snooze", "tok-b", SnoozeRequest{WorkflowID: "t1", CallID: "c1", For: "2h"})
	if w.Code != http.StatusOK {
		t.Fatalf("snooze: %d %s", w.Code, w.Body.String())
	}
	var st MarkState
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || time.Until(st.SnoozedUntil) < time.Hour {
		t.Errorf("snooze answer %s (%v)", w.Body.String(), err)
	}
	if got := callIDs(listed(t, s, "tok-b", "")); got != "c2" {
		t.Errorf("bob's list after his snooze: %s", got)
	}
	if got := callIDs(listed(t, s, "tok-b", "?snoozed=only")); got != "c1" {
		t.Errorf("bob's snoozed: %s", got)
	}
	if got := callIDs(listed(t, s, "tok-a", "")); got != "c1,c2" {
		t.Errorf("alice's list after bob's snooze: %s", got)
	}
	if got := callIDs(listed(t, s, "tok-a", "?claimed=me")); got != "c2" {
		t.Errorf("claimed=me: %s", got)
	}
	if got := callIDs(listed(t, s, "tok-b", "?claimed=others&snoozed=show")); got != "c2" {
		t.Errorf("claimed=others: %s", got)
	}
	if got := callIDs(listed(t, s, "tok-a", "?claimed=none")); got != "c1" {
		t.Errorf("claimed=none: %s", got)
	}
	for _, bad := range []SnoozeRequest{{WorkflowID: "t1", CallID: "c1", For: "-1h"}, {WorkflowID: "t1", CallID: "c1", For: "1000h"},
		{WorkflowID: "t1", CallID: "c1", Until: "2001-01-01T00:00:00Z"}, {WorkflowID: "t1", CallID: "c1", For: "1h", Until: "2099-01-01T00:00:00Z"}} {
		if w := do(s, "POST", "/api/snooze", "tok-b", bad); w.Code != http.StatusBadRequest {
			t.Errorf("snooze %+v: %d %s", bad, w.Code, w.Body.String())
		}
	}

	// A restarted inbox reads its marks file.
	s2 := marksServer(t, file)
	items := listed(t, s2, "tok-b", "")
	if callIDs(items) != "c2" || items[0].ClaimedBy != "alice" {
		t.Errorf("after a restart bob sees %s claimed by %q", callIDs(items), items[0].ClaimedBy)
	}
	// Waking and releasing.
	if w := do(s2, "POST", "/api/snooze", "tok-b", SnoozeRequest{WorkflowID: "t1", CallID: "c1"}); w.Code != http.StatusOK {
		t.Errorf("wake: %d %s", w.Code, w.Body.String())
	}
	if w := do(s2, "POST", "/api/claim", "tok-a", ClaimRequest{WorkflowID: "t1", CallID: "c2", Action: "release"}); w.Code != http.StatusOK {
		t.Errorf("release: %d %s", w.Code, w.Body.String())
	}
	if items := listed(t, s2, "tok-b", ""); callIDs(items) != "c1,c2" || items[1].ClaimedBy != "" {
		t.Errorf("after wake and release: %s claimed by %q", callIDs(items), items[1].ClaimedBy)
	}
	// In memory only: another inbox without the file knows nothing.
	if items := listed(t, marksServer(t, ""), "tok-a", "?claimed=me"); len(items) != 0 {
		t.Errorf("an inbox without the file: %s", callIDs(items))
	}
}

// TestPartialAllowNotOffered: an approver who gave one allow of a quorum
// that is not met is not offered the allow button again; another is.
func TestPartialAllowNotOffered(t *testing.T) {
	s := marksServer(t, "")
	bob, alice := listed(t, s, "tok-b", ""), listed(t, s, "tok-a", "")
	if strings.Contains(bob[0].HTML, `data-act="allow"`) || !strings.Contains(bob[0].HTML, "you allowed this") {
		t.Errorf("bob, who allowed c1, is offered allow again: %s", bob[0].HTML)
	}
	if !strings.Contains(alice[0].HTML, `data-act="allow"`) {
		t.Errorf("alice is not offered allow: %s", alice[0].HTML)
	}
}

type fakeHistory []Answer

func (f fakeHistory) Answered(_ context.Context, since time.Time, prefix string) ([]Answer, error) {
	var out []Answer
	for _, a := range f {
		if !a.Time.Before(since) && strings.HasPrefix(a.WorkflowID, prefix) {
			out = append(out, a)
		}
	}
	return out, nil
}

// TestHistory: GET /api/history lists the answers since a time, newest
// first as read, filtered by who, channel, decision, tool and workflow;
// the page renders them. Control: an inbox without a history reader
// says so.
func TestHistory(t *testing.T) {
	now := time.Now()
	s := marksServer(t, "")
	s.cfg.History = fakeHistory{
		{Time: now.Add(-time.Minute), WorkflowID: "t2", CallID: "c1", Tool: "Bash", Kind: "approval", Decision: "deny", By: "bob", Via: "slack", Reason: "from Slack: no"},
		{Time: now.Add(-time.Hour), WorkflowID: "t1", CallID: "c3", Tool: "Write", Kind: "approval", Decision: "allow", By: "alice", Via: "inbox", Identity: "inbox"},
		{Time: now.Add(-3 * time.Hour), WorkflowID: "t1", CallID: "budget_1", Tool: "Budget", Kind: "budget", Decision: "raise", By: "alice", Via: "key", Identity: "alice"},
		{Time: now.Add(-48 * time.Hour), WorkflowID: "t0", CallID: "c1", Tool: "Bash", Kind: "approval", Decision: "allow", By: "bob", Via: "key"},
	}
	get := func(q string) historyList {
		t.Helper()
		w := do(s, "GET", "/api/history"+q, "tok-a", nil)
		if w.Code != http.StatusOK {
			t.Fatalf("GET /api/history%s: %d %s", q, w.Code, w.Body.String())
		}
		var l historyList
		if err := json.Unmarshal(w.Body.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	ids := func(l historyList) string {
		var out []string
		for _, a := range l.Items {
			out = append(out, a.WorkflowID+"/"+a.CallID)
		}
		return strings.Join(out, ",")
	}
	for q, want := range map[string]string{
		"":                     "t2/c1,t1/c3,t1/budget_1",
		"?since=72h":           "t2/c1,t1/c3,t1/budget_1,t0/c1",
		"?by=alice":            "t1/c3,t1/budget_1",
		"?via=slack":           "t2/c1",
		"?decision=deny":       "t2/c1",
		"?tool=budget":         "t1/budget_1",
		"?workflow=t1&limit=1": "t1/c3",
		"?kind=budget&via=key": "t1/budget_1",
	} {
		if got := ids(get(q)); got != want {
			t.Errorf("history%s = %s, want %s", q, got, want)
		}
	}
	if w := do(s, "GET", "/api/history?since=yesterday", "tok-a", nil); w.Code != http.StatusBadRequest {
		t.Errorf("a bad since: %d", w.Code)
	}
	page := do(s, "GET", "/history?by=bob", "tok-a", nil)
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), "from Slack: no") || strings.Contains(page.Body.String(), "budget_1") {
		t.Errorf("history page: %d %s", page.Code, page.Body.String())
	}
	s.cfg.History = nil
	if w := do(s, "GET", "/api/history", "tok-a", nil); w.Code != http.StatusNotImplemented {
		t.Errorf("no reader: %d %s", w.Code, w.Body.String())
	}
}

// TestRefusalsCounted: an answer the inbox refuses counts in
// warden_inbox_refusals_total{channel="inbox"} (a claim refused does
// not: it answers nothing).
func TestRefusalsCounted(t *testing.T) {
	s := marksServer(t, "")
	refused := func() float64 { return testutil.ToFloat64(s.refusals.WithLabelValues("inbox")) }
	if w := do(s, "POST", "/api/approve", "tok-c", ApproveRequest{WorkflowID: "t1", CallID: "c2", Hash: "h2", Decision: workflows.DecisionAllow}); w.Code != http.StatusForbidden {
		t.Fatalf("carol allows a Bash call: %d %s", w.Code, w.Body.String())
	}
	if w := do(s, "POST", "/api/deny", "tok-a", DenyRequest{WorkflowID: "t1", CallID: "c9"}); w.Code != http.StatusNotFound {
		t.Fatalf("deny of no call: %d %s", w.Code, w.Body.String())
	}
	if got := refused(); got != 2 {
		t.Errorf("refusals = %v, want 2", got)
	}
	do(s, "POST", "/api/claim", "tok-c", ClaimRequest{WorkflowID: "t1", CallID: "c1", Action: "claim"})
	if got := refused(); got != 2 {
		t.Errorf("refusals after a refused claim = %v, want 2", got)
	}
}
