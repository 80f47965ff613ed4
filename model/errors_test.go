package model

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRetryableStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]bool{
		0: true, 400: false, 401: false, 403: false, 404: false, 408: true, 409: true,
		413: false, 422: false, 429: true, 500: true, 502: true, 503: true, 529: true,
	} {
		if got := RetryableStatus(status); got != want {
			t.Errorf("RetryableStatus(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestNewHTTPError(t *testing.T) {
	t.Parallel()
	const key = "sk-secret-123"
	tests := []struct {
		name, body, want string
	}{
		{"openai", `{"error":{"message":"Incorrect API key provided: sk-secret-123","type":"invalid_request_error"}}`, "invalid_request_error: Incorrect API key provided: [REDACTED]"},
		{"anthropic", `{"type":"error","error":{"type":"not_found_error","message":"model: nope"}}`, "not_found_error: model: nope"},
		{"string error", `{"error":"model 'x' not found"}`, "model 'x' not found"},
		{"top-level message", `{"object":"error","message":"too long","code":400}`, "too long"},
		{"plain text", "  bad gateway\n", "bad gateway"},
		{"empty", "", "empty response body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewHTTPError("p", 404, []byte(tt.body), key)
			if e.Err.Error() != tt.want {
				t.Errorf("message = %q, want %q", e.Err, tt.want)
			}
			if e.Retryable || e.Status != 404 || e.Provider != "p" {
				t.Errorf("error = %+v", e)
			}
		})
	}
}

func TestNewHTTPErrorRedactsBeforeTruncating(t *testing.T) {
	t.Parallel()
	const key = "sk-0123456789abcdef"
	// The key straddles the truncation point.
	body := strings.Repeat("x", maxErrorText-5) + key + strings.Repeat("y", 100)
	e := NewHTTPError("p", 500, []byte(body), key)
	if strings.Contains(e.Error(), key[:5]) {
		t.Errorf("part of the key survived: %q", e.Error())
	}
	if len(e.Err.Error()) > maxErrorText+len("…") {
		t.Errorf("message not truncated: %d bytes", len(e.Err.Error()))
	}
}

func TestErrorFormatAndUnwrap(t *testing.T) {
	t.Parallel()
	cause := errors.New("boom")
	var err error = fmt.Errorf("activity: %w", &Error{Provider: "openai", Status: 429, Retryable: true, Err: cause})
	var me *Error
	if !errors.As(err, &me) || !errors.Is(err, cause) {
		t.Fatalf("errors.As/Is failed on %v", err)
	}
	if got, want := me.Error(), "openai: HTTP 429 Too Many Requests (retryable): boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e := &Error{Provider: "anthropic", Err: cause, Retryable: true}
	if got, want := e.Error(), "anthropic: request failed (retryable): boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
