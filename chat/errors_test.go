package chat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// TestDescribe: each kind of failed Slack call reads as one line saying
// what went wrong, whatever wraps it.
func TestDescribe(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	_, dialErr := (&net.Dialer{}).DialContext(context.Background(), "tcp", down.Listener.Addr().String())
	for _, c := range []struct {
		err  error
		want string
	}{
		{wrap("chat.postMessage", &slack.RateLimitedError{RetryAfter: 2 * time.Second}), "rate limited by Slack, retry after 2s"},
		{wrap("chat.update", slack.SlackErrorResponse{Err: "channel_not_found"}), "Slack refused it: channel_not_found"},
		{wrap("chat.update", slack.StatusCodeError{Code: 503, Status: "503 Service Unavailable"}), "Slack answered 503 Service Unavailable"},
		{wrap("chat.update", slack.StatusCodeError{Code: 502}), "Slack answered HTTP 502"},
		{wrap("chat.postMessage", fmt.Errorf("post: %w", context.DeadlineExceeded)), "Slack did not answer in time"},
		{wrap("chat.postMessage", dialErr), "Slack unreachable: connection refused"},
		{wrap("chat.postMessage", &net.DNSError{Err: "no such host", Name: "slack.invalid"}), "Slack unreachable: cannot resolve slack.invalid"},
		{wrap("chat.postMessage", errors.New("odd")), "odd"},
		{nil, ""},
	} {
		if got := Describe(c.err); got != c.want {
			t.Errorf("Describe(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
