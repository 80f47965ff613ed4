package notify

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// key32 is a 32-byte key and secret is its "whsec_" form.
var (
	key32  = []byte("0123456789abcdef0123456789abcdef")
	secret = SecretPrefix + base64.StdEncoding.EncodeToString(key32)
)

// delivery is one request a test server received.
type delivery struct {
	header http.Header
	body   []byte
}

// recorder is a real HTTP endpoint that records requests and answers
// with the status its next() returns.
type recorder struct {
	mu   sync.Mutex
	got  []delivery
	next func(n int) int
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, delivery{req.Header.Clone(), body})
	status := http.StatusNoContent
	if r.next != nil {
		status = r.next(len(r.got))
	}
	r.mu.Unlock()
	w.WriteHeader(status)
}

func (r *recorder) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func sampleEvent() Event {
	req := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return Event{Type: TypeApprovalRequested, WorkflowID: "wf-1", CallID: "c1", Tool: "Bash",
		Input: json.RawMessage(`{"command":"touch x"}`), Reason: "no rule", RequestedAt: req,
		Deadline: req.Add(time.Hour), InboxURL: "http://127.0.0.1:8234/"}
}

// TestSendFollowsStandardWebhooks checks a delivery with the reference
// Standard Webhooks library (not our code) and with Verify.
func TestSendFollowsStandardWebhooks(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	ev := sampleEvent()
	s := &Sender{URLs: []string{srv.URL}, Secret: secret}
	if err := s.Send(context.Background(), &Delivery{Event: ev}); err != nil {
		t.Fatal(err)
	}
	got := rec.deliveries()
	if len(got) != 1 {
		t.Fatalf("%d deliveries, want 1", len(got))
	}
	d := got[0]
	if d.header.Get(HeaderID) != URLID(ev.ID(), srv.URL) {
		t.Errorf("webhook-id = %q, want %q", d.header.Get(HeaderID), URLID(ev.ID(), srv.URL))
	}
	ref, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.Verify(d.body, d.header); err != nil {
		t.Errorf("reference library rejects the delivery: %v", err)
	}
	if id, err := Verify(secret, d.header, d.body, time.Now(), 0); err != nil || id != URLID(ev.ID(), srv.URL) {
		t.Errorf("Verify = %q, %v", id, err)
	}
	var back Event
	if err := json.Unmarshal(d.body, &back); err != nil {
		t.Fatal(err)
	}
	if back.Type != ev.Type || back.CallID != "c1" || string(back.Input) != `{"command":"touch x"}` || !back.RequestedAt.Equal(ev.RequestedAt) {
		t.Errorf("body = %+v", back)
	}
	// A plain (non-whsec_) secret is the key itself; the reference
	// library reads it raw.
	rec2 := &recorder{}
	srv2 := httptest.NewServer(rec2)
	defer srv2.Close()
	if err := (&Sender{URLs: []string{srv2.URL}, Secret: "plain-secret"}).Send(context.Background(), &Delivery{Event: ev}); err != nil {
		t.Fatal(err)
	}
	raw, _ := standardwebhooks.NewWebhookRaw([]byte("plain-secret"))
	if d := rec2.deliveries(); len(d) != 1 || raw.Verify(d[0].body, d[0].header) != nil {
		t.Errorf("plain secret: reference library rejects %d deliveries", len(d))
	}
}

// TestSendRetriesOnlyFailedURLs: a second attempt of one delivery skips
// the URL that accepted the first and keeps the URL's webhook id; each
// URL has its own.
func TestSendRetriesOnlyFailedURLs(t *testing.T) {
	t.Parallel()
	ok := &recorder{}
	flaky := &recorder{next: func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}}
	a, b := httptest.NewServer(ok), httptest.NewServer(flaky)
	defer a.Close()
	defer b.Close()
	s := &Sender{URLs: []string{b.URL, a.URL}, Secret: secret}
	var recorded [][]string
	d := &Delivery{Event: sampleEvent(), OnDelivered: func(urls []string) { recorded = append(recorded, urls) }}
	if err := s.Send(context.Background(), d); !errors.Is(err, ErrStatus) {
		t.Fatalf("first attempt error = %v, want ErrStatus", err)
	}
	if !slices.Equal(d.Delivered, []string{a.URL}) || len(recorded) != 1 || !slices.Equal(recorded[0], []string{a.URL}) {
		t.Fatalf("after first attempt: delivered %v, recorded %v", d.Delivered, recorded)
	}
	// The next attempt starts from the recorded state, as the activity does.
	retry := &Delivery{Event: sampleEvent(), Delivered: recorded[0]}
	if err := s.Send(context.Background(), retry); err != nil {
		t.Fatalf("second attempt: %v", err)
	}
	if n := len(ok.deliveries()); n != 1 {
		t.Errorf("healthy URL received %d deliveries, want 1", n)
	}
	fl := flaky.deliveries()
	if len(fl) != 2 || fl[0].header.Get(HeaderID) != fl[1].header.Get(HeaderID) {
		t.Errorf("flaky URL: %d deliveries; a retry must keep the id", len(fl))
	}
	if okID := ok.deliveries()[0].header.Get(HeaderID); okID == fl[0].header.Get(HeaderID) ||
		okID != URLID(d.ID, a.URL) || fl[0].header.Get(HeaderID) != URLID(d.ID, b.URL) {
		t.Errorf("ids %q and %q: want one per URL, made from %q", okID, fl[0].header.Get(HeaderID), d.ID)
	}
	if !slices.Contains(retry.Delivered, a.URL) || !slices.Contains(retry.Delivered, b.URL) {
		t.Errorf("delivered after retry = %v", retry.Delivered)
	}
}

func TestSendRefusesEmptySecret(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	for _, sec := range []string{"", "  ", SecretPrefix} {
		err := (&Sender{URLs: []string{srv.URL}, Secret: sec}).Send(context.Background(), &Delivery{Event: sampleEvent()})
		if !errors.Is(err, ErrEmptySecret) {
			t.Errorf("secret %q: error = %v, want ErrEmptySecret", sec, err)
		}
	}
	if n := len(rec.deliveries()); n != 0 {
		t.Errorf("%d unsigned deliveries sent", n)
	}
}

func TestSendUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	s := &Sender{URLs: []string{url}, Secret: secret, HTTPClient: &http.Client{Timeout: 2 * time.Second}}
	d := &Delivery{Event: sampleEvent()}
	if err := s.Send(context.Background(), d); err == nil || len(d.Delivered) != 0 {
		t.Fatalf("Send to a closed server: %v, delivered %v", err, d.Delivered)
	}
}

func TestParseSecret(t *testing.T) {
	t.Parallel()
	if k, err := ParseSecret(secret); err != nil || !bytes.Equal(k, key32) {
		t.Errorf("whsec_ secret: %q, %v", k, err)
	}
	if k, err := ParseSecret("plain"); err != nil || string(k) != "plain" {
		t.Errorf("plain secret: %q, %v", k, err)
	}
	if _, err := ParseSecret("whsec_!!"); !errors.Is(err, ErrBadSecret) {
		t.Errorf("bad base64: %v", err)
	}
	if _, err := ParseSecret(""); !errors.Is(err, ErrEmptySecret) {
		t.Errorf("empty: %v", err)
	}
}

func TestEventID(t *testing.T) {
	t.Parallel()
	ev := sampleEvent()
	if ev.ID() != sampleEvent().ID() {
		t.Error("the id of one event changes")
	}
	esc := ev
	esc.Type, esc.Action = TypeApprovalEscalated, ActionDeny
	allow := esc
	allow.Action = ActionAllow
	other := ev
	other.CallID = "c2"
	ids := []string{ev.ID(), esc.ID(), allow.ID(), other.ID()}
	slices.Sort(ids)
	if len(slices.Compact(ids)) != 4 {
		t.Errorf("distinct events share an id: %v", ids)
	}
}

// signed builds the headers of a delivery signed at ts.
func signed(t *testing.T, sec, id string, ts time.Time, body []byte) http.Header {
	t.Helper()
	sig, err := Sign(sec, id, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return h
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"type":"approval_requested"}`)
	good := signed(t, secret, "msg_1", now, body)
	with := func(k, v string) http.Header {
		h := good.Clone()
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
		return h
	}
	tests := []struct {
		name   string
		secret string
		h      http.Header
		body   []byte
		now    time.Time
		want   error
	}{
		{"valid", secret, good, body, now, nil},
		{"valid at the edge of the window", secret, good, body, now.Add(DefaultTolerance), nil},
		{"one of several signatures", secret, with(HeaderSignature, "v1,AAAA v2,xyz "+good.Get(HeaderSignature)), body, now, nil},
		{"wrong secret", "other", good, body, now, ErrSignature},
		{"tampered body", secret, good, []byte(`{"type":"approval_escalated"}`), now, ErrSignature},
		{"tampered id", secret, with(HeaderID, "msg_2"), body, now, ErrSignature},
		{"timestamp moved, signature kept", secret, with(HeaderTimestamp, strconv.FormatInt(now.Unix()+60, 10)), body, now, ErrSignature},
		{"too old", secret, good, body, now.Add(DefaultTolerance + time.Second), ErrTooOld},
		{"too new", secret, good, body, now.Add(-DefaultTolerance - time.Second), ErrTooNew},
		{"not a timestamp", secret, with(HeaderTimestamp, "yesterday"), body, now, ErrTimestamp},
		{"no signature", secret, with(HeaderSignature, ""), body, now, ErrMissingHeaders},
		{"no id", secret, with(HeaderID, ""), body, now, ErrMissingHeaders},
		{"unknown version only", secret, with(HeaderSignature, "v2,"+good.Get(HeaderSignature)[3:]), body, now, ErrSignature},
		{"empty secret", "", good, body, now, ErrEmptySecret},
	}
	for _, tt := range tests {
		id, err := Verify(tt.secret, tt.h, tt.body, tt.now, 0)
		if tt.want == nil && (err != nil || id != "msg_1") || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("%s: Verify = %q, %v; want %v", tt.name, id, err, tt.want)
		}
	}
}

// TestTargetsRoutes: an event goes to the webhooks of every route that
// matches it (namespace, agent, tool, one of its roles; globs), each URL
// once, and to the default URLs only when no route matches.
func TestTargetsRoutes(t *testing.T) {
	s := &Sender{URLs: []string{"http://default"}, Routes: []Route{
		{Match: Match{Tool: "Bash", Role: "kube"}, Webhooks: []string{"http://kube"}},
		{Match: Match{Agent: "ops-*"}, Webhooks: []string{"http://ops", "http://kube"}},
		{Match: Match{Namespace: "prod"}, Webhooks: []string{"http://prod"}},
	}}
	for _, c := range []struct {
		name string
		ev   Event
		want []string
	}{
		{"role and tool", Event{Tool: "Bash", Roles: []string{"git", "kube"}}, []string{"http://kube"}},
		{"role without the tool", Event{Tool: "Write", Roles: []string{"kube"}}, []string{"http://default"}},
		{"agent glob, URL once", Event{Tool: "Bash", Agent: "ops-east", Roles: []string{"kube"}}, []string{"http://kube", "http://ops"}},
		{"namespace", Event{Tool: "Read", Namespace: "prod"}, []string{"http://prod"}},
		{"nothing matches", Event{Tool: "Read", Namespace: "dev", Agent: "dev-1"}, []string{"http://default"}},
	} {
		if got := s.Targets(c.ev); !slices.Equal(got, c.want) {
			t.Errorf("%s: targets = %v, want %v", c.name, got, c.want)
		}
	}
	if (&Sender{}).Enabled() || !(&Sender{Routes: s.Routes}).Enabled() {
		t.Error("Enabled: want false without URLs or routes, true with routes only")
	}
}

// TestSendRoutesOwnIDs: an event two routes send to two webhooks
// reaches each with its own webhook id, made from the event's id
// (URLID), and a second send of the same notification carries the same
// ids again: a receiver keeping seen ids takes each route's copy once.
func TestSendRoutesOwnIDs(t *testing.T) {
	t.Parallel()
	kube, ops := &recorder{}, &recorder{}
	ks, osrv := httptest.NewServer(kube), httptest.NewServer(ops)
	defer ks.Close()
	defer osrv.Close()
	s := &Sender{Secret: secret, Routes: []Route{
		{Match: Match{Tool: "Bash"}, Webhooks: []string{ks.URL}},
		{Match: Match{Tool: "Bash"}, Webhooks: []string{osrv.URL}},
	}}
	ev := sampleEvent()
	for range 2 {
		if err := s.Send(context.Background(), &Delivery{Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	k, o := kube.deliveries(), ops.deliveries()
	if len(k) != 2 || len(o) != 2 {
		t.Fatalf("%d and %d deliveries, want 2 each", len(k), len(o))
	}
	kid, oid := k[0].header.Get(HeaderID), o[0].header.Get(HeaderID)
	if kid == oid || kid != URLID(ev.ID(), ks.URL) || oid != URLID(ev.ID(), osrv.URL) || !strings.HasPrefix(kid, ev.ID()+"_") {
		t.Errorf("ids %q and %q, want one per route's webhook made from %q", kid, oid, ev.ID())
	}
	if k[1].header.Get(HeaderID) != kid || o[1].header.Get(HeaderID) != oid {
		t.Error("a second send of the notification changed its ids")
	}
}
