package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP logs endpoint that decodes what it is sent
// (protobuf, as the OpenTelemetry Collector's otlp receiver takes it).
type collector struct {
	mu     sync.Mutex
	fail   bool
	auth   []string
	paths  []string
	bodies []string
	attrs  []map[string]string
	svc    []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.auth = append(c.auth, r.Header.Get("Authorization"))
	c.paths = append(c.paths, r.URL.Path)
	if c.fail {
		http.Error(w, "collector is down", http.StatusServiceUnavailable)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var req collogs.ExportLogsServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, rl := range req.GetResourceLogs() {
		for _, a := range rl.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				c.svc = append(c.svc, a.GetValue().GetStringValue())
			}
		}
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				c.bodies = append(c.bodies, lr.GetBody().GetStringValue())
				m := map[string]string{"event": lr.GetEventName(), "time": time.Unix(0, int64(lr.GetTimeUnixNano())).UTC().Format(time.RFC3339Nano)}
				for _, a := range lr.GetAttributes() {
					m[a.GetKey()] = value(a.GetValue())
				}
				c.attrs = append(c.attrs, m)
			}
		}
	}
	out, _ := proto.Marshal(&collogs.ExportLogsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func value(v *commonpb.AnyValue) string {
	if s, ok := v.GetValue().(*commonpb.AnyValue_IntValue); ok {
		return fmt.Sprint(s.IntValue)
	}
	return v.GetStringValue()
}

// TestOTLPSink: each record of a batch arrives at an OTLP/HTTP
// collector as one log record whose body is the JSON line, byte for
// byte, with the fields a query filters on as attributes and the
// record's time; the token goes as a bearer header; a collector that
// refuses fails the Write (the Streamer then holds the batch), and the
// same batch taken later arrives whole.
func TestOTLPSink(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	s, err := Open(OTLPScheme+srv.URL+"?secret=x", SinkOptions{Token: "tok-123", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.String(); strings.Contains(got, "secret") || !strings.HasPrefix(got, "otlp+http://") || !strings.HasSuffix(got, "/v1/logs") {
		t.Errorf("String() = %q", got)
	}
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 123456789, time.UTC)
	var lines []string
	for i := 1; i <= 3; i++ {
		b, _ := json.Marshal(map[string]any{"time": t0.Add(time.Duration(i) * time.Second), "workflow_id": "turn-1", "call_id": fmt.Sprintf("c%d", i),
			"kind": "permission", "decision": "allow", "reason": "unicode ✓ and \"quotes\"", "seq": i, "hash": fmt.Sprintf("h%d", i)})
		lines = append(lines, string(b))
	}
	batch := []byte(strings.Join(lines, "\n") + "\n")
	ctx := context.Background()

	c.fail = true
	if err := s.Write(ctx, batch); err == nil || !strings.Contains(err.Error(), "collector is down") {
		t.Fatalf("a collector that refuses: Write = %v, want an error with the collector's answer", err)
	}
	if err != nil && strings.Contains(err.Error(), "tok-123") {
		t.Errorf("the error shows the token: %v", err)
	}
	c.mu.Lock()
	c.fail = false
	c.mu.Unlock()
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bodies) != 3 {
		t.Fatalf("the collector took %d records, want 3: %q", len(c.bodies), c.bodies)
	}
	for i, b := range c.bodies {
		if b != lines[i] {
			t.Errorf("record %d body %q, want the line %q", i, b, lines[i])
		}
		a := c.attrs[i]
		want := map[string]string{"warden.workflow_id": "turn-1", "warden.call_id": fmt.Sprintf("c%d", i+1), "warden.kind": "permission",
			"warden.decision": "allow", "warden.seq": fmt.Sprint(i + 1), "warden.hash": fmt.Sprintf("h%d", i+1), "event": "warden.audit",
			"time": t0.Add(time.Duration(i+1) * time.Second).Format(time.RFC3339Nano)}
		for k, v := range want {
			if a[k] != v {
				t.Errorf("record %d: %s = %q, want %q", i, k, a[k], v)
			}
		}
	}
	for i, h := range c.auth {
		if h != "Bearer tok-123" {
			t.Errorf("request %d: Authorization %q", i, h)
		}
	}
	for _, p := range c.paths {
		if p != "/v1/logs" {
			t.Errorf("posted to %q, want /v1/logs", p)
		}
	}
	if len(c.svc) == 0 || c.svc[0] != "warden-worker" {
		t.Errorf("service.name %q", c.svc)
	}
}

// TestOTLPSinkRefusesBadInput: a spec that is not an http(s) URL is an
// error at Open; a line that is not JSON fails the Write and sends
// nothing.
func TestOTLPSinkRefusesBadInput(t *testing.T) {
	for _, spec := range []string{"otlp+ftp://x", "otlp+http://", "otlp+"} {
		if _, err := Open(spec, SinkOptions{}); err == nil {
			t.Errorf("Open(%q) took it", spec)
		}
	}
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	s, err := Open(OTLPScheme+srv.URL, SinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(context.Background(), []byte("{\"kind\":\"x\"}\nnot json\n")); err == nil {
		t.Fatal("a line that is not JSON was taken")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.paths) != 0 {
		t.Errorf("a batch with a bad line sent %d requests", len(c.paths))
	}
}
