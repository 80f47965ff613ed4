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
// only to the URL that failed, with the same webhook id, and both
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
	if hn != 1 || len(hevs) != 1 || len(herrs) != 0 {
		t.Errorf("healthy URL: %d requests, %d accepted, errors %v; want exactly one delivery", hn, len(hevs), herrs)
	}
	if fn != 2 || len(fevs) != 1 || len(ferrs) != 0 {
		t.Errorf("flaky URL: %d requests, %d accepted, errors %v; want a failure then one delivery", fn, len(fevs), ferrs)
	}
	if len(hids) == 1 && len(fids) == 2 && (hids[0] == "" || fids[0] != hids[0] || fids[1] != hids[0]) {
		t.Errorf("webhook ids differ across URLs or attempts: healthy %v, flaky %v", hids, fids)
	}
	for _, ev := range append(hevs, fevs...) {
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
	if len(hevs) != 1 || len(herrs) != 1 || !errors.Is(herrs[0], notify.ErrReplay) {
		t.Errorf("replayed delivery: %d events handled, errors %v; want 1 and ErrReplay", len(hevs), herrs)
	}
}
