package stream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/audit/stream"
)

// batch returns n JSON lines numbered from seq, padded so that each
// line is width bytes long (newline included).
func batch(seq, n, width int) []byte {
	var b bytes.Buffer
	for i := range n {
		head := fmt.Sprintf(`{"seq":%d,"pad":"`, seq+i)
		tail := "\"}\n"
		b.WriteString(head + strings.Repeat("x", width-len(head)-len(tail)) + tail)
	}
	return b.Bytes()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func write(t *testing.T, s stream.Sink, lines []byte) {
	t.Helper()
	if err := s.Write(context.Background(), lines); err != nil {
		t.Fatalf("%s: write: %v", s, err)
	}
}

// TestFileSinkRotates: a batch that would take the file past MaxBytes
// goes, whole, into a new file; the old ones shift to name.1, name.2 …
// and the one past Keep is dropped. The files kept hold the last lines
// written, in order, each file whole batches; a batch larger than
// MaxBytes is not split either. The expected files come from a model of
// the rule, fed the same batches.
func TestFileSinkRotates(t *testing.T) {
	t.Parallel()
	const maxBytes, keep = 200, 2
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := stream.Open(path, stream.SinkOptions{MaxBytes: maxBytes, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// Lines 50 bytes wide; batch sizes in lines. The first file fills to
	// exactly MaxBytes (no rotation at it, only past it); the 5-line
	// batch, 250 bytes, is past MaxBytes on its own.
	sizes := []int{1, 2, 1, 3, 2, 1, 1, 2, 5, 1, 2}
	var (
		cur     string   // the model's current file
		rotated []string // the model's rotated files, oldest first
		all     string   // every line written
	)
	seq := 1
	for _, n := range sizes {
		b := batch(seq, n, 50)
		seq += n
		if len(cur) > 0 && len(cur)+len(b) > maxBytes {
			rotated = append(rotated, cur)
			cur = ""
		}
		cur += string(b)
		all += string(b)
		write(t, s, b)
	}
	if len(rotated) <= keep {
		t.Fatalf("the batches rotated %d times; the test needs more than Keep=%d", len(rotated), keep)
	}

	want := map[string]string{path: cur}
	for i := 1; i <= keep; i++ {
		want[fmt.Sprintf("%s.%d", path, i)] = rotated[len(rotated)-i]
	}
	for name, w := range want {
		if got := readFile(t, name); got != w {
			t.Errorf("%s:\n%s\nwant:\n%s", filepath.Base(name), got, w)
		}
	}
	if _, err := os.Stat(fmt.Sprintf("%s.%d", path, keep+1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s.%d: %v; want it dropped (Keep=%d)", filepath.Base(path), keep+1, err, keep)
	}

	// Read oldest first, the files are the tail of what was written, no
	// line lost or doubled in between.
	var kept string
	for i := keep; i >= 1; i-- {
		kept += readFile(t, fmt.Sprintf("%s.%d", path, i))
	}
	kept += readFile(t, path)
	if !strings.HasSuffix(all, kept) || len(kept) == 0 {
		t.Errorf("the files, oldest first, are not the last lines written:\n%s", kept)
	}
	// The model aside: the 250-byte batch (lines 14 to 18) is name.1,
	// whole and alone.
	if got, big := readFile(t, path+".1"), string(batch(14, 5, 50)); got != big {
		t.Errorf("%s.1 = %q, want the big batch alone %q", filepath.Base(path), got, big)
	}
}

// TestFileSinkBigBatch: a batch past MaxBytes on its own goes whole
// into an empty file, without rotating the empty file out first.
func TestFileSinkBigBatch(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := stream.Open(path, stream.SinkOptions{MaxBytes: 100, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := batch(1, 4, 40) // 160 bytes
	write(t, s, big)
	if got := readFile(t, path); got != string(big) {
		t.Errorf("%s = %q, want the batch whole %q", filepath.Base(path), got, big)
	}
	if _, err := os.Stat(path + ".1"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s.1: %v; want none (nothing to rotate out)", filepath.Base(path), err)
	}
}

// TestFileSinkDefaults: with no MaxBytes nor Keep, a file sink takes
// batches without rotating (the default is 100 MiB), and Open makes the
// file's directory.
func TestFileSinkDefaults(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a", "b", "audit.jsonl")
	s, err := stream.Open(path, stream.SinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.String() != path {
		t.Errorf("String() = %q, want the path %q", s.String(), path)
	}
	var all []byte
	for i := range 20 {
		b := batch(1+10*i, 10, 100)
		all = append(all, b...)
		write(t, s, b)
	}
	if got := readFile(t, path); got != string(all) {
		t.Errorf("the file holds %d bytes, want the %d written", len(got), len(all))
	}
	if _, err := os.Stat(path + ".1"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s.1: %v; want no rotation under the default size", path, err)
	}
}

// TestFileSinkReopen: a sink opened on an existing file counts its size:
// it appends while the file stays within MaxBytes, and rotates when a
// batch would take the existing lines and the new past it. A sink
// closed and opened again goes on the same way.
func TestFileSinkReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	old := batch(1, 6, 20) // 120 bytes, from an earlier worker
	if err := os.WriteFile(path, old, 0o640); err != nil {
		t.Fatal(err)
	}
	o := stream.SinkOptions{MaxBytes: 200, Keep: 3}
	s, err := stream.Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	b1 := batch(7, 3, 20) // 180 bytes in all: appended
	write(t, s, b1)
	if got, want := readFile(t, path), string(old)+string(b1); got != want {
		t.Fatalf("after a batch that fits: %q, want %q", got, want)
	}
	if _, err := os.Stat(path + ".1"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s.1: %v; want no rotation yet", path, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = stream.Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b2 := batch(10, 2, 20) // 220 bytes with the 180 there: rotates
	write(t, s, b2)
	if got, want := readFile(t, path+".1"), string(old)+string(b1); got != want {
		t.Errorf("%s.1: %q, want the earlier lines %q", filepath.Base(path), got, want)
	}
	if got := readFile(t, path); got != string(b2) {
		t.Errorf("%s: %q, want the new batch %q", filepath.Base(path), got, b2)
	}
}

// TestStdoutSink: the "stdout" sink writes each batch as it is to
// SinkOptions.Stdout, and a failed write is the batch's error.
func TestStdoutSink(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s, err := stream.Open("stdout", stream.SinkOptions{Stdout: &buf})
	if err != nil {
		t.Fatal(err)
	}
	if s.String() != "stdout" {
		t.Errorf("String() = %q, want stdout", s.String())
	}
	b1, b2 := batch(1, 2, 30), batch(3, 1, 30)
	write(t, s, b1)
	write(t, s, b2)
	if got, want := buf.String(), string(b1)+string(b2); got != want {
		t.Errorf("stdout got %q, want %q", got, want)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}

	broken := errors.New("pipe closed")
	s, err = stream.Open("stdout", stream.SinkOptions{Stdout: failWriter{broken}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), b1); !errors.Is(err, broken) {
		t.Errorf("write to a broken stdout: %v, want %v", err, broken)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// request is what an HTTP sink's server received.
type request struct {
	method, path, query, contentType, auth, body string
}

// collector is an httptest server that records the requests it gets
// and answers each path with the status handlers give it (200 when
// none).
type collector struct {
	mu   sync.Mutex
	reqs []request
	srv  *httptest.Server
}

func newCollector(t *testing.T, handlers map[string]http.HandlerFunc) *collector {
	t.Helper()
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("server: reading the body: %v", err)
		}
		c.mu.Lock()
		c.reqs = append(c.reqs, request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(body)})
		c.mu.Unlock()
		if h := handlers[r.URL.Path]; h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) requests() []request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]request(nil), c.reqs...)
}

const (
	token  = "tkn-5c1e9f"
	secret = "q-77d0ab"
)

// TestHTTPSinkPosts: each batch is one POST of application/x-ndjson,
// with the token as a bearer token (none without one), to the URL as
// configured, query included; String() names it without the query.
func TestHTTPSinkPosts(t *testing.T) {
	t.Parallel()
	c := newCollector(t, map[string]http.HandlerFunc{
		"/nocontent": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) },
	})
	s, err := stream.Open(c.srv.URL+"/ingest?key="+secret, stream.SinkOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.String(), c.srv.URL+"/ingest"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	b1, b2 := batch(1, 3, 40), batch(4, 1, 40)
	write(t, s, b1)
	write(t, s, b2)

	anon, err := stream.Open(c.srv.URL+"/nocontent", stream.SinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	write(t, anon, b1) // 204 takes it too

	want := []request{
		{http.MethodPost, "/ingest", "key=" + secret, "application/x-ndjson", "Bearer " + token, string(b1)},
		{http.MethodPost, "/ingest", "key=" + secret, "application/x-ndjson", "Bearer " + token, string(b2)},
		{http.MethodPost, "/nocontent", "", "application/x-ndjson", "", string(b1)},
	}
	got := c.requests()
	if len(got) != len(want) {
		t.Fatalf("the server got %d requests, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// noLeak fails if msg holds the token or the URL's query.
func noLeak(t *testing.T, what, msg string) {
	t.Helper()
	if strings.Contains(msg, token) || strings.Contains(msg, secret) {
		t.Errorf("%s: %q holds the token or the URL's query", what, msg)
	}
}

// TestHTTPSinkRefused: a status other than 2xx is an error that names
// the status (and the start of the answer) and the sink, never the
// token or the URL's query.
func TestHTTPSinkRefused(t *testing.T) {
	t.Parallel()
	c := newCollector(t, map[string]http.HandlerFunc{
		"/busy": func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "queue full", http.StatusServiceUnavailable)
		},
		"/denied": func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "bad token", http.StatusUnauthorized)
		},
	})
	for _, tc := range []struct {
		path, status, body string
	}{
		{"/busy", "503 Service Unavailable", "queue full"},
		{"/denied", "401 Unauthorized", "bad token"},
	} {
		s, err := stream.Open(c.srv.URL+tc.path+"?key="+secret, stream.SinkOptions{Token: token})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Write(context.Background(), batch(1, 1, 30))
		s.Close()
		if err == nil {
			t.Errorf("%s: a %s took the batch", tc.path, tc.status)
			continue
		}
		msg := err.Error()
		for _, w := range []string{tc.status, tc.body, c.srv.URL + tc.path} {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q does not name %q", tc.path, msg, w)
			}
		}
		noLeak(t, tc.path, msg)
	}
}

// TestHTTPSinkUnreachable: a server that is gone, or that does not
// answer within SinkOptions.Timeout, is the batch's error; it names the
// sink, never the token or the URL's query (which the transport's
// error, a *url.Error, holds whole).
func TestHTTPSinkUnreachable(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	s, err := stream.Open(gone.URL+"/ingest?key="+secret, stream.SinkOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Write(context.Background(), batch(1, 1, 30))
	if err == nil {
		t.Fatal("a closed server took the batch")
	}
	if !strings.Contains(err.Error(), gone.URL+"/ingest") {
		t.Errorf("error %q does not name the sink", err)
	}
	noLeak(t, "a closed server", err.Error())
}

// TestHTTPSinkTimeout: SinkOptions.Timeout bounds a request; a server
// that does not answer in time is an error without the URL's query.
func TestHTTPSinkTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	c := newCollector(t, map[string]http.HandlerFunc{
		"/slow": func(http.ResponseWriter, *http.Request) { <-release },
	})
	defer close(release) // before the server's Close waits for the handler
	s, err := stream.Open(c.srv.URL+"/slow?key="+secret, stream.SinkOptions{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	err = s.Write(context.Background(), batch(1, 1, 30))
	if err == nil {
		t.Fatal("a server that never answered took the batch")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the write took %s with a 100ms timeout", d)
	}
	noLeak(t, "timeout", err.Error())
}

// TestHTTPSinkRedirect: a redirect that keeps the POST and its body
// (307, 308) is followed; one that would turn it into a GET without the
// batch (301, 302, 303) is not: it is the batch's error, never taken by
// whatever answers the GET.
func TestHTTPSinkRedirect(t *testing.T) {
	t.Parallel()
	to := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/target", code) }
	}
	c := newCollector(t, map[string]http.HandlerFunc{
		"/307": to(http.StatusTemporaryRedirect),
		"/308": to(http.StatusPermanentRedirect),
		"/301": to(http.StatusMovedPermanently),
		"/302": to(http.StatusFound),
		"/303": to(http.StatusSeeOther),
	})
	b := batch(1, 2, 30)
	for _, code := range []int{307, 308} {
		s, err := stream.Open(fmt.Sprintf("%s/%d", c.srv.URL, code), stream.SinkOptions{Token: token})
		if err != nil {
			t.Fatal(err)
		}
		write(t, s, b)
		s.Close()
	}
	for _, code := range []int{301, 302, 303} {
		s, err := stream.Open(fmt.Sprintf("%s/%d", c.srv.URL, code), stream.SinkOptions{Token: token})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Write(context.Background(), b)
		s.Close()
		if err == nil || !strings.Contains(err.Error(), fmt.Sprint(code)) {
			t.Errorf("a %d redirect: %v; want an error naming the status", code, err)
		}
	}
	var targets []request
	for _, r := range c.requests() {
		if r.path == "/target" {
			targets = append(targets, r)
		}
	}
	if len(targets) != 2 {
		t.Fatalf("the target got %d requests, want the two of 307 and 308: %+v", len(targets), targets)
	}
	for _, r := range targets {
		if r.method != http.MethodPost || r.body != string(b) || r.auth != "Bearer "+token {
			t.Errorf("the target got %+v; want the POST with the batch and the token", r)
		}
	}
}

// TestHTTPSinkName: String() names an HTTP sink by its URL without
// the query, the fragment or the password; an invalid URL is named
// without its text, and so is the error writing to it.
func TestHTTPSinkName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ spec, want string }{
		{"https://logs.example.com/in", "https://logs.example.com/in"},
		{"https://logs.example.com/in?key=" + secret, "https://logs.example.com/in"},
		{"https://logs.example.com/in?key=" + secret + "#" + secret, "https://logs.example.com/in"},
		{"https://ingest:" + secret + "@logs.example.com:8443/in", "https://ingest:xxxxx@logs.example.com:8443/in"},
		{"http://logs example.com/in?key=" + secret, "http sink (an invalid URL)"},
	} {
		s, err := stream.Open(tc.spec, stream.SinkOptions{Token: token})
		if err != nil {
			t.Fatalf("Open(%q): %v", tc.spec, err)
		}
		if got := s.String(); got != tc.want {
			t.Errorf("Open(%q).String() = %q, want %q", tc.spec, got, tc.want)
		}
		s.Close()
	}
	s, err := stream.Open("http://logs example.com/in?key="+secret, stream.SinkOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Write(context.Background(), batch(1, 1, 30))
	if err == nil {
		t.Fatal("a write to an invalid URL took the batch")
	}
	noLeak(t, "an invalid URL", err.Error())
}

// TestOpenErrors: Open refuses an empty spec, and a file it cannot
// create.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	if s, err := stream.Open("", stream.SinkOptions{}); err == nil || !strings.Contains(err.Error(), "no sink") {
		t.Errorf(`Open(""): %v, %v; want the error "no sink"`, s, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	// A path under a file: neither its directory nor it can be made.
	if s, err := stream.Open(filepath.Join(file, "audit.jsonl"), stream.SinkOptions{}); err == nil {
		t.Errorf("Open under a file: %v, nil error", s)
	} else if !strings.HasPrefix(err.Error(), "audit stream: ") {
		t.Errorf("Open under a file: %q, want it prefixed audit stream:", err)
	}
}
