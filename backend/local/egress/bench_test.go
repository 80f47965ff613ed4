package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// benchServer serves /small (a short body) and /big (size bytes of
// zeros) on loopback.
func benchServer(b *testing.B, size int64) *httptest.Server {
	zeros := make([]byte, 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			io.WriteString(w, "ok\n")
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(size))
		for left := size; left > 0; left -= int64(len(zeros)) {
			if _, err := w.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
				return
			}
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

// benchProxy serves a proxy that names loopback.
func benchProxy(b *testing.B) *url.URL {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); Serve(ln, Policy{Hosts: []string{"127.0.0.1"}}, Options{}) }()
	b.Cleanup(func() { ln.Close(); <-done })
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

// get fetches u with c and drains the body.
func get(b *testing.B, c *http.Client, u string) int64 {
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("%s: %s, %v", u, resp.Status, err)
	}
	return n
}

// tunnelGet fetches path from target through a CONNECT tunnel of the
// proxy px (direct when px is nil), one connection each time.
func tunnelGet(b *testing.B, px *url.URL, target, path string) int64 {
	addr := target
	if px != nil {
		addr = px.Host
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	if px != nil {
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("CONNECT: %v %v", resp, err)
		}
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, target)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkConnectionLatency: the proxy's added latency per connection:
// a small GET on a new connection each time, direct and through the
// proxy (plain HTTP, and a CONNECT tunnel), interleaved in the same
// run. It reports each one's time and the ratio to direct.
func BenchmarkConnectionLatency(b *testing.B) {
	srv := benchServer(b, 0)
	px := benchProxy(b)
	target := strings.TrimPrefix(srv.URL, "http://")
	direct := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	proxied := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(px), DisableKeepAlives: true}}
	var tDirect, tPlain, tTunnel, tRawDirect time.Duration
	for b.Loop() {
		t0 := time.Now()
		get(b, direct, srv.URL+"/small")
		t1 := time.Now()
		get(b, proxied, srv.URL+"/small")
		t2 := time.Now()
		tunnelGet(b, nil, target, "/small")
		t3 := time.Now()
		tunnelGet(b, px, target, "/small")
		t4 := time.Now()
		tDirect += t1.Sub(t0)
		tPlain += t2.Sub(t1)
		tRawDirect += t3.Sub(t2)
		tTunnel += t4.Sub(t3)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tDirect.Microseconds())/n, "direct-µs")
	b.ReportMetric(float64(tPlain.Microseconds())/n, "plain-µs")
	b.ReportMetric(float64(tPlain)/float64(tDirect), "plain/direct")
	b.ReportMetric(float64(tRawDirect.Microseconds())/n, "rawdirect-µs")
	b.ReportMetric(float64(tTunnel.Microseconds())/n, "connect-µs")
	b.ReportMetric(float64(tTunnel)/float64(tRawDirect), "connect/direct")
}

// BenchmarkDownload: throughput of a 100 MB download, direct and
// through the proxy (plain HTTP and a CONNECT tunnel), interleaved in
// the same run; it reports each one's MB/s and its share of direct's.
func BenchmarkDownload(b *testing.B) {
	const size = 100 << 20
	srv := benchServer(b, size)
	px := benchProxy(b)
	target := strings.TrimPrefix(srv.URL, "http://")
	plain := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(px), DisableKeepAlives: true}}
	var tDirect, tPlain, tTunnel time.Duration
	timed := func(d *time.Duration, fetch func() int64) {
		start := time.Now()
		if n := fetch(); n != size {
			b.Fatalf("got %d bytes", n)
		}
		*d += time.Since(start)
	}
	for b.Loop() {
		timed(&tDirect, func() int64 { return tunnelGet(b, nil, target, "/big") })
		timed(&tPlain, func() int64 { return get(b, plain, srv.URL+"/big") })
		timed(&tTunnel, func() int64 { return tunnelGet(b, px, target, "/big") })
	}
	mbps := func(d time.Duration) float64 { return float64(b.N) * size / 1e6 / d.Seconds() }
	b.ReportMetric(mbps(tDirect), "direct-MB/s")
	b.ReportMetric(mbps(tPlain), "plain-MB/s")
	b.ReportMetric(mbps(tTunnel), "connect-MB/s")
	b.ReportMetric(float64(tDirect)/float64(tPlain), "plain/direct")
	b.ReportMetric(float64(tDirect)/float64(tTunnel), "connect/direct")
}
