package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Error is a failed call to a model provider's HTTP API, returned by the
// provider subpackages after their own retries are spent. Callers check
// it with errors.As and use Retryable to decide whether another attempt
// later (for example a Temporal activity retry) can succeed; a
// non-retryable error (bad key, bad request, unknown model) should fail
// the call for good.
//
// Providers build Err from the response body with credentials removed,
// never from the SDK's error value, which holds the request and its
// Authorization header.
type Error struct {
	// Provider names the API, such as "openai" or "anthropic".
	Provider string
	// Status is the HTTP status code, or 0 when no usable response
	// arrived (connection refused or reset, broken stream).
	Status int
	// Retryable reports whether the same request may succeed later; see
	// [RetryableStatus].
	Retryable bool
	// Err is the underlying cause, already stripped of credentials.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.Status == 0 {
		b.WriteString(": request failed")
	} else {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
		if t := http.StatusText(e.Status); t != "" {
			b.WriteString(" " + t)
		}
	}
	if e.Retryable {
		b.WriteString(" (retryable)")
	} else {
		b.WriteString(" (not retryable)")
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// RetryableStatus reports whether a request that failed with the HTTP
// status code may succeed if sent again: 408 Request Timeout, 409
// Conflict, 429 Too Many Requests and every 5xx are retryable, as is 0
// (no response); any other status is not.
func RetryableStatus(status int) bool {
	switch {
	case status == 0,
		status == http.StatusRequestTimeout,
		status == http.StatusConflict,
		status == http.StatusTooManyRequests,
		status >= 500:
		return true
	default:
		return false
	}
}

// maxErrorText bounds the part of a response body quoted in an Error.
const maxErrorText = 512

// NewHTTPError builds the Error for a provider response with the given
// status and body. The message is the body's JSON error message when it
// has one ({"error":{"message":…}}, {"error":"…"} or {"message":…}, the
// shapes OpenAI, Anthropic, vLLM, Ollama and LiteLLM use), else the start
// of the body. Every occurrence of each non-empty secret is replaced by
// "[REDACTED]".
func NewHTTPError(provider string, status int, body []byte, secrets ...string) *Error {
	msg := errorMessage(body)
	if msg == "" {
		msg = "empty response body"
	}
	return &Error{
		Provider:  provider,
		Status:    status,
		Retryable: RetryableStatus(status),
		Err:       errors.New(truncate(Redact(msg, secrets...))),
	}
}

// Redact replaces every occurrence of each non-empty secret in s with
// "[REDACTED]".
func Redact(s string, secrets ...string) string {
	for _, k := range secrets {
		if k != "" {
			s = strings.ReplaceAll(s, k, "[REDACTED]")
		}
	}
	return s
}

// errorMessage extracts a human-readable message from an error body.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			if obj.Type != "" {
				return obj.Type + ": " + obj.Message
			}
			return obj.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		}
	}
	return strings.TrimSpace(string(body))
}

// truncate shortens s to at most maxErrorText bytes (plus an ellipsis)
// on a rune boundary. Callers redact first, so a cut cannot leave part of
// a secret behind.
func truncate(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
