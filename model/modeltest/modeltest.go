// Package modeltest is the conformance suite of warden's HTTP model
// providers, and the fake server their own tests share. A provider's
// test calls [Run] with a [Provider] describing its wire format; the
// suite checks what every provider must do the same way: retry
// retryable statuses, give up on the others at once, honour a disabled
// retry count, turn failures into a [model.Error] with the status and
// retryability, and never leak the API key into an error.
package modeltest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Reply is one canned HTTP answer of a [Server].
type Reply struct {
	Status int
	// Header is set on the response; Content-Type defaults to
	// application/json.
	Header map[string]string
	Body   string
}

// Request is one request a [Server] received.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Fast is a reply header that makes the providers' SDKs retry at once.
func Fast() map[string]string { return map[string]string{"Retry-After-Ms": "1"} }

// Server is a fake provider API: it answers from canned replies in
// order (the last one repeats) and records every request.
type Server struct {
	t       testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	replies []Reply
	reqs    []Request
}

// NewServer starts a fake server answering with replies; it is closed
// when the test ends.
func NewServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	if len(replies) == 0 {
		t.Fatal("modeltest.NewServer: no replies")
	}
	s := &Server{t: t, replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the server's base URL (no trailing slash).
func (s *Server) URL() string { return s.srv.URL }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("read request body: %v", err)
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	rp := s.replies[min(len(s.reqs), len(s.replies))-1]
	s.mu.Unlock()
	for k, v := range rp.Header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(rp.Status)
	_, _ = io.WriteString(w, rp.Body)
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// JSONEqual fails the test unless got and want hold the same JSON
// value; what names the compared part in the message.
func JSONEqual(t testing.TB, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got invalid JSON %s: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want invalid JSON: %v", what, err)
	}
	gb, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	wb, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if string(gb) != string(wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}
