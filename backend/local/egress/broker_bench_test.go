package egress

import (
	"crypto/tls"
	"fmt"
	"github.com/wardenhq/warden/internal/testhosts"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkBrokerLatency: the proxy's added latency per HTTPS request
// (a small GET on a new connection each time), interleaved in the same
// run: direct, through a CONNECT tunnel to a host no secret is bound to
// (a plain tunnel), and to a host a secret is bound to (TLS terminated
// with the broker's CA, the placeholder replaced, and a TLS connection
// of the proxy's own to the host). Every name resolves to 127.0.0.1
// through the test's DNS server, for the proxy and the direct client
// alike. It reports each one's median and the medians' differences to
// direct.
func BenchmarkBrokerLatency(b *testing.B) {
	th := testhosts.New(b, "bound.test", "plain.test")
	var sn seen
	to := ""
	srv := tlsHost(b, th, &sn, &to)
	_, ps, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	br := testBroker(b, th, "bound.test")
	ph := placeholderOf(b, br, "GH_TOKEN")
	roots := th.Pool.Clone()
	roots.AppendCertsFromPEM(br.CAPEM())
	res := loopbackResolver(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		newServer(Policy{Hosts: []string{"bound.test", "plain.test", "127.0.0.1"}}, Options{Broker: br}, res).serve(ln)
	}()
	b.Cleanup(func() { ln.Close(); <-done })
	pxURL := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	direct := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: roots},
		DialContext: (&net.Dialer{Resolver: res}).DialContext}}
	proxied := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pxURL), DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: roots}}}
	do := func(c *http.Client, host string) time.Duration {
		req, _ := http.NewRequest("GET", fmt.Sprintf("https://%s:%s/", host, ps), nil)
		req.Header.Set("Authorization", "Bearer "+ph)
		t0 := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if resp.StatusCode != 200 {
			b.Fatalf("%s: %s", host, resp.Status)
		}
		return d
	}
	var tDirect, tTunnel, tBroker []time.Duration
	for b.Loop() {
		tDirect = append(tDirect, do(direct, "bound.test"))
		tTunnel = append(tTunnel, do(proxied, "plain.test"))
		tBroker = append(tBroker, do(proxied, "bound.test"))
		sn.reset()
	}
	med := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds())
	}
	d, tu, m := med(tDirect), med(tTunnel), med(tBroker)
	b.ReportMetric(d, "direct-µs")
	b.ReportMetric(tu, "tunnel-µs")
	b.ReportMetric(m, "broker-µs")
	b.ReportMetric(tu-d, "tunnel-added-µs")
	b.ReportMetric(m-d, "broker-added-µs")
}
