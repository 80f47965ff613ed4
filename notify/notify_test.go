package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// receiver is a real HTTP webhook receiver that verifies signatures.
type receiver struct {
	mu     sync.Mutex
	secret string
	status int
	got    []Event
	bad    int
	ts     []string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !Verify(r.secret, body, req.Header.Get(HeaderSignature)) {
		r.bad++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.got = append(r.got, ev)
	r.ts = append(r.ts, req.Header.Get(HeaderTimestamp))
	w.WriteHeader(r.status)
}

func TestSend(t *testing.T) {
	req := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := Event{Type: TypeApprovalRequested, WorkflowID: "wf-1", CallID: "c1", Tool: "Bash",
		Input: json.RawMessage(`{"command":"touch x"}`), Reason: "no rule", RequestedAt: req,
		Deadline: req.Add(time.Hour), InboxURL: "http://127.0.0.1:8234/"}
	tests := []struct {
		name       string
		recvSecret string
		status     int
		wantErr    error
		wantGot    int
		wantBad    int
	}{
		{name: "ok", recvSecret: "s3cret", status: http.StatusNoContent, wantGot: 1},
		{name: "server error", recvSecret: "s3cret", status: http.StatusServiceUnavailable, wantErr: ErrStatus, wantGot: 1},
		{name: "wrong secret", recvSecret: "other", status: http.StatusOK, wantErr: ErrStatus, wantBad: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &receiver{secret: tt.recvSecret, status: tt.status}
			srv := httptest.NewServer(r)
			defer srv.Close()
			s := &Sender{URLs: []string{srv.URL}, Secret: "s3cret"}
			before := time.Now().Unix()
			err := s.Send(context.Background(), ev)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Send error = %v, want %v", err, tt.wantErr)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if len(r.got) != tt.wantGot || r.bad != tt.wantBad {
				t.Fatalf("receiver got %d events, %d bad signatures; want %d, %d", len(r.got), r.bad, tt.wantGot, tt.wantBad)
			}
			if tt.wantGot == 1 {
				g := r.got[0]
				if g.Type != ev.Type || g.WorkflowID != "wf-1" || g.CallID != "c1" || g.Tool != "Bash" ||
					string(g.Input) != `{"command":"touch x"}` || !g.RequestedAt.Equal(req) || !g.Deadline.Equal(req.Add(time.Hour)) || g.InboxURL != ev.InboxURL {
					t.Errorf("received %+v", g)
				}
				ts, err := strconv.ParseInt(r.ts[0], 10, 64)
				if err != nil || ts < before || ts > time.Now().Unix() {
					t.Errorf("timestamp header %q", r.ts[0])
				}
			}
		})
	}
}

func TestSendAllURLs(t *testing.T) {
	ok := &receiver{secret: "k", status: http.StatusOK}
	down := &receiver{secret: "k", status: http.StatusInternalServerError}
	a, b := httptest.NewServer(ok), httptest.NewServer(down)
	defer a.Close()
	defer b.Close()
	s := &Sender{URLs: []string{b.URL, a.URL}, Secret: "k"}
	if err := s.Send(context.Background(), Event{Type: TypeApprovalEscalated, CallID: "c"}); !errors.Is(err, ErrStatus) {
		t.Fatalf("Send error = %v, want ErrStatus", err)
	}
	if len(ok.got) != 1 || len(down.got) != 1 {
		t.Fatalf("deliveries: ok=%d down=%d, want 1 each", len(ok.got), len(down.got))
	}
}

func TestSendUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	s := &Sender{URLs: []string{url}, HTTPClient: &http.Client{Timeout: 2 * time.Second}}
	if err := s.Send(context.Background(), Event{Type: TypeApprovalRequested}); err == nil {
		t.Fatal("Send to a closed server succeeded")
	}
}

func TestVerify(t *testing.T) {
	body := []byte(`{"type":"approval_requested"}`)
	good := Sign("k", body)
	tests := []struct {
		name, secret, header string
		body                 []byte
		want                 bool
	}{
		{"valid", "k", good, body, true},
		{"wrong secret", "x", good, body, false},
		{"tampered body", "k", good, []byte(`{"type":"approval_escalated"}`), false},
		{"missing prefix", "k", good[len("sha256="):], body, false},
		{"not hex", "k", "sha256=zz", body, false},
		{"empty", "k", "", body, false},
	}
	for _, tt := range tests {
		if got := Verify(tt.secret, tt.body, tt.header); got != tt.want {
			t.Errorf("%s: Verify = %v, want %v", tt.name, got, tt.want)
		}
	}
}
