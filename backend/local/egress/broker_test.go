package egress

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/internal/testhosts"
)

// seen is what a test host received: every header value, URL and body.
type seen struct {
	mu      sync.Mutex
	headers []string
	rest    []string
}

func (s *seen) add(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, vs := range r.Header {
		for _, v := range vs {
			s.headers = append(s.headers, k+": "+v)
		}
	}
	s.rest = append(s.rest, r.Host+" "+r.URL.String()+" "+string(body))
}

// holds reports whether the host received x in a header, and elsewhere.
func (s *seen) holds(x string) (inHeaders, elsewhere bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.headers {
		inHeaders = inHeaders || strings.Contains(h, x)
	}
	for _, r := range s.rest {
		elsewhere = elsewhere || strings.Contains(r, x)
	}
	return
}

func (s *seen) reset() {
	s.mu.Lock()
	s.headers, s.rest = nil, nil
	s.mu.Unlock()
}

// tlsHost serves HTTPS with th's certificate on 127.0.0.1, recording what
// it receives in sn; /redirect redirects to to, /echo echoes the
// Authorization header in a response header.
func tlsHost(t testing.TB, th testhosts.CA, sn *seen, to *string) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sn.add(r)
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, *to, http.StatusFound)
			return
		case "/echo":
			w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		case "/echobody":
			w.Header().Set("Content-Length", strconv.Itoa(len(r.Header.Get("Authorization"))))
			io.WriteString(w, r.Header.Get("Authorization"))
			return
		}
		fmt.Fprintf(w, "REACHED %s %s", r.Host, r.Proto)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{th.Cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// loopbackResolver resolves every name to 127.0.0.1.
func loopbackResolver(t testing.TB) *net.Resolver {
	dns := dnsServer(t, [4]byte{127, 0, 0, 1})
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns)
	}}
}

const testSecret = "ghp_REALVALUE0123456789"

func testBroker(t testing.TB, th testhosts.CA, hosts ...string) *Broker {
	t.Helper()
	sys := filepath.Join(t.TempDir(), "sys.pem")
	if err := os.WriteFile(sys, []byte("# no system roots in this test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	br, err := NewBroker(BrokerConfig{Dir: t.TempDir(), Roots: th.Pool, SystemBundle: sys, Secrets: []Secret{
		{Name: "GH_TOKEN", Value: testSecret, Hosts: hosts, Header: "Authorization"}}})
	if err != nil {
		t.Fatal(err)
	}
	return br
}

// placeholderOf is the placeholder Env gives name.
func placeholderOf(t testing.TB, br *Broker, name string) string {
	for _, kv := range br.Env(nil, false) {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	t.Fatalf("no placeholder for %s", name)
	return ""
}

// TestBrokerTricks: the value of a secret bound to bound.test reaches
// bound.test's request headers and nothing else: not the other host,
// not bound.test by its address or another name that resolves to it,
// not through a tunnel to bound.test whose handshake or Host names
// another host, not a redirect's target, not the URL or the body; HTTP/2
// is not offered, and a header echoed back holds the placeholder again.
func TestBrokerTricks(t *testing.T) {
	th := testhosts.New(t, "bound.test", "other.test", "alias.test")
	var sBound, sOther seen
	otherURL := ""
	bound := tlsHost(t, th, &sBound, &otherURL)
	other := tlsHost(t, th, &sOther, &otherURL)
	_, bp := hostPort(t, bound.URL)
	_, op := hostPort(t, other.URL)
	otherURL = fmt.Sprintf("https://other.test:%d/", op)
	br := testBroker(t, th, "bound.test")
	ph := placeholderOf(t, br, "GH_TOKEN")
	// The process trusts the system's roots and the broker's CA (the
	// bundle); here: the test hosts' CA and the broker's.
	clientRoots := th.Pool.Clone()
	clientRoots.AppendCertsFromPEM(br.CAPEM())
	px := startProxyWith(t, Policy{Hosts: []string{"bound.test", "other.test", "alias.test", "127.0.0.1"}}, Options{Broker: br}, loopbackResolver(t))
	client := func(h2 bool, sni string) *http.Client {
		tr := &http.Transport{Proxy: http.ProxyURL(px.url), DisableKeepAlives: true, ForceAttemptHTTP2: h2,
			TLSClientConfig: &tls.Config{RootCAs: clientRoots, ServerName: sni}}
		return &http.Client{Transport: tr, Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	auth := "Bearer " + ph
	for _, tc := range []struct {
		name, method, url, body, sni, host string
		h2                                 bool
		code                               int    // 0: the request fails
		want                               string // in the answer
		valueAtBound                       bool   // the bound host's headers got the value
	}{
		{name: "bound", url: fmt.Sprintf("https://bound.test:%d/", bp), code: 200, want: "REACHED bound.test", valueAtBound: true},
		{name: "bound, name in capitals and a trailing dot", url: fmt.Sprintf("https://BOUND.test.:%d/", bp), code: 200, valueAtBound: true},
		{name: "other host", url: otherURL, code: 200, want: "REACHED other.test"},
		{name: "address of the bound host", url: fmt.Sprintf("https://127.0.0.1:%d/", bp), code: 200},
		{name: "another name for the bound host", url: fmt.Sprintf("https://alias.test:%d/", bp), code: 200, want: "REACHED alias.test"},
		{name: "handshake names another host", url: fmt.Sprintf("https://bound.test:%d/", bp), sni: "other.test"},
		{name: "Host header names another host", url: fmt.Sprintf("https://bound.test:%d/", bp), host: fmt.Sprintf("other.test:%d", op), code: 403, want: "takes only those for the host itself"},
		{name: "HTTP/2 offered", url: fmt.Sprintf("https://bound.test:%d/", bp), h2: true, code: 200, want: "HTTP/1.1", valueAtBound: true},
		{name: "redirect to another host", url: fmt.Sprintf("https://bound.test:%d/redirect", bp), code: 302, valueAtBound: true},
		{name: "followed by hand", url: otherURL, code: 200},
		{name: "placeholder in the URL and the body", method: "POST", url: fmt.Sprintf("https://bound.test:%d/?token=%s", bp, ph), body: "token=" + ph, code: 200, valueAtBound: true},
		{name: "echoed header", url: fmt.Sprintf("https://bound.test:%d/echo", bp), code: 200, valueAtBound: true},
		{name: "echoed body", url: fmt.Sprintf("https://bound.test:%d/echobody", bp), code: 200, want: "Bearer " + ph, valueAtBound: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sBound.reset()
			sOther.reset()
			method := tc.method
			if method == "" {
				method = "GET"
			}
			req, _ := http.NewRequest(method, tc.url, strings.NewReader(tc.body))
			req.Header.Set("Authorization", auth)
			req.Header.Set("X-Other", "also "+ph)
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := client(tc.h2, tc.sni).Do(req)
			got := ""
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				got = resp.Status + " " + string(b)
				for k, vs := range resp.Header {
					got += " " + k + "=" + strings.Join(vs, ",")
				}
			}
			t.Logf("%s %s: %s %v", method, tc.url, got, err)
			switch {
			case tc.code == 0 && err == nil:
				t.Errorf("answered %q, want a failure", got)
			case tc.code != 0 && (err != nil || resp.StatusCode != tc.code):
				t.Errorf("got %q %v, want %d", got, err, tc.code)
			case !strings.Contains(got, tc.want):
				t.Errorf("got %q, want %q in it", got, tc.want)
			}
			if strings.Contains(got, testSecret) {
				t.Errorf("the value reached the process: %q", got)
			}
			inH, elsewhere := sBound.holds(testSecret)
			if inH != tc.valueAtBound || elsewhere {
				t.Errorf("bound host: value in headers %v (want %v), elsewhere %v: %v %v", inH, tc.valueAtBound, elsewhere, sBound.headers, sBound.rest)
			}
			if inH {
				// Only the configured header.
				for _, h := range sBound.headers {
					if strings.Contains(h, testSecret) && h != "Authorization: Bearer "+testSecret {
						t.Errorf("value in %q", h)
					}
				}
			}
			if a, b := sOther.holds(testSecret); a || b {
				t.Errorf("the other host got the value: %v %v", sOther.headers, sOther.rest)
			}
		})
	}
	for _, c := range px.records() {
		t.Logf("  %s", c)
		if strings.Contains(c.String(), testSecret) {
			t.Errorf("the value is in a record: %s", c)
		}
	}
}

// TestBrokerHeaderModes: with no header named, any header holding the
// placeholder gets the value; with a format the header becomes it; a
// Basic credential holding the placeholder is decoded and encoded
// again.
func TestBrokerHeaderModes(t *testing.T) {
	mk := func(header, format string) brokered {
		return brokered{Secret: Secret{Name: "T", Value: "V", Header: header, Format: format}, placeholder: "PH",
			hosts: []binding{{name: "h"}}}
	}
	for _, tc := range []struct {
		s         brokered
		in, out   string
		name, got string
	}{
		{mk("", ""), "token PH", "token V", "X-Any", ""},
		{mk("Authorization", "Bearer %s"), "token PH", "Bearer V", "Authorization", ""},
		{mk("Authorization", ""), "Basic eC1hY2Nlc3MtdG9rZW46UEg=", "Basic eC1hY2Nlc3MtdG9rZW46Vg==", "Authorization", ""}, // x-access-token:PH -> :V
		{mk("Authorization", ""), "token PH", "token PH", "X-Other", ""},
	} {
		b := &Broker{secrets: []brokered{tc.s}}
		h := http.Header{tc.name: {tc.in}}
		b.apply(h, "h", 443)
		if got := h.Get(tc.name); got != tc.out {
			t.Errorf("%s %q: got %q, want %q", tc.name, tc.in, got, tc.out)
		}
		h = http.Header{tc.name: {tc.in}}
		b.apply(h, "other", 443)
		if got := h.Get(tc.name); got != tc.in {
			t.Errorf("unbound host: %q became %q", tc.in, got)
		}
	}
}

// TestBrokerConfig: a secret bound to an address, a pattern or "*", with
// a format without %s, or without a value is refused.
func TestBrokerConfig(t *testing.T) {
	for _, s := range []Secret{
		{Name: "A", Value: "v", Hosts: []string{"10.0.0.1"}},
		{Name: "A", Value: "v", Hosts: []string{"*.github.com"}},
		{Name: "A", Value: "v", Hosts: []string{"*"}},
		{Name: "A", Value: "v", Hosts: []string{"h"}, Header: "Authorization", Format: "Bearer"},
		{Name: "A", Hosts: []string{"h"}},
		{Name: "A-B", Value: "v", Hosts: []string{"h"}},
	} {
		if _, err := NewBroker(BrokerConfig{Dir: t.TempDir(), Secrets: []Secret{s}}); err == nil {
			t.Errorf("%+v accepted", s.Hosts)
		} else if strings.Contains(err.Error(), "v\"") {
			t.Errorf("the value is in the error: %v", err)
		}
	}
	if s := fmt.Sprintf("%v %+v %#v", Secret{Name: "A", Value: "SECRETV"}, Secret{Name: "A", Value: "SECRETV"}, Secret{Name: "A", Value: "SECRETV"}); strings.Contains(s, "SECRETV") {
		t.Errorf("printed: %s", s)
	}
}

// TestHTTPRules: a rule holding a host to GET and HEAD under /repos/**
// lets those through, by plain HTTP and through a terminated tunnel,
// and refuses a POST, another path and a path with dot segments with a
// 403 naming the rule; each is recorded with its method and path. A
// host no rule names is not held. Control: without the rule the POST
// passes.
func TestHTTPRules(t *testing.T) {
	th := testhosts.New(t, "api.test", "free.test")
	var sn seen
	to := ""
	tlsSrv := tlsHost(t, th, &sn, &to)
	_, tp := hostPort(t, tlsSrv.URL)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "REACHED plain") }))
	t.Cleanup(plain.Close)
	_, pp := hostPort(t, plain.URL)
	br := testBroker(t, th, "nothing.test")
	roots := th.Pool.Clone()
	roots.AppendCertsFromPEM(br.CAPEM())
	const by = "sandbox.network_for rule Bash(curl:*)"
	rule := calls.HTTPRule{Hosts: []string{"api.test"}, Methods: []string{"GET", "HEAD"}, Paths: []string{"/repos/**"}, By: by}
	for _, withRule := range []bool{true, false} {
		p := Policy{Hosts: []string{"api.test", "free.test", "127.0.0.1"}, By: by}
		if withRule {
			p.HTTP = []calls.HTTPRule{rule}
		}
		px := startProxyWith(t, p, Options{Broker: br}, loopbackResolver(t))
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(px.url), DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{RootCAs: roots}}}
		for _, tc := range []struct {
			method, url string
			ok          bool // with the rule
		}{
			{"GET", fmt.Sprintf("https://api.test:%d/repos/a/b", tp), true},
			{"HEAD", fmt.Sprintf("https://api.test:%d/repos/a", tp), true},
			{"POST", fmt.Sprintf("https://api.test:%d/repos/a/b", tp), false},
			{"GET", fmt.Sprintf("https://api.test:%d/admin", tp), false},
			{"GET", fmt.Sprintf("https://api.test:%d/repos/../admin", tp), false},
			{"GET", fmt.Sprintf("http://api.test:%d/repos/x", pp), true},
			{"DELETE", fmt.Sprintf("http://api.test:%d/repos/x", pp), false},
			{"POST", fmt.Sprintf("https://free.test:%d/anything", tp), true},
		} {
			req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader("x"))
			if strings.Contains(tc.url, "..") {
				req.URL.Opaque = "//" + req.URL.Host + "/repos/../admin" // sent as is
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.method, tc.url, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := 200
			if withRule && !tc.ok {
				want = 403
			}
			if resp.StatusCode != want {
				t.Errorf("rule %v: %s %s: %s %s, want %d", withRule, tc.method, tc.url, resp.Status, body, want)
			}
			if want == 403 && tc.method != "HEAD" && !strings.Contains(string(body), by) && !strings.Contains(string(body), "dot segments") {
				t.Errorf("%s %s: the refusal does not name the rule: %s", tc.method, tc.url, body)
			}
			if want == 403 {
				t.Logf("%s %s: %s", tc.method, tc.url, strings.TrimSpace(string(body)))
			}
		}
		refused := 0
		for _, r := range px.records() {
			if !r.Allowed {
				refused++
				if r.Path == "" || r.Method == "CONNECT" {
					t.Errorf("refusal recorded without its method and path: %s", r)
				}
			}
		}
		if want := map[bool]int{true: 4, false: 0}[withRule]; refused != want {
			t.Errorf("rule %v: %d refusals recorded, want %d", withRule, refused, want)
		}
	}
}

// TestScrubReader: a value cut across reads of any size is replaced.
func TestScrubReader(t *testing.T) {
	b := &Broker{secrets: []brokered{{Secret: Secret{Value: "SECRET"}, placeholder: "warden-ph"}}}
	in := "aSECRETbSECRETSECRETc" + strings.Repeat("x", 100) + "SECRET"
	for _, n := range []int{1, 2, 3, 5, 7, 64} {
		r := b.scrubBody(io.NopCloser(iotest.OneByteReader(strings.NewReader(in))))
		var out strings.Builder
		buf := make([]byte, n)
		for {
			k, err := r.Read(buf)
			out.Write(buf[:k])
			if err != nil {
				break
			}
		}
		if want := strings.ReplaceAll(in, "SECRET", "warden-ph"); out.String() != want {
			t.Errorf("reads of %d: %q", n, out.String())
		}
	}
}

// TestBrokerPlainHTTP: over plain HTTP the placeholder reaches even the
// bound host unchanged (the value only ever goes over TLS), whether the
// request comes as an absolute URI or through a CONNECT tunnel.
func TestBrokerPlainHTTP(t *testing.T) {
	th := testhosts.New(t, "bound.test")
	var sn seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sn.add(r); fmt.Fprint(w, "REACHED") }))
	t.Cleanup(srv.Close)
	_, port := hostPort(t, srv.URL)
	br := testBroker(t, th, "bound.test")
	ph := placeholderOf(t, br, "GH_TOKEN")
	px := startProxyWith(t, Policy{Hosts: []string{"bound.test", "127.0.0.1"}}, Options{Broker: br}, loopbackResolver(t))
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://bound.test:%d/", port), nil)
	req.Header.Set("Authorization", "Bearer "+ph)
	resp, err := px.client(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	inH, _ := sn.holds(testSecret)
	phH, _ := sn.holds(ph)
	if resp.StatusCode != 200 || inH || !phH {
		t.Errorf("plain HTTP: %s, value %v, placeholder %v: %v", resp.Status, inH, phH, sn.headers)
	}
}
