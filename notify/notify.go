// Package notify sends signed webhooks about turns that need a human:
// an approval was requested or escalated at its deadline, or an external
// result is awaited.
//
// Deliveries follow the Standard Webhooks scheme. Every POST carries
// three headers:
//
//	webhook-id:        the message id: one per notification and URL, the same on every retry
//	webhook-timestamp: the attempt's send time in Unix seconds
//	webhook-signature: "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body))
//
// The key is the secret decoded by [ParseSecret]: a "whsec_" secret is
// the base64 of the key bytes, any other non-empty secret is used as is.
//
// Receivers check a delivery with [Verify] (signature and replay window)
// or a [Receiver] (which also rejects an id seen within the window).
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Event types a [Sender] posts.
const (
	// TypeApprovalRequested: a call waits for an approval.
	TypeApprovalRequested = "approval_requested"
	// TypeApprovalEscalated: an approval's deadline passed; Action says
	// what happened (deny, allow, or notify and keep waiting). A timed-out
	// deny is an escalation with action deny.
	TypeApprovalEscalated = "approval_escalated"
	// TypeExternalRequested: a call waits for an external result.
	TypeExternalRequested = "external_requested"
	// TypeApprovalAnswered: a waiting call got its answer; Answer says
	// who gave it, through what, and the decision.
	TypeApprovalAnswered = "approval_answered"
	// TypeApprovalReminder: a call still waits and its deadline is near.
	TypeApprovalReminder = "approval_reminder"
	// TypeApprovalProgress: an allow short of a call's quorum; Answer
	// says who allowed so far (Approvers) and how far (Progress).
	TypeApprovalProgress = "approval_progress"
	// TypeApprovalUpdated: a policy change re-decided a waiting call and
	// it still waits, under a new Hash (answers must send it) and the
	// verdict's Reason now.
	TypeApprovalUpdated = "approval_updated"
	// TypeSessionMessage: a session took a message (Session says its
	// mode, text and sender); TypeSessionPaused, TypeSessionResumed and
	// TypeSessionCancelled: a session was paused, resumed or cancelled;
	// TypeSessionAnswered: a session's turn answered and the session
	// waits for its next message.
	TypeSessionMessage   = "session_message"
	TypeSessionPaused    = "session_paused"
	TypeSessionResumed   = "session_resumed"
	TypeSessionCancelled = "session_cancelled"
	TypeSessionAnswered  = "session_answered"
)

// Escalation actions carried in [Event.Action].
const (
	ActionDeny   = "deny"
	ActionAllow  = "allow"
	ActionNotify = "notify"
)

// Headers set on every webhook request (Standard Webhooks names).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix marks a secret whose key is base64-encoded after it.
const SecretPrefix = "whsec_"

// DefaultTolerance is the replay window: a delivery whose timestamp is
// further than this from the receiver's clock is rejected.
const DefaultTolerance = 5 * time.Minute

// Event is the JSON body of one webhook.
type Event struct {
	Type       string `json:"type"`
	WorkflowID string `json:"workflow_id"`
	CallID     string `json:"call_id"`
	Tool       string `json:"tool"`
	// Action is the escalation action (deny, allow, notify) of an
	// approval_escalated event.
	Action string          `json:"action,omitempty"`
	Input  json.RawMessage `json:"input,omitempty"`
	// Message is why the call asks, as a person reads it (the verdict's
	// message); Reason the layer of the policy that decided ("Mode:
	// default", "Rule: Bash(rm:*)").
	Message     string    `json:"message,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	RequestedAt time.Time `json:"requested_at"`
	Deadline    time.Time `json:"deadline"`
	InboxURL    string    `json:"inbox_url,omitempty"`
	// Hash binds an answer to the call as the event shows it (the
	// pending entry's hash, which an answer sends back); a policy change
	// replaces it (approval_updated).
	Hash string `json:"hash,omitempty"`
	// Answer is the answer of an approval_answered event.
	Answer *Answer `json:"answer,omitempty"`
	// Namespace, Agent (the turn's label) and Roles (the approver roles
	// that cover the call) are what routes match.
	Namespace string   `json:"namespace,omitempty"`
	Agent     string   `json:"agent,omitempty"`
	Roles     []string `json:"roles,omitempty"`
	// Session is what a session_* event reports.
	Session *Session `json:"session,omitempty"`
}

// Session is a session_* event's news: the session's state after it,
// the turn it concerns, and the message or control that caused it.
type Session struct {
	// Seq numbers the session's events (its event stream's sequence).
	Seq   int    `json:"seq"`
	State string `json:"state"`
	Turn  int    `json:"turn"`
	// Mode and Text are a message's; Reason a control's; Answer the
	// start of an answered turn's answer.
	Mode   string    `json:"mode,omitempty"`
	Text   string    `json:"text,omitempty"`
	Reason string    `json:"reason,omitempty"`
	Answer string    `json:"answer,omitempty"`
	By     string    `json:"by,omitempty"`
	Via    string    `json:"via,omitempty"`
	At     time.Time `json:"at"`
}

// Answer is an approval_answered event's answer.
type Answer struct {
	// By is the approver: a person, "deadline" for an escalation,
	// "policy" for a live-policy re-decision, "rule" for an added rule.
	By string `json:"by,omitempty"`
	// Via is the authenticated key or channel ("slack", "policy v7").
	Via string `json:"via,omitempty"`
	// Decision is allow, deny, always_allow, or result (an external
	// result).
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// Scope and TTL (a Go duration, "1h0m0s") are those of a remembered
	// always_allow.
	Scope  string `json:"scope,omitempty"`
	TTL    string `json:"ttl,omitempty"`
	Edited bool   `json:"edited,omitempty"`
	// Raise is what an allow of a budget approval (tool Budget) added
	// to the budget, written as the CLI's --raise: "cost=+2,time=+1h0m0s".
	Raise string    `json:"raise,omitempty"`
	At    time.Time `json:"at"`
	// Approvers are everyone who allowed a call that needs several
	// approvers, Progress how far its quorum is ("1 of 2"), and Partial
	// marks an approval_progress (the call still waits).
	Approvers []string `json:"approvers,omitempty"`
	Progress  string   `json:"progress,omitempty"`
	Partial   bool     `json:"partial,omitempty"`
}

// Match selects the events of a route. Each set field is a pattern
// (path.Match syntax: "prod-*", "Bash") the event's field must match;
// Role matches when one of the event's roles does. Empty fields match
// everything.
type Match struct {
	Namespace string `json:"namespace,omitempty" yaml:"namespace"`
	Agent     string `json:"agent,omitempty" yaml:"agent"`
	Tool      string `json:"tool,omitempty" yaml:"tool"`
	Role      string `json:"role,omitempty" yaml:"role"`
}

// Matches reports whether e is selected by m.
func (m Match) Matches(e Event) bool {
	if !glob(m.Namespace, e.Namespace) || !glob(m.Agent, e.Agent) || !glob(m.Tool, e.Tool) {
		return false
	}
	if m.Role == "" {
		return true
	}
	return slices.ContainsFunc(e.Roles, func(r string) bool { return glob(m.Role, r) })
}

func glob(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}

// Route sends the events it matches to its webhooks.
type Route struct {
	Match    Match    `json:"match" yaml:"match"`
	Webhooks []string `json:"webhooks" yaml:"webhooks"`
}

// ID is the event's webhook id: derived from the workflow, the call, the
// type, the action and the time the call started waiting (a session
// event: its sequence number), so every retry of one notification
// carries the same id and two notifications differ.
func (e Event) ID() string {
	h := sha256.New()
	for _, s := range []string{e.WorkflowID, e.CallID, e.Type, e.Action, e.RequestedAt.UTC().Format(time.RFC3339Nano)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if e.Session != nil {
		fmt.Fprintf(h, "session %d", e.Session.Seq)
	}
	// A call's updates and quorum steps are each news of their own.
	switch {
	case e.Type == TypeApprovalUpdated:
		fmt.Fprintf(h, "hash %s", e.Hash)
	case e.Type == TypeApprovalProgress && e.Answer != nil:
		fmt.Fprintf(h, "approvers %d", len(e.Answer.Approvers))
	}
	return "msg_" + hex.EncodeToString(h.Sum(nil))[:32]
}

// URLID is the webhook id of notification id (Event.ID) sent to url:
// id and a suffix derived from the URL. Each webhook, each route's,
// gets its own id, so a receiver that keeps seen ids across endpoints
// does not drop a copy meant for another, and every retry to one URL
// carries the same id; the shared prefix tells copies of one
// notification apart from others.
func URLID(id, url string) string {
	h := sha256.Sum256([]byte(url))
	return id + "_" + hex.EncodeToString(h[:])[:8]
}

// Errors of secrets, signatures and deliveries (wrapped).
var (
	// ErrEmptySecret: no secret is configured; nothing is sent unsigned.
	ErrEmptySecret = errors.New("webhook secret is empty")
	// ErrBadSecret: a "whsec_" secret whose rest is not base64.
	ErrBadSecret = errors.New("webhook secret is not valid")
	// ErrStatus wraps a non-2xx answer from a receiver.
	ErrStatus = errors.New("webhook receiver answered with an error status")
	// ErrMissingHeaders: a delivery lacks webhook-id, -timestamp or -signature.
	ErrMissingHeaders = errors.New("missing webhook headers")
	// ErrTimestamp: the timestamp header is not Unix seconds.
	ErrTimestamp = errors.New("invalid webhook timestamp")
	// ErrTooOld and ErrTooNew: the timestamp is outside the replay window.
	ErrTooOld = errors.New("webhook timestamp too old")
	ErrTooNew = errors.New("webhook timestamp too new")
	// ErrSignature: no v1 signature matches.
	ErrSignature = errors.New("no matching webhook signature")
	// ErrReplay: a [Receiver] has already accepted this id within the window.
	ErrReplay = errors.New("webhook id already received")
)

// ParseSecret returns the signing key of a secret: "whsec_" followed by
// base64 (standard encoding) is decoded; any other non-empty string is
// the key itself. An empty secret or key is an error.
func ParseSecret(secret string) ([]byte, error) {
	s := strings.TrimSpace(secret)
	if s == "" {
		return nil, ErrEmptySecret
	}
	if rest, ok := strings.CutPrefix(s, SecretPrefix); ok {
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, fmt.Errorf("%w: after %q: %w", ErrBadSecret, SecretPrefix, err)
		}
		if len(key) == 0 {
			return nil, ErrEmptySecret
		}
		return key, nil
	}
	return []byte(s), nil
}

// Sign returns the webhook-signature value ("v1,<base64>") of a message.
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := ParseSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, ts.Unix(), body)), nil
}

func mac(key []byte, id string, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Sender posts events to webhook URLs. It does not retry: the caller (a
// Temporal activity) retries with backoff when Send returns an error, and
// passes back the URLs already delivered so they are not sent twice.
type Sender struct {
	// URLs receive every event no route matches (all events when there
	// are no routes).
	URLs []string
	// Routes send the events they match to their webhooks instead of
	// URLs: an event goes to the webhooks of every matching route.
	Routes []Route
	// Secret signs every delivery (see [ParseSecret]); Send refuses to
	// send when it is empty.
	Secret string
	// HTTPClient sends the requests (default: a client with a 10 s timeout).
	HTTPClient *http.Client
}

// Delivery is one event on its way to the Sender's URLs.
type Delivery struct {
	// ID is the notification's id, the same on every attempt (default
	// Event.ID()); each URL gets its own webhook id made from it (URLID).
	ID    string
	Event Event
	// Delivered lists the URLs that accepted this delivery; Send skips
	// them and appends the URLs it delivers to.
	Delivered []string
	// OnDelivered, when set, is called after each URL accepts, with the
	// whole Delivered list, so the caller can record it durably.
	OnDelivered func(delivered []string)
}

// Send posts d.Event to every URL not in d.Delivered, each request signed
// with its own timestamp, and returns the joined errors of the URLs that
// failed (transport errors, non-2xx answers). A bad secret is returned
// before anything is sent.
func (s *Sender) Send(ctx context.Context, d *Delivery) error {
	key, err := ParseSecret(s.Secret)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	body, err := json.Marshal(d.Event)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	if d.ID == "" {
		d.ID = d.Event.ID()
	}
	hc := s.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	var errs []error
	for _, u := range s.Targets(d.Event) {
		if slices.Contains(d.Delivered, u) {
			continue
		}
		if err := post(ctx, hc, u, key, URLID(d.ID, u), body); err != nil {
			errs = append(errs, err)
			continue
		}
		d.Delivered = append(d.Delivered, u)
		if d.OnDelivered != nil {
			d.OnDelivered(slices.Clone(d.Delivered))
		}
	}
	return errors.Join(errs...)
}

// Targets lists the webhook URLs of e, each once: those of the routes
// that match it, or URLs when none does.
func (s *Sender) Targets(e Event) []string {
	var out []string
	for _, r := range s.Routes {
		if !r.Match.Matches(e) {
			continue
		}
		for _, u := range r.Webhooks {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	if len(out) == 0 {
		return s.URLs
	}
	return out
}

// Enabled reports whether s sends anything (it has URLs or routes).
func (s *Sender) Enabled() bool {
	return s != nil && (len(s.URLs) > 0 || len(s.Routes) > 0)
}

func post(ctx context.Context, hc *http.Client, url string, key []byte, id string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", url, err)
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "warden-notify")
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, "v1,"+base64.StdEncoding.EncodeToString(mac(key, id, ts, body)))
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

// Verify checks one delivery as a receiver: the three headers are
// present, the timestamp is within tolerance of now either way
// (DefaultTolerance when tolerance <= 0), and one of the space-separated
// v1 signatures is the HMAC of id, timestamp and body under secret (the
// comparison takes constant time). It returns the webhook id.
//
// Verify alone does not stop a captured delivery replayed within the
// window: receivers keep the ids they accepted for the window and reject
// a repeated one, as [Receiver] does.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) (string, error) {
	key, err := ParseSecret(secret)
	if err != nil {
		return "", err
	}
	id, tsRaw, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsRaw == "" || sigs == "" {
		return "", ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(tsRaw, 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: %q", ErrTimestamp, tsRaw)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	switch sent := time.Unix(ts, 0); {
	case now.Sub(sent) > tolerance:
		return "", fmt.Errorf("%w: sent %s, window %s", ErrTooOld, sent.UTC().Format(time.RFC3339), tolerance)
	case sent.Sub(now) > tolerance:
		return "", fmt.Errorf("%w: sent %s, window %s", ErrTooNew, sent.UTC().Format(time.RFC3339), tolerance)
	}
	want := mac(key, id, ts, body)
	for _, s := range strings.Fields(sigs) {
		v, b64, ok := strings.Cut(s, ",")
		if !ok || v != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return id, nil
		}
	}
	return "", ErrSignature
}
