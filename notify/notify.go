// Package notify sends signed webhooks about turns that need a human:
// an approval was requested, escalated, or timed out. Receivers check the
// signature with [Verify].
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Event types a [Sender] posts.
const (
	TypeApprovalRequested = "approval_requested"
	TypeApprovalEscalated = "approval_escalated"
	TypeApprovalTimedOut  = "approval_timed_out"
	TypeExternalRequested = "external_requested"
)

// Headers set on every webhook request.
const (
	// HeaderSignature carries "sha256=<hex HMAC-SHA256(secret, body)>".
	HeaderSignature = "X-Warden-Signature"
	// HeaderTimestamp carries the send time in Unix seconds.
	HeaderTimestamp = "X-Warden-Timestamp"
)

// Event is the JSON body of one webhook.
type Event struct {
	Type        string          `json:"type"`
	WorkflowID  string          `json:"workflow_id"`
	CallID      string          `json:"call_id"`
	Tool        string          `json:"tool"`
	Input       json.RawMessage `json:"input,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	RequestedAt time.Time       `json:"requested_at"`
	Deadline    time.Time       `json:"deadline"`
	InboxURL    string          `json:"inbox_url,omitempty"`
}

// Sender posts events to webhook URLs. It does not retry: the caller (a
// Temporal activity) retries with backoff when Send returns an error.
type Sender struct {
	// URLs receive every event.
	URLs []string
	// Secret keys the HMAC signature; empty sends an empty-key signature.
	Secret string
	// HTTPClient sends the requests (default: a client with a 10 s timeout).
	HTTPClient *http.Client
}

// ErrStatus wraps a non-2xx answer from a receiver.
var ErrStatus = errors.New("webhook receiver answered with an error status")

// Send posts ev to every URL and returns the joined errors of the URLs
// that failed (transport errors, non-2xx answers).
func (s *Sender) Send(ctx context.Context, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	hc := s.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	sig := Sign(s.Secret, body)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	var errs []error
	for _, u := range s.URLs {
		if err := post(ctx, hc, u, body, sig, ts); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func post(ctx context.Context, hc *http.Client, url string, body []byte, sig, ts string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "warden-notify")
	req.Header.Set(HeaderSignature, sig)
	req.Header.Set(HeaderTimestamp, ts)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", url, err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook %s: %w: %s %s", url, ErrStatus, resp.Status, strings.TrimSpace(string(snippet)))
	}
	return nil
}

// Sign returns the signature header value for body: "sha256=" followed
// by the hex HMAC-SHA256 of body keyed with secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether header is a valid signature of body under
// secret. The comparison takes constant time.
func Verify(secret string, body []byte, header string) bool {
	got, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return false
	}
	gotRaw, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hmac.Equal(gotRaw, m.Sum(nil))
}
