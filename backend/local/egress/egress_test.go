package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/wardenhq/warden/calls"
)

// proxied is a running proxy with its records.
type proxied struct {
	url  *url.URL
	ln   net.Listener
	done chan struct{}
	mu   sync.Mutex
	recs []calls.Connection
}

// startProxy serves a proxy with p (and resolver, nil for the default)
// on a loopback listener until the test ends.
func startProxy(t *testing.T, p Policy, resolver *net.Resolver) *proxied {
	t.Helper()
	return startProxyWith(t, p, Options{}, resolver)
}

// startProxyWith is startProxy with the options o (their Record is the
// proxied's own).
func startProxyWith(t *testing.T, p Policy, o Options, resolver *net.Resolver) *proxied {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	px := &proxied{ln: ln, done: make(chan struct{}), url: &url.URL{Scheme: "http", Host: ln.Addr().String()}}
	o.Record = func(c calls.Connection) {
		px.mu.Lock()
		px.recs = append(px.recs, c)
		px.mu.Unlock()
	}
	go func() {
		defer close(px.done)
		newServer(p, o, resolver).serve(ln)
	}()
	t.Cleanup(px.stop)
	return px
}

// stop closes the listener and waits for Serve.
func (px *proxied) stop() {
	px.ln.Close()
	<-px.done
}

// records stops the proxy and returns its records.
func (px *proxied) records() []calls.Connection {
	px.stop()
	px.mu.Lock()
	defer px.mu.Unlock()
	return append([]calls.Connection(nil), px.recs...)
}

// client goes through the proxy, trusting srv's certificate.
func (px *proxied) client(srv *httptest.Server) *http.Client {
	tr := &http.Transport{Proxy: http.ProxyURL(px.url), DisableKeepAlives: true}
	if srv != nil && srv.TLS != nil {
		tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// connect sends CONNECT target through the proxy and returns the
// response and the connection.
func (px *proxied) connect(t *testing.T, target string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", px.url.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return resp, c, br
}

func hostPort(t *testing.T, rawURL string) (string, int) {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	h, p, _ := net.SplitHostPort(u.Host)
	n, _ := strconv.Atoi(p)
	return h, n
}

const grant = "sandbox.network_for rule Bash(npm install:*)"

// TestAllowed: a named host is reached by plain HTTP and through a
// CONNECT tunnel (https), each recorded as allowed by its entry with
// the bytes each way.
func TestAllowed(t *testing.T) {
	body := strings.Repeat("x", 100_000)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	plain := httptest.NewServer(handler)
	defer plain.Close()
	secure := httptest.NewTLSServer(handler)
	defer secure.Close()
	_, port := hostPort(t, secure.URL)
	px := startProxy(t, Policy{Hosts: []string{"127.0.0.1", "[::1]:" + strconv.Itoa(port)}, By: grant}, nil)
	for _, srv := range []*httptest.Server{plain, secure} {
		resp, err := px.client(srv).Get(srv.URL + "/pkg")
		if err != nil {
			t.Fatalf("%s: %v", srv.URL, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(got) != body {
			t.Errorf("%s: %s, %d bytes", srv.URL, resp.Status, len(got))
		}
	}
	recs := px.records()
	if len(recs) != 2 {
		t.Fatalf("records: %v", recs)
	}
	for i, method := range []string{"GET", "CONNECT"} {
		c := recs[i]
		t.Logf("%s", c)
		if !c.Allowed || c.Method != method || c.Host != "127.0.0.1" || !strings.HasPrefix(c.Addr, "127.0.0.1:") ||
			c.By != `host entry "127.0.0.1" (`+grant+`)` || c.Sent == 0 || c.Received < int64(len(body)) || c.Error != "" {
			t.Errorf("record %d: %+v", i, c)
		}
	}
}

// TestRefusedByName: a host no entry names is refused before any dial,
// with a 403 whose body and status text say what would allow it; the
// record says the same. Control: the named host passes.
func TestRefusedByName(t *testing.T) {
	px := startProxy(t, Policy{Hosts: []string{"npm.example.internal"}, By: grant}, nil)
	want := "warden: evil.example:443 is not among the hosts this call may reach (" + grant +
		": hosts npm.example.internal); add it to the hosts of " + grant + " to allow it"
	resp, c, _ := px.connect(t, "evil.example:443")
	c.Close()
	if resp.StatusCode != 403 || resp.Status != "403 "+want {
		t.Errorf("CONNECT: status %q\nwant %q", resp.Status, "403 "+want)
	}
	resp, err := px.client(nil).Get("http://Evil.Example./x")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantPlain := strings.Replace(want, ":443", ":80", 1)
	if resp.StatusCode != 403 || strings.TrimSpace(string(got)) != wantPlain || resp.Status != "403 "+wantPlain {
		t.Errorf("GET: %s: %q", resp.Status, got)
	}
	// The named host passes the name check (and fails to resolve: this
	// machine has no DNS for it), recorded as allowed with its error.
	resp, c, _ = px.connect(t, "NPM.example.internal.:443")
	c.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("named host: %s", resp.Status)
	}
	recs := px.records()
	if len(recs) != 3 {
		t.Fatalf("records: %v", recs)
	}
	if r := recs[0]; r.Allowed || r.By != want || r.Addr != "" || r.Method != "CONNECT" {
		t.Errorf("CONNECT record: %+v", r)
	}
	if r := recs[1]; r.Allowed || r.By != wantPlain || r.Host != "evil.example" || r.Port != 80 {
		t.Errorf("GET record: %+v", r)
	}
	if r := recs[2]; !r.Allowed || r.Host != "npm.example.internal" || r.Error == "" {
		t.Errorf("named host record: %+v", r)
	}
}

// lineServer answers every connection with a line.
func lineServer(t *testing.T, addr string) (net.Listener, int) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "REACHED\n")
			c.Close()
		}
	}()
	return ln, ln.Addr().(*net.TCPAddr).Port
}

// tunnel CONNECTs to target and returns the status and the first line.
func (px *proxied) tunnel(t *testing.T, target string) (int, string) {
	resp, c, br := px.connect(t, target)
	defer c.Close()
	if resp.StatusCode != 200 {
		return resp.StatusCode, resp.Status
	}
	line, _ := br.ReadString('\n')
	return 200, strings.TrimSpace(line)
}

// TestNonPublic: loopback is reached only when an address or range
// entry names it: not by "*", not by a name that resolves to it
// ("localhost", checked at the dial), and the metadata address and
// private ranges no more. Control: with 127.0.0.1 named each passes.
func TestNonPublic(t *testing.T) {
	_, port := lineServer(t, "127.0.0.1:0")
	p := strconv.Itoa(port)
	for _, tc := range []struct {
		hosts  []string
		target string
		ok     bool
		why    string
	}{
		{[]string{"*"}, "127.0.0.1:" + p, false, "is a loopback address, which no host name"},
		{[]string{"*"}, "[::ffff:127.0.0.1]:" + p, false, "is a loopback address"},
		{[]string{"*"}, "localhost:" + p, false, "localhost:" + p + " resolves to 127.0.0.1, a loopback address"},
		{[]string{"localhost:" + p}, "localhost:" + p, false, "resolves to 127.0.0.1, a loopback address"},
		{[]string{"*"}, "169.254.169.254:80", false, "link-local address (cloud metadata"},
		{[]string{"*"}, "10.1.2.3:443", false, "a private address"},
		{[]string{"*"}, "100.64.0.1:443", false, "CGNAT"},
		{[]string{"*"}, "[fd00::1]:443", false, "unique local"},
		{[]string{"*"}, "0.0.0.0:" + p, false, "unspecified"},
		{[]string{"*"}, "[fe80::1%25lo]:" + p, false, "link-local"},
		{[]string{"*"}, "[::127.0.0.1]:" + p, false, "IPv4-compatible"},
		{[]string{"*"}, "[64:ff9b::7f00:1]:" + p, false, "loopback"},
		{[]string{"127.0.0.1"}, "localhost:" + p, false, "is not among the hosts"},
		// Controls.
		{[]string{"127.0.0.1"}, "127.0.0.1:" + p, true, ""},
		{[]string{"127.0.0.1:" + p}, "[::ffff:127.0.0.1]:" + p, true, ""},
		{[]string{"localhost:" + p, "127.0.0.1"}, "localhost:" + p, true, ""},
		{[]string{"LOCALHOST.", "127.0.0.0/8"}, "localhost:" + p, true, ""},
	} {
		px := startProxy(t, Policy{Hosts: tc.hosts, By: "network: true"}, nil)
		code, got := px.tunnel(t, tc.target)
		recs := px.records()
		if tc.ok {
			if code != 200 || got != "REACHED" {
				t.Errorf("%v %s: %d %q", tc.hosts, tc.target, code, got)
			}
		} else if code != 403 || !strings.Contains(got, tc.why) {
			t.Errorf("%v %s: %d %q, want 403 saying %q", tc.hosts, tc.target, code, got, tc.why)
		}
		if len(recs) != 1 || recs[0].Allowed != tc.ok {
			t.Errorf("%v %s: records %v", tc.hosts, tc.target, recs)
		} else {
			t.Logf("%s", recs[0])
		}
	}
	// An entry with another port does not name the listener.
	px := startProxy(t, Policy{Hosts: []string{"127.0.0.1:1"}}, nil)
	if code, got := px.tunnel(t, "127.0.0.1:"+p); code != 403 {
		t.Errorf("other port: %d %q", code, got)
	}
}

// dnsServer answers A queries for every name with addr, on a loopback
// UDP socket.
func dnsServer(t testing.TB, addr [4]byte) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			if q.Type == dnsmessage.TypeA {
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: addr})
			}
			msg, err := b.Finish()
			if err == nil {
				_, _ = pc.WriteTo(msg, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

// TestDialTimeCheck: an allowed name that resolves to a private or
// loopback address passes the name check and is refused by the address
// dialled (the dialer's Control hook), unless that address is named.
// The names resolve through a DNS server of the test's.
func TestDialTimeCheck(t *testing.T) {
	_, port := lineServer(t, "127.0.0.1:0")
	p := strconv.Itoa(port)
	for _, tc := range []struct {
		to    [4]byte
		hosts []string
		ok    bool
		why   string
	}{
		{[4]byte{127, 0, 0, 1}, []string{"registry.test"}, false, "registry.test:" + p + " resolves to 127.0.0.1, a loopback address"},
		{[4]byte{10, 0, 0, 7}, []string{"*.test"}, false, "resolves to 10.0.0.7, a private address"},
		{[4]byte{169, 254, 169, 254}, []string{"*"}, false, "resolves to 169.254.169.254, a link-local address"},
		{[4]byte{127, 0, 0, 1}, []string{"registry.test", "127.0.0.1/32"}, true, ""},
	} {
		dns := dnsServer(t, tc.to)
		res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", dns)
		}}
		px := startProxy(t, Policy{Hosts: tc.hosts}, res)
		code, got := px.tunnel(t, "registry.test:"+p)
		recs := px.records()
		if tc.ok != (code == 200 && got == "REACHED") || !tc.ok && (code != 403 || !strings.Contains(got, tc.why)) {
			t.Errorf("%v -> %v: %d %q, want ok %v (%q)", tc.hosts, tc.to, code, got, tc.ok, tc.why)
		}
		if len(recs) != 1 || recs[0].Allowed != tc.ok || !tc.ok && recs[0].Addr != net.IP(tc.to[:]).String() {
			t.Errorf("%v: records %+v", tc.hosts, recs)
		} else {
			t.Logf("%s", recs[0])
		}
	}
}

// TestTunnelsEndWithListener: closing the listener ends Serve and
// closes the tunnels still open; each is recorded.
func TestTunnelsEndWithListener(t *testing.T) {
	held := make(chan net.Conn, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.WriteString(c, "HELLO\n")
			held <- c // kept open
		}
	}()
	px := startProxy(t, Policy{Hosts: []string{"127.0.0.1"}}, nil)
	resp, c, br := px.connect(t, ln.Addr().String())
	defer c.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	if line, _ := br.ReadString('\n'); line != "HELLO\n" {
		t.Fatalf("read %q", line)
	}
	up := <-held
	defer up.Close()
	done := make(chan []calls.Connection)
	go func() { done <- px.records() }()
	select {
	case recs := <-done:
		if len(recs) != 1 || !recs[0].Allowed || recs[0].Received != 6 {
			t.Errorf("records: %+v", recs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return with a tunnel open")
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := br.Read(make([]byte, 1)); err == nil {
		t.Errorf("client: tunnel still open (%d bytes)", n)
	}
	up.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := up.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("host side: %v, want EOF", err)
	}
}

// TestCompile: entry forms, and byName's matches.
func TestCompile(t *testing.T) {
	h, err := Compile([]string{"Registry.NPMjs.org.", "*.example.org:443", "10.0.0.0/8:8080", "[fd00::1]:443", "192.0.2.9", "*:22"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		port int
		ok   bool
	}{
		{"registry.npmjs.org", 443, true},
		{"REGISTRY.npmjs.org.", 80, true},
		{"x.registry.npmjs.org", 443, false},
		{"a.b.example.org", 443, true},
		{"example.org", 443, false},
		{"a.example.org", 80, false},
		{"badexample.org", 443, false},
		{"10.9.8.7", 8080, true},
		{"10.9.8.7", 80, false},
		{"fd00::1", 443, true},
		{"[fd00::1]", 443, true},
		{"::ffff:192.0.2.9", 1234, true},
		{"anything.example", 22, true},
		{"8.8.8.8", 22, true},
		{"127.0.0.1", 22, false},
	} {
		if _, ref := h.byName(tc.host, tc.port); (ref == nil) != tc.ok {
			t.Errorf("%s:%d: allowed %v, want %v (%v)", tc.host, tc.port, ref == nil, tc.ok, ref)
		}
	}
	bad := []string{"a:b", "*.", "[::1", "10.0.0.0/33", "a*b"}
	_, err = Compile(bad)
	for _, b := range bad {
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(b)) {
			t.Errorf("bad entry %q: %v", b, err)
		}
	}
}

// TestPassThrough: a plain HTTP request and its response pass as they
// are: the client's Accept-Encoding reaches the host and a gzip body
// comes back still compressed.
func TestPassThrough(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			http.Error(w, "no gzip asked: "+r.Header.Get("Accept-Encoding"), 400)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		io.WriteString(w, "\x1f\x8bnot really gzip")
	}))
	defer srv.Close()
	px := startProxy(t, Policy{Hosts: []string{"127.0.0.1"}}, nil)
	c := px.client(nil)
	c.Transport.(*http.Transport).DisableCompression = true
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || string(body) != "\x1f\x8bnot really gzip" {
		t.Errorf("%s %v %q", resp.Status, resp.Header, body)
	}
}
