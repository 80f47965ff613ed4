package activities

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/workflows"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// hook is a real webhook receiver that verifies and keeps events.
type hook struct {
	rcv    notify.Receiver
	mu     sync.Mutex
	events []notify.Event
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if _, err := h.rcv.Verify(r.Header, body); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var ev notify.Event
	_ = json.Unmarshal(body, &ev)
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (h *hook) got() []notify.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]notify.Event(nil), h.events...)
}

func escalated(action workflows.Escalation) workflows.NotifyInput {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return workflows.NotifyInput{Type: notify.TypeApprovalEscalated, WorkflowID: "wf", Pending: workflows.Pending{
		Kind: workflows.PendingApproval, CallID: "c1", Tool: "Bash", Input: json.RawMessage(`{"command":"x"}`),
		RequestedAt: now, Deadline: now.Add(time.Minute), Escalation: action}}
}

// TestNotifyResumesFromHeartbeat: an attempt that finds delivered URLs in
// the heartbeat details (left by a failed attempt) posts only to the
// others; escalations carry their action, deny when none is set.
func TestNotifyResumesFromHeartbeat(t *testing.T) {
	t.Parallel()
	done, todo := &hook{rcv: notify.Receiver{Secret: testSecret}}, &hook{rcv: notify.Receiver{Secret: testSecret}}
	ds, ts := httptest.NewServer(done), httptest.NewServer(todo)
	defer ds.Close()
	defer ts.Close()
	a := &Activities{Notifier: &notify.Sender{URLs: []string{ds.URL, ts.URL}, Secret: testSecret}}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a.Notify)
	env.SetHeartbeatDetails(notifyProgress{Delivered: []string{ds.URL}})
	if _, err := env.ExecuteActivity(a.Notify, escalated("")); err != nil {
		t.Fatal(err)
	}
	if n := len(done.got()); n != 0 {
		t.Errorf("a URL the previous attempt delivered to got %d more deliveries", n)
	}
	got := todo.got()
	if len(got) != 1 || got[0].Type != notify.TypeApprovalEscalated || got[0].Action != notify.ActionDeny || got[0].CallID != "c1" {
		t.Fatalf("deliveries to the remaining URL: %+v", got)
	}

	for _, action := range []workflows.Escalation{workflows.EscalateAllow, workflows.EscalateNotify} {
		env := s.NewTestActivityEnvironment()
		env.RegisterActivity(a.Notify)
		if _, err := env.ExecuteActivity(a.Notify, escalated(action)); err != nil {
			t.Fatal(err)
		}
		got := todo.got()
		if last := got[len(got)-1]; last.Action != string(action) {
			t.Errorf("escalation %s sent action %q", action, last.Action)
		}
	}
}

// TestNotifyRecordsDeliveredURLs: when one URL fails, the attempt fails
// and its heartbeat details name the URL that accepted.
func TestNotifyRecordsDeliveredURLs(t *testing.T) {
	t.Parallel()
	ok := &hook{rcv: notify.Receiver{Secret: testSecret}}
	okSrv := httptest.NewServer(ok)
	defer okSrv.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer down.Close()
	a := &Activities{Notifier: &notify.Sender{URLs: []string{down.URL, okSrv.URL}, Secret: testSecret}}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a.Notify)
	var mu sync.Mutex
	var last notifyProgress
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		_ = d.Get(&last)
	})
	if _, err := env.ExecuteActivity(a.Notify, escalated(workflows.EscalateDeny)); err == nil {
		t.Fatal("a failed URL did not fail the attempt")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(last.Delivered) != 1 || last.Delivered[0] != okSrv.URL {
		t.Errorf("heartbeat details = %+v, want the healthy URL", last)
	}
}

// TestNotifyEmptySecretIsNotRetried: a notifier without a secret sends
// nothing and fails without retries.
func TestNotifyEmptySecretIsNotRetried(t *testing.T) {
	t.Parallel()
	ok := &hook{rcv: notify.Receiver{Secret: testSecret}}
	srv := httptest.NewServer(ok)
	defer srv.Close()
	a := &Activities{Notifier: &notify.Sender{URLs: []string{srv.URL}}}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a.Notify)
	_, err := env.ExecuteActivity(a.Notify, escalated(""))
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != ErrTypeWebhookSecret {
		t.Fatalf("error = %v, want a non-retryable %s error", err, ErrTypeWebhookSecret)
	}
	if n := len(ok.got()); n != 0 {
		t.Errorf("%d deliveries without a secret", n)
	}
}

// TestNotificationTypesAgree: the workflow's notification types are the
// ones the notify package sends (and receivers switch on).
func TestNotificationTypesAgree(t *testing.T) {
	for w, n := range map[string]string{
		workflows.NotifyApprovalRequested: notify.TypeApprovalRequested,
		workflows.NotifyApprovalEscalated: notify.TypeApprovalEscalated,
		workflows.NotifyExternalRequested: notify.TypeExternalRequested,
	} {
		if w != n {
			t.Errorf("workflows %q != notify %q", w, n)
		}
	}
}
