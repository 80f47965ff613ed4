package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// endpoint is a webhook receiver written as the package documents: it
// verifies with a Receiver, acts once per id, answers 2xx to a replay
// without acting, and forgets the id when it fails after verifying.
type endpoint struct {
	rcv     *Receiver
	mu      sync.Mutex
	handled []Event
	errs    []error
	failing bool // the next verified delivery fails to process
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id, err := e.rcv.Verify(req.Header, body)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
	switch {
	case errors.Is(err, ErrReplay):
		w.WriteHeader(http.StatusOK) // already handled: do nothing again
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	if e.failing {
		e.failing = false
		e.rcv.Forget(id)
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.handled = append(e.handled, ev)
	w.WriteHeader(http.StatusNoContent)
}

func (e *endpoint) state() (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var last error
	if n := len(e.errs); n > 0 {
		last = e.errs[n-1]
	}
	return len(e.handled), last
}

// capture records the requests a real Sender makes, then forwards them.
type capture struct {
	next http.Handler
	mu   sync.Mutex
	reqs []delivery
}

func (c *capture) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	c.mu.Lock()
	c.reqs = append(c.reqs, delivery{req.Header.Clone(), body})
	c.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(body))
	c.next.ServeHTTP(w, req)
}

func replay(t *testing.T, url string, d delivery) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(d.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = d.header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestReceiverRejectsReplay captures a genuine delivery on the wire and
// replays it: within the window the receiver recognises the id and does
// not act again; after the window the timestamp is refused; a forged
// timestamp breaks the signature.
func TestReceiverRejectsReplay(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var skew atomic.Int64 // the receiver's clock runs ahead by this much
	ep := &endpoint{rcv: &Receiver{Secret: secret, Now: func() time.Time { return now.Add(time.Duration(skew.Load())) }}}
	cp := &capture{next: ep}
	srv := httptest.NewServer(cp)
	defer srv.Close()
	if err := (&Sender{URLs: []string{srv.URL}, Secret: secret}).Send(context.Background(), &Delivery{Event: sampleEvent()}); err != nil {
		t.Fatal(err)
	}
	if n, err := ep.state(); n != 1 || err != nil {
		t.Fatalf("genuine delivery: handled %d, %v", n, err)
	}
	captured := cp.reqs[0]

	if code := replay(t, srv.URL, captured); code != http.StatusOK {
		t.Errorf("replay answered %d", code)
	}
	if n, err := ep.state(); n != 1 || !errors.Is(err, ErrReplay) {
		t.Errorf("replay within the window: handled %d, %v; want 1, ErrReplay", n, err)
	}

	// A replay with a fresh timestamp needs a new signature.
	forged := delivery{captured.header.Clone(), captured.body}
	ts, _ := strconv.ParseInt(captured.header.Get(HeaderTimestamp), 10, 64)
	forged.header.Set(HeaderTimestamp, strconv.FormatInt(ts+1, 10))
	replay(t, srv.URL, forged)
	if n, err := ep.state(); n != 1 || !errors.Is(err, ErrSignature) {
		t.Errorf("forged timestamp: handled %d, %v", n, err)
	}

	// After the window, the receiver has forgotten the id but the signed
	// timestamp is too old.
	skew.Store(int64(DefaultTolerance + time.Minute))
	if code := replay(t, srv.URL, captured); code != http.StatusUnauthorized {
		t.Errorf("replay after the window answered %d", code)
	}
	if n, err := ep.state(); n != 1 || !errors.Is(err, ErrTooOld) {
		t.Errorf("replay after the window: handled %d, %v; want 1, ErrTooOld", n, err)
	}
}

// TestReceiverForgetAcceptsRetry: an endpoint that fails after verifying
// forgets the id, so warden's retry (same id) is handled once.
func TestReceiverForgetAcceptsRetry(t *testing.T) {
	t.Parallel()
	ep := &endpoint{rcv: &Receiver{Secret: secret}, failing: true}
	srv := httptest.NewServer(ep)
	defer srv.Close()
	s := &Sender{URLs: []string{srv.URL}, Secret: secret}
	d := &Delivery{Event: sampleEvent()}
	if err := s.Send(context.Background(), d); !errors.Is(err, ErrStatus) {
		t.Fatalf("first attempt: %v", err)
	}
	if err := s.Send(context.Background(), d); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if n, err := ep.state(); n != 1 || err != nil {
		t.Errorf("handled %d, last error %v; want 1, nil", n, err)
	}
}
