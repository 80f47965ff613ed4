package model

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Attempts records the HTTP attempts of one provider call (as SDK
// middleware), so a failure can be classified from the last status and
// error body even when the body is not in the provider's own shape.
// Attempts happen one after another, so it needs no lock.
type Attempts struct {
	n      int
	status int
	body   []byte
}

// maxErrorBody bounds how much of an error response is kept.
const maxErrorBody = 64 << 10

// Do runs one attempt through next, recording its status and (for
// failures) its body, which it restores for the SDK.
func (a *Attempts) Do(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	a.n++
	a.status, a.body = 0, nil
	res, err := next(req)
	if err != nil || res == nil {
		return res, err
	}
	a.status = res.StatusCode
	if res.StatusCode >= 400 && res.Body != nil {
		// A read error leaves a short body; the status still counts.
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		_ = res.Body.Close()
		a.body = b
		res.Body = io.NopCloser(bytes.NewReader(b))
	}
	return res, nil
}

// Classify turns a provider SDK's error into the error Generate returns:
// the context's error, an *Error from the last HTTP failure, a plain
// error when nothing was sent (configuration), or a retryable *Error
// without status (transport). secrets are redacted from messages.
func (a *Attempts) Classify(ctx context.Context, provider string, err error, secrets ...string) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%s: %w", provider, cerr)
	}
	if a.status >= 400 {
		return NewHTTPError(provider, a.status, a.body, secrets...)
	}
	msg := Redact(err.Error(), secrets...)
	if a.n == 0 {
		return fmt.Errorf("%s: %s", provider, msg)
	}
	return &Error{Provider: provider, Status: 0, Retryable: true, Err: errors.New(msg)}
}
