// Package stream writes audit records to a sink as turns record them:
// the live audit stream (config audit.stream). A Streamer reads each
// turn that made progress (the worker touches it from its activities,
// signals and updates, and a sweep of visibility finds the turns that
// closed), and sends the records it has not sent, numbered and
// hash-chained as `starter audit --jsonl` prints them, to a file (with
// rotation), stdout or an HTTP endpoint. It never blocks a turn: a sink
// that is down holds the records back, counted and logged, until it is
// back.
package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Sink takes batches of JSON lines, in order. A batch it fails to take
// is offered again, whole, later.
type Sink interface {
	Write(ctx context.Context, lines []byte) error
	Close() error
	// String names the sink for logs (without credentials).
	String() string
}

// SinkOptions tune Open's sinks.
type SinkOptions struct {
	// MaxBytes rotates a file sink when it would grow past it (default
	// 100 MiB); Keep is how many rotated files stay (default 5).
	MaxBytes int64
	Keep     int
	// Token is sent to an HTTP sink as a bearer token.
	Token string
	// Timeout bounds an HTTP request (default 10s).
	Timeout time.Duration
	// Stdout is the stream of the "stdout" sink (default os.Stdout).
	Stdout io.Writer
}

// Open opens the sink spec names: "stdout", an http:// or https:// URL
// (each batch POSTed as application/x-ndjson), an OpenTelemetry
// collector (otlp+http:// or otlp+https://: OTLP/HTTP logs), or a file
// path.
func Open(spec string, o SinkOptions) (Sink, error) {
	switch {
	case spec == "":
		return nil, errors.New("audit stream: no sink")
	case spec == "stdout":
		w := o.Stdout
		if w == nil {
			w = os.Stdout
		}
		return &writerSink{w: w}, nil
	case strings.HasPrefix(spec, OTLPScheme):
		return openOTLP(spec, o)
	case strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://"):
		t := o.Timeout
		if t <= 0 {
			t = 10 * time.Second
		}
		return &httpSink{url: spec, token: o.Token, client: &http.Client{Timeout: t, CheckRedirect: keepPost}}, nil
	}
	return openFile(spec, o)
}

// writerSink writes to a stream (stdout, for a log shipper).
type writerSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *writerSink) Write(_ context.Context, lines []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.w.Write(lines)
	return err
}

func (s *writerSink) Close() error   { return nil }
func (s *writerSink) String() string { return "stdout" }

// keepPost follows a redirect only while it still POSTs the batch (307,
// 308): after a 301, 302 or 303 the client would GET the new address
// without it, and a 2xx to that GET would count the batch as taken.
// Not followed, the 3xx is the batch's error.
func keepPost(req *http.Request, via []*http.Request) error {
	if req.Method != http.MethodPost {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// httpSink POSTs each batch; a 2xx status takes it.
type httpSink struct {
	url, token string
	client     *http.Client
}

func (s *httpSink) Write(ctx context.Context, lines []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(lines))
	if err != nil {
		return s.redact(err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return s.redact(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s %s", s, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// redact names the sink in err in place of the URL a *url.Error holds
// whole, query included.
func (s *httpSink) redact(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return fmt.Errorf("%s: %w", s, err)
}

func (s *httpSink) Close() error { s.client.CloseIdleConnections(); return nil }

// String is the sink's URL without its query, fragment or password.
func (s *httpSink) String() string {
	u, err := url.Parse(s.url)
	if err != nil {
		return "http sink (an invalid URL)"
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	return u.Redacted()
}

// fileSink appends to a file, rotating it (name.1 … name.Keep) when a
// batch would take it past MaxBytes. Each batch is written and synced
// before it counts as taken.
type fileSink struct {
	mu       sync.Mutex
	path     string
	maxBytes int64
	keep     int
	f        *os.File
	size     int64
}

func openFile(path string, o SinkOptions) (*fileSink, error) {
	s := &fileSink{path: path, maxBytes: o.MaxBytes, keep: o.Keep}
	if s.maxBytes <= 0 {
		s.maxBytes = 100 << 20
	}
	if s.keep <= 0 {
		s.keep = 5
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("audit stream: %w", err)
	}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *fileSink) open() error {
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("audit stream: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit stream: %w", err)
	}
	s.f, s.size = f, st.Size()
	return nil
}

func (s *fileSink) Write(_ context.Context, lines []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		if err := s.open(); err != nil {
			return err
		}
	}
	if s.size > 0 && s.size+int64(len(lines)) > s.maxBytes {
		if err := s.rotate(); err != nil {
			return err
		}
	}
	n, err := s.f.Write(lines)
	s.size += int64(n)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil && n > 0 {
		// A part of the batch went in: cut it off, so that the batch
		// written again is not doubled.
		if terr := s.f.Truncate(s.size - int64(n)); terr == nil {
			s.size -= int64(n)
		}
	}
	return err
}

// rotate renames name.i to name.i+1 (the oldest dropped), name to
// name.1, and opens a new name.
func (s *fileSink) rotate() error {
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("audit stream: %w", err)
	}
	s.f = nil
	_ = os.Remove(fmt.Sprintf("%s.%d", s.path, s.keep))
	for i := s.keep - 1; i >= 1; i-- {
		_ = os.Rename(fmt.Sprintf("%s.%d", s.path, i), fmt.Sprintf("%s.%d", s.path, i+1))
	}
	if err := os.Rename(s.path, s.path+".1"); err != nil {
		return fmt.Errorf("audit stream: rotate: %w", err)
	}
	return s.open()
}

func (s *fileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

func (s *fileSink) String() string { return s.path }
