// The POST API's plumbing: the CSRF and content-type checks, JSON
// bodies and answers, and errors that carry an HTTP status.

package inbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// api wraps a POST handler: CSRF header, JSON body, JSON answer.
func (s *Server) api(h func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(csrfHeader) != "1" || !sameOrigin(r) {
			writeErr(w, http.StatusForbidden, errors.New("missing CSRF header or cross-origin request"))
			return
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			writeErr(w, http.StatusUnsupportedMediaType, errors.New("want application/json"))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 4<<20)
		out, err := h(r)
		writeResult(w, out, err)
	}
}

// counted counts an answer handler's errors as the inbox channel's
// refusals.
func (s *Server) counted(h func(r *http.Request) (any, error)) func(r *http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		out, err := h(r)
		if err != nil {
			s.refusals.WithLabelValues("inbox").Inc()
		}
		return out, err
	}
}

// writeResult writes out, or err with its status: an httpError's own,
// else 502 (the server behind the inbox failed).
func writeResult(w http.ResponseWriter, out any, err error) {
	if err != nil {
		var he *httpError
		if errors.As(err, &he) {
			writeErr(w, he.status, he.err)
			return
		}
		writeErr(w, http.StatusBadGateway, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// sameOrigin rejects requests whose Origin header names another host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	_, host, ok := strings.Cut(o, "://")
	return ok && host == r.Host
}

type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

func statusErr(status int, format string, args ...any) error {
	return &httpError{status: status, err: fmt.Errorf(format, args...)}
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return statusErr(http.StatusBadRequest, "bad request body: %w", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
