package modeltest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wardenhq/warden/model"
)

// Provider describes an HTTP model provider to [Run].
type Provider struct {
	// Name is the provider's name in [model.Error].
	Name string
	// Key is the API key New configures; no error may contain it.
	Key string
	// New builds the provider's model for the API at baseURL (a
	// [Server]'s URL, or that of a closed server) with Key, streaming
	// when stream is set, and with maxRetries SDK retries (0: the
	// provider's default, negative: none).
	New func(t *testing.T, baseURL string, stream bool, maxRetries int) model.Model
	// OK is a successful answer whose text is "done", streamed when
	// stream is set.
	OK func(stream bool) Reply
	// ErrorBody renders message as an error response body in the
	// provider's wire format.
	ErrorBody func(message string) string
	// DefaultAttempts is how many requests a retryable failure gets
	// with the default retry count (1 + the provider's default retries).
	DefaultAttempts int
	// Errors are provider-specific error cases checked with the suite's
	// own.
	Errors []ErrorCase
}

// ErrorCase is one failing reply and the [model.Error] it must become.
type ErrorCase struct {
	Name   string
	Stream bool
	Reply  Reply
	// Status and Retryable are the error's; Attempts is how many
	// requests the model makes; Text must appear in the error message.
	Status    int
	Retryable bool
	Attempts  int
	Text      string
}

// hello is the smallest request.
func hello() model.Request {
	return model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
}

// Run runs the conformance suite against p, each check as a parallel
// subtest with a server of its own.
func Run(t *testing.T, p Provider) {
	t.Run("RetryThenSuccess", func(t *testing.T) { testRetryThenSuccess(t, p) })
	t.Run("Errors", func(t *testing.T) { testErrors(t, p) })
	t.Run("RetriesDisabled", func(t *testing.T) { testRetriesDisabled(t, p) })
	t.Run("TransportError", func(t *testing.T) { testTransportError(t, p) })
}

// testRetryThenSuccess checks that a 429 is retried and the answer after
// it returned, with and without streaming.
func testRetryThenSuccess(t *testing.T, p Provider) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			s := NewServer(t, Reply{Status: http.StatusTooManyRequests, Header: Fast(), Body: p.ErrorBody("Rate limit reached")}, p.OK(stream))
			got, err := p.New(t, s.URL(), stream, 0).Generate(context.Background(), hello())
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if got.Text != "done" {
				t.Errorf("Text = %q, want done", got.Text)
			}
			if n := len(s.Requests()); n != 2 {
				t.Errorf("%d requests, want 2 (429 then success)", n)
			}
		})
	}
}

// testErrors checks the suite's error cases, then p's own.
func testErrors(t *testing.T, p Provider) {
	t.Parallel()
	for _, tc := range append(commonErrors(p), p.Errors...) {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			checkError(t, p, tc)
		})
	}
}

// commonErrors are the error cases every provider must handle alike.
func commonErrors(p Provider) []ErrorCase {
	return []ErrorCase{
		{
			Name:   "401 not retried",
			Reply:  Reply{Status: http.StatusUnauthorized, Header: Fast(), Body: p.ErrorBody("Incorrect API key provided: " + p.Key)},
			Status: http.StatusUnauthorized, Attempts: 1, Text: "Incorrect API key provided",
		},
		{
			Name: "401 streamed", Stream: true,
			Reply:  Reply{Status: http.StatusUnauthorized, Header: Fast(), Body: p.ErrorBody("bad key " + p.Key)},
			Status: http.StatusUnauthorized, Attempts: 1, Text: "bad key",
		},
		{
			Name:   "500 after retries",
			Reply:  Reply{Status: http.StatusInternalServerError, Header: Fast(), Body: p.ErrorBody("The server had an error")},
			Status: http.StatusInternalServerError, Retryable: true, Attempts: p.DefaultAttempts, Text: "The server had an error",
		},
		{
			Name: "503 plain text streamed after retries", Stream: true,
			Reply:  Reply{Status: http.StatusServiceUnavailable, Header: Fast(), Body: "upstream unavailable"},
			Status: http.StatusServiceUnavailable, Retryable: true, Attempts: p.DefaultAttempts, Text: "upstream unavailable",
		},
	}
}

// checkError runs one error case against a server of its own.
func checkError(t *testing.T, p Provider, tc ErrorCase) {
	s := NewServer(t, tc.Reply)
	_, err := p.New(t, s.URL(), tc.Stream, 0).Generate(context.Background(), hello())
	t.Logf("error: %v", err)
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *model.Error", err, err)
	}
	if me.Provider != p.Name || me.Status != tc.Status || me.Retryable != tc.Retryable {
		t.Errorf("error = %+v, want provider %s, status %d, retryable %v", me, p.Name, tc.Status, tc.Retryable)
	}
	if n := len(s.Requests()); n != tc.Attempts {
		t.Errorf("%d requests, want %d", n, tc.Attempts)
	}
	if !strings.Contains(err.Error(), tc.Text) {
		t.Errorf("error %q does not contain %q", err, tc.Text)
	}
	if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, me), p.Key) {
		t.Errorf("error leaks the key: %v", err)
	}
}

// testRetriesDisabled checks that a negative retry count makes one
// request, and the 429 is still reported retryable.
func testRetriesDisabled(t *testing.T, p Provider) {
	t.Parallel()
	s := NewServer(t, Reply{Status: http.StatusTooManyRequests, Header: Fast(), Body: p.ErrorBody("slow down")})
	_, err := p.New(t, s.URL(), false, -1).Generate(context.Background(), hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Status != http.StatusTooManyRequests || !me.Retryable {
		t.Fatalf("err = %v, want retryable 429", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests with retries disabled, want 1", n)
	}
}

// testTransportError checks that an unreachable API is a retryable
// *model.Error without a status, and does not leak the key.
func testTransportError(t *testing.T, p Provider) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := p.New(t, url, false, -1).Generate(context.Background(), hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Provider != p.Name || me.Status != 0 || !me.Retryable {
		t.Fatalf("err = %v, want retryable transport *model.Error", err)
	}
	if strings.Contains(fmt.Sprintf("%v %+v", err, err), p.Key) {
		t.Errorf("error leaks the key: %v", err)
	}
}
