// The Connect protocol as envd speaks it: error codes and bodies, the
// checks every RPC needs (method, Basic user, protocol version), unary
// calls with JSON bodies, and the envelope framing of streams.

package e2bfake

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// connectStatus maps Connect codes to HTTP statuses as connect-go 1.x.
func connectStatus(code string) int {
	switch code {
	case "canceled":
		return 499
	case "invalid_argument", "failed_precondition", "out_of_range":
		return 400
	case "deadline_exceeded":
		return 504
	case "not_found":
		return 404
	case "already_exists", "aborted":
		return 409
	case "permission_denied":
		return 403
	case "resource_exhausted":
		return 429
	case "unimplemented":
		return 501
	case "unavailable":
		return 503
	case "unauthenticated":
		return 401
	}
	return 500
}

// connectError is a Connect error before it is written.
type connectError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *connectError) Error() string { return e.Code + ": " + e.Message }

func cerr(code, format string, args ...any) *connectError {
	return &connectError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func writeConnectError(w http.ResponseWriter, e *connectError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(connectStatus(e.Code))
	_ = json.NewEncoder(w).Encode(e)
}

// admitConnect checks what every Connect RPC needs: POST, the sandbox
// user and Connect-Protocol-Version 1. It returns false when it has
// written the error.
func admitConnect(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		plainError(w, http.StatusMethodNotAllowed, "method not allowed")
		return false
	}
	if u, ok := basicUser(r); !ok {
		writeConnectError(w, cerr("unauthenticated", "invalid authorization header"))
		return false
	} else if u != User {
		writeConnectError(w, cerr("unauthenticated", "invalid username: '%s'", u))
		return false
	}
	if r.Header.Get("Connect-Protocol-Version") != "1" {
		// connect-go can be configured to require it; the fake always does.
		writeConnectError(w, cerr("invalid_argument", "missing required header: set Connect-Protocol-Version to \"1\""))
		return false
	}
	return true
}

// serveUnary serves a unary Connect RPC with a JSON body.
func (s *Server) serveUnary(w http.ResponseWriter, r *http.Request, proc string) {
	unary := s.unaryHandler(proc)
	if unary == nil {
		writeConnectError(w, cerr("unimplemented", "%s is not implemented", r.URL.Path))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" && ct != "application/json; charset=utf-8" {
		w.Header().Set("Accept-Post", "application/json")
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeConnectError(w, cerr("internal", "read body: %v", err))
		return
	}
	out, e := unary(body)
	if e != nil {
		writeConnectError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// basicUser returns the Basic-auth user; no header means the default user.
func basicUser(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return User, true
	}
	raw, ok := strings.CutPrefix(h, "Basic ")
	if !ok {
		return "", false
	}
	dec, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return "", false
	}
	u, _, ok := strings.Cut(string(dec), ":")
	return u, ok
}

// decodeMessage decodes a protojson request. Unlike envd it rejects
// unknown fields, so a misspelt field fails the test that sent it.
func decodeMessage(body []byte, v any) *connectError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return cerr("invalid_argument", "unmarshal message: %v", err)
	}
	if dec.More() {
		return cerr("invalid_argument", "unmarshal message: trailing data")
	}
	return nil
}

func frame(flags byte, payload []byte) []byte {
	b := make([]byte, 5+len(payload))
	b[0] = flags
	binary.BigEndian.PutUint32(b[1:5], uint32(len(payload)))
	copy(b[5:], payload)
	return b
}

func eventFrame(ev any) []byte {
	b, _ := json.Marshal(map[string]any{"event": ev})
	return frame(0, b)
}

func endStreamFrame(e *connectError) []byte {
	if e == nil {
		return frame(0x02, []byte("{}"))
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return frame(0x02, b)
}

// unwrapEnvelope returns the one message of an enveloped request body.
func unwrapEnvelope(body []byte) ([]byte, *connectError) {
	if len(body) < 5 {
		return nil, cerr("invalid_argument", "protocol error: incomplete envelope")
	}
	n := binary.BigEndian.Uint32(body[1:5])
	switch {
	case body[0] != 0:
		return nil, cerr("internal", "protocol error: invalid envelope flags %d", body[0])
	case int(n) != len(body)-5:
		return nil, cerr("unknown", "protocol error: envelope length %d but %d bytes follow (exactly one message expected)", n, len(body)-5)
	}
	return body[5:], nil
}
