package e2b

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/wardenhq/warden/backend"
)

var (
	// ErrAuth is wrapped by errors caused by a rejected API key or envd
	// access token (HTTP 401/403 from the control plane, unauthenticated
	// from envd).
	ErrAuth = errors.New("e2b: authentication failed")
	// ErrQuota is wrapped by errors caused by rate limits or exhausted
	// capacity (HTTP 429 after retries, resource_exhausted,
	// sandbox_capacity_unavailable).
	ErrQuota = errors.New("e2b: quota or rate limit exceeded")
	// ErrNotFound is wrapped when a sandbox does not exist (HTTP 404 from
	// the control plane).
	ErrNotFound = errors.New("e2b: sandbox not found")
	// ErrUnavailable is wrapped when the sandbox cannot be reached (proxy
	// 502, HTTP 503/504, Connect unavailable): it timed out or was killed.
	ErrUnavailable = fmt.Errorf("e2b: sandbox unavailable: %w", backend.ErrUnavailable)
	// ErrOutcomeUnknown is wrapped when a request that is not idempotent
	// (sandbox creation, process start) got an answer that does not say
	// whether it took effect: an HTTP 5xx, which a gateway can send after
	// the service acted on the request (a 502 or 504 while the process
	// already runs), other than a capacity refusal. Such a request is not
	// retried: the sandbox may exist and the command may have run. The
	// error also wraps the APIError or RPCError answer and ErrUnavailable,
	// so backend.ErrUnavailable: tools report it as an infrastructure
	// fault, and the activity's RetryPolicy, not this package, decides
	// whether to run the call again.
	ErrOutcomeUnknown = fmt.Errorf("e2b: outcome unknown, the request may have taken effect: %w", ErrUnavailable)
)

// mayHaveTakenEffect reports whether an error status to a request that
// is not idempotent leaves open whether the request took effect: 4xx
// answers are refusals, 5xx answers (from the service or any gateway in
// front of it) are not.
func mayHaveTakenEffect(status int) bool {
	return status >= 500
}

// unknownOutcome wraps the error answer to a request that is not
// idempotent, sent once, with ErrOutcomeUnknown.
func unknownOutcome(err error) error {
	return fmt.Errorf("%w; not retried as the request is not idempotent: %w", err, ErrOutcomeUnknown)
}

// APIError is a non-success answer from the control-plane API.
type APIError struct {
	// Op names the operation, e.g. "create sandbox".
	Op string
	// StatusCode is the HTTP status.
	StatusCode int
	// ErrorCode is the optional error_code string, e.g.
	// "sandbox_capacity_unavailable".
	ErrorCode string
	// Message is the server's message.
	Message string
}

// Error implements error.
func (e *APIError) Error() string {
	s := fmt.Sprintf("e2b %s: HTTP %d", e.Op, e.StatusCode)
	if e.ErrorCode != "" {
		s += " " + e.ErrorCode
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap maps the status to one of the package's sentinel errors.
func (e *APIError) Unwrap() error {
	switch {
	case e.ErrorCode == "sandbox_capacity_unavailable":
		return ErrQuota
	case e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden:
		return ErrAuth
	case e.StatusCode == http.StatusTooManyRequests:
		return ErrQuota
	case e.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case e.StatusCode == http.StatusBadGateway || e.StatusCode == http.StatusServiceUnavailable || e.StatusCode == http.StatusGatewayTimeout:
		return ErrUnavailable
	}
	return nil
}

// RPCError is an error from envd: a Connect error (unary body or the
// end-of-stream trailer of a stream) or a /files error.
type RPCError struct {
	// Procedure is the Connect procedure or "/files".
	Procedure string
	// Code is the Connect code in lower snake case, e.g. "not_found".
	// Plain HTTP errors (the proxy's 502, envd's 401) get a code derived
	// from the status.
	Code string
	// Message is the server's message.
	Message string
	// StatusCode is the HTTP status; 200 for errors in stream trailers.
	StatusCode int
}

// Error implements error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("e2b envd %s: %s: %s", e.Procedure, e.Code, e.Message)
}

// Unwrap maps the Connect code to a sentinel: not_found wraps
// backend.ErrNotExist, permission_denied fs.ErrPermission.
func (e *RPCError) Unwrap() error {
	switch e.Code {
	case "not_found":
		return backend.ErrNotExist
	case "permission_denied":
		return fs.ErrPermission
	case "unauthenticated":
		return ErrAuth
	case "resource_exhausted":
		return ErrQuota
	case "unavailable":
		return ErrUnavailable
	}
	return nil
}

// codeForStatus maps an HTTP status to a Connect code, as connect-go and
// the SDKs' PLAIN_HTTP_ERROR_CODES do.
func codeForStatus(status int) string {
	switch status {
	case 400:
		return "invalid_argument"
	case 401:
		return "unauthenticated"
	case 403:
		return "permission_denied"
	case 404:
		return "not_found"
	case 409:
		return "already_exists"
	case 429:
		return "resource_exhausted"
	case 499:
		return "canceled"
	case 501:
		return "unimplemented"
	case 502, 503:
		return "unavailable"
	case 504:
		return "deadline_exceeded"
	}
	return "unknown"
}

// apiErrorFrom builds an APIError from a control-plane error body.
func apiErrorFrom(op string, status int, body []byte) *APIError {
	var eb struct {
		Message   string `json:"message"`
		ErrorCode string `json:"error_code"`
	}
	e := &APIError{Op: op, StatusCode: status}
	if json.Unmarshal(body, &eb) == nil {
		e.Message, e.ErrorCode = eb.Message, eb.ErrorCode
	} else {
		e.Message = truncate(string(body), 200)
	}
	return e
}

// rpcErrorFrom builds an RPCError from an envd error body: a Connect error
// {"code":"not_found","message":…} or a plain {"code":404,"message":…}.
func rpcErrorFrom(procedure string, status int, body []byte) *RPCError {
	e := &RPCError{Procedure: procedure, StatusCode: status, Code: codeForStatus(status)}
	var eb struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &eb) != nil {
		e.Message = truncate(string(body), 200)
		return e
	}
	e.Message = eb.Message
	var code string
	if json.Unmarshal(eb.Code, &code) == nil && code != "" {
		e.Code = code
	}
	return e
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
