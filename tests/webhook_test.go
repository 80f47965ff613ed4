package tests

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/workflows"
)

// hookSecret is a Standard Webhooks secret ("whsec_" + base64 key).
var hookSecret = notify.SecretPrefix + base64.StdEncoding.EncodeToString([]byte("warden-tests-webhook-key-32bytes"))

// hookEndpoint is a webhook receiver that follows the documented scheme
// (notify.Receiver: signature, replay window, seen ids). When failFirst
// is set, it answers 503 to its first request without verifying it;
// failEach does so to the first request of each webhook id, down to
// every request.
type hookEndpoint struct {
	rcv       *notify.Receiver
	failFirst bool
	failEach  bool
	down      bool
	mu        sync.Mutex
	requests  int
	ids       []string
	events    []notify.Event
	errs      []error
	// accepted keeps the raw deliveries that were accepted.
	accepted []rawDelivery
}

// rawDelivery is a request as it arrived on the wire.
type rawDelivery struct {
	header http.Header
	body   []byte
}

func (h *hookEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests++
	id := r.Header.Get(notify.HeaderID)
	first := !slices.Contains(h.ids, id)
	h.ids = append(h.ids, id)
	if (h.failFirst && h.requests == 1) || (h.failEach && first) || h.down {
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	_, err := h.rcv.Verify(r.Header, body)
	if err != nil {
		h.errs = append(h.errs, err)
		if errors.Is(err, notify.ErrReplay) {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var ev notify.Event
	_ = json.Unmarshal(body, &ev)
	h.events = append(h.events, ev)
	h.accepted = append(h.accepted, rawDelivery{r.Header.Clone(), body})
	w.WriteHeader(http.StatusNoContent)
}

func (h *hookEndpoint) snapshot() (requests int, ids []string, events []notify.Event, errs []error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests, append([]string(nil), h.ids...), append([]notify.Event(nil), h.events...), append([]error(nil), h.errs...)
}

// TestWebhookRetryOnlyToFailedURLs: of two webhook URLs, one fails the
// first delivery. The notification activity retries it; the retry goes
// only to the URL that failed, with the same webhook id (each URL has
// its own), and both
// receivers verify the signature under the replay rules. A delivery
// captured on the wire and replayed is rejected by the receiver.
func TestWebhookRetryOnlyToFailedURLs(t *testing.T) {
	healthy := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}}
	flaky := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}, failFirst: true}
	hs, fs := httptest.NewServer(healthy), httptest.NewServer(flaky)
	defer hs.Close()
	defer fs.Close()
	cl := startWorker(t, warden.Options{Notifier: &notify.Sender{URLs: []string{fs.URL, hs.URL}, Secret: hookSecret},
		InboxURL: "http://inbox.example"})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: n1, name: Bash, input: {command: \"touch notified\"}}]\n  - text: ok\n")
	id := "webhook-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		_, _, evs, _ := flaky.snapshot()
		return len(evs) == 1
	})
	// The turn ends only after the retried activity completed.
	ps := waitPending(t, cl, id, 1)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "n1", Decision: workflows.DecisionDeny, Reason: "test", Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	hn, hids, hevs, herrs := healthy.snapshot()
	fn, fids, fevs, ferrs := flaky.snapshot()
	// Each receiver also got the deny's approval_answered, once.
	if hn != 2 || len(hevs) != 2 || len(herrs) != 0 {
		t.Errorf("healthy URL: %d requests, %d accepted, errors %v; want exactly one delivery of each event", hn, len(hevs), herrs)
	}
	if fn != 3 || len(fevs) != 2 || len(ferrs) != 0 {
		t.Errorf("flaky URL: %d requests, %d accepted, errors %v; want a failure then one delivery of each event", fn, len(fevs), ferrs)
	}
	// Each URL has its own webhook id for one notification (the
	// notification's id and a suffix of the URL), kept on a retry.
	if len(hids) == 2 && len(fids) == 3 && (hids[0] == "" || fids[0] != fids[1] || fids[0] == hids[0] ||
		hids[0] != notify.URLID(fevs[0].ID(), hs.URL) || fids[0] != notify.URLID(fevs[0].ID(), fs.URL)) {
		t.Errorf("webhook ids: want one per URL, the same on a retry: healthy %v, flaky %v", hids, fids)
	}
	for _, ev := range append(hevs, fevs...) {
		if ev.Type == notify.TypeApprovalAnswered {
			if a := ev.Answer; a == nil || a.Decision != "deny" || a.Reason != "test" {
				t.Errorf("answered event = %+v", ev)
			}
			continue
		}
		if ev.Type != notify.TypeApprovalRequested || ev.WorkflowID != id || ev.CallID != "n1" || ev.Tool != "Bash" ||
			!strings.HasPrefix(ev.InboxURL, "http://inbox.example") {
			t.Errorf("event = %+v", ev)
		}
	}

	// A captured delivery replayed to the receiver is recognised and not
	// acted on again.
	healthy.mu.Lock()
	captured := healthy.accepted[0]
	healthy.mu.Unlock()
	req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(string(captured.body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = captured.header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, _, hevs, herrs = healthy.snapshot()
	if len(hevs) != 2 || len(herrs) != 1 || !errors.Is(herrs[0], notify.ErrReplay) {
		t.Errorf("replayed delivery: %d events handled, errors %v; want 2 and ErrReplay", len(hevs), herrs)
	}
}

// TestWebhookAnsweredReminderRouted: through a real server and worker,
// with notify routes (agent "ops-*" to one receiver, approver role
// "kube" to another, the rest to the default URLs) and reminders 4 s
// before the deadline:
//   - a dev turn whose call waits past its reminder time gets
//     approval_requested, approval_reminder, then approval_answered
//     (by, decision, reason) at the default receiver only;
//   - a kubectl call (covered by role kube) goes to the kube receiver
//     only, its deny answered there;
//   - an ops turn answered at once goes to the ops receiver only, and
//     gets no reminder (the control: answered first), even after its
//     reminder time passed.
func TestWebhookAnsweredReminderRouted(t *testing.T) {
	def := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}}
	ops := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}}
	kube := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}}
	ds, os, ks := httptest.NewServer(def), httptest.NewServer(ops), httptest.NewServer(kube)
	defer ds.Close()
	defer os.Close()
	defer ks.Close()
	cl := startWorker(t, warden.Options{Notifier: &notify.Sender{URLs: []string{ds.URL}, Secret: hookSecret, Routes: []notify.Route{
		{Match: notify.Match{Agent: "ops-*"}, Webhooks: []string{os.URL}},
		{Match: notify.Match{Role: "kube"}, Webhooks: []string{ks.URL}},
	}}, RemindBefore: 4 * time.Second})
	ctx := ctxT(t, 90*time.Second)
	approvers := &workflows.Approvers{Users: map[string][]string{"bob": nil, "alice": {"kube"}},
		Roles: map[string][]string{"kube": {"Bash(kubectl:*)"}}}
	start := func(label, agent, cmd string, timeout time.Duration) string {
		s := script(t, "steps:\n  - tool_calls: [{id: r1, name: Bash, input: {command: \""+cmd+"\"}}]\n  - text: ok\n")
		id := label + "-" + fmt.Sprint(time.Now().UnixNano())
		if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
			Agent: agent, ApprovalTimeout: timeout, Approvers: approvers}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	types := func(h *hookEndpoint, id string) []string {
		_, _, evs, _ := h.snapshot()
		var out []string
		for _, ev := range evs {
			if ev.WorkflowID == id {
				out = append(out, ev.Type)
			}
		}
		return out
	}
	answer := func(id string, d workflows.Decision, by, reason string) {
		ps := waitPending(t, cl, id, 1)
		if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "r1", Decision: d, By: by, Reason: reason, Hash: ps[0].Hash}); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Result(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	dev := start("routed-dev", "dev-1", "touch dev", 6*time.Second)
	waitFor(t, ctx, func() bool { return slices.Contains(types(def, dev), notify.TypeApprovalReminder) })
	answer(dev, workflows.DecisionAllow, "bob", "OPS-1")
	k := start("routed-kube", "dev-2", "kubectl get pods", time.Minute)
	answer(k, workflows.DecisionDeny, "alice", "not now")
	opsID := start("routed-ops", "ops-1", "touch ops", 8*time.Second)
	parked := time.Now()
	answer(opsID, workflows.DecisionAllow, "bob", "")
	waitFor(t, ctx, func() bool {
		return len(types(def, dev)) == 3 && len(types(kube, k)) == 2 && len(types(ops, opsID)) == 2
	})
	time.Sleep(time.Until(parked.Add(5 * time.Second)))

	want := map[string][]string{
		"dev at default":  {"approval_requested", "approval_reminder", "approval_answered"},
		"kube at kube":    {"approval_requested", "approval_answered"},
		"ops at ops":      {"approval_requested", "approval_answered"},
		"dev at ops/kube": nil, "kube at default/ops": nil, "ops at default/kube": nil,
	}
	got := map[string][]string{
		"dev at default": types(def, dev), "kube at kube": types(kube, k), "ops at ops": types(ops, opsID),
		"dev at ops/kube":     append(types(ops, dev), types(kube, dev)...),
		"kube at default/ops": append(types(def, k), types(ops, k)...),
		"ops at default/kube": append(types(def, opsID), types(kube, opsID)...),
	}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("%s: events %v, want %v", name, got[name], w)
		}
	}
	for _, h := range []*hookEndpoint{def, ops, kube} {
		_, _, evs, errs := h.snapshot()
		if len(errs) != 0 {
			t.Errorf("receiver errors: %v", errs)
		}
		for _, ev := range evs {
			if ev.Type != notify.TypeApprovalAnswered {
				continue
			}
			a := ev.Answer
			switch ev.WorkflowID {
			case dev:
				if a == nil || a.By != "bob" || a.Decision != "allow" || a.Reason != "OPS-1" || a.At.IsZero() || ev.Agent != "dev-1" {
					t.Errorf("dev answered = %+v %+v", ev, a)
				}
			case k:
				if a == nil || a.By != "alice" || a.Decision != "deny" || a.Reason != "not now" || !slices.Equal(ev.Roles, []string{"kube"}) {
					t.Errorf("kube answered = %+v %+v", ev, a)
				}
			}
		}
	}
}
