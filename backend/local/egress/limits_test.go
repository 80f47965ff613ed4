package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/calls"
)

// overs collects what Options.Over hears.
type overs struct {
	mu  sync.Mutex
	got []error
}

func (o *overs) over(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, err)
}

func (o *overs) list() []error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]error(nil), o.got...)
}

// served is a server of the test's, on a loopback listener.
type served struct {
	s    *server
	addr string
	ln   net.Listener
	done chan struct{}
	recs *Records
}

// serveWith serves p with o (its Record and Over the test's) until the
// test ends.
func serveWith(t *testing.T, p Policy, o Options, ov *overs) *served {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sv := &served{ln: ln, addr: ln.Addr().String(), done: make(chan struct{}), recs: &Records{Max: o.Limits.Records}}
	o.Record = sv.recs.Record
	if ov != nil {
		o.Over = ov.over
	}
	sv.s = newServer(p, o, nil)
	go func() { defer close(sv.done); sv.s.serve(ln) }()
	t.Cleanup(sv.stop)
	return sv
}

func (sv *served) stop() {
	sv.ln.Close()
	<-sv.done
}

// dial opens a connection to the proxy that sends nothing.
func (sv *served) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", sv.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedBy says the proxy closed c within d: a read returns EOF (or a
// reset) rather than timing out.
func closedBy(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// serverFDs counts this process's descriptors that are the server side
// of a connection to addr: sockets whose local address is addr, other
// than its listener. Counting only these keeps descriptors that an
// earlier test's idle clients close meanwhile out of the figure.
func serverFDs(t *testing.T, addr string) int {
	t.Helper()
	_, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatal(err)
	}
	// /proc/net/tcp: "sl local_address rem_address st ... inode", the
	// addresses as hex IP:port; state 0A is LISTEN.
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] == "0A" {
			continue
		}
		_, lp, ok := strings.Cut(f[1], ":")
		if n, err := strconv.ParseUint(lp, 16, 16); ok && err == nil && int(n) == port {
			inodes["socket:["+f[9]+"]"] = true
		}
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && inodes[l] {
			n++
		}
	}
	return n
}

// waitFor polls cond for up to 5s.
func waitFor(cond func() bool) bool {
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestIdleClosed: a connection that sends no request is closed at the
// header timeout, and a kept-alive one at the idle timeout, each
// freeing its descriptor. Control: with long timeouts both are still
// open after the same wait.
func TestIdleClosed(t *testing.T) {
	_, port := lineServer(t, "127.0.0.1:0")
	for _, short := range []bool{true, false} {
		lim := Limits{HeaderTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}
		if !short {
			lim = Limits{HeaderTimeout: time.Minute, IdleTimeout: time.Minute}
		}
		sv := serveWith(t, Policy{Hosts: []string{"127.0.0.1"}}, Options{Limits: lim}, nil)
		idle := sv.dial(t)
		// A kept-alive connection: one plain request answered, then idle.
		kept := sv.dial(t)
		fmt.Fprintf(kept, "GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", port, port)
		br := bufio.NewReader(kept)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		gotIdle, gotKept := closedBy(idle, 2*time.Second), closedBy(kept, 2*time.Second)
		t.Logf("short timeouts %v: idle closed %v, kept-alive closed %v (response %s)", short, gotIdle, gotKept, resp.Status)
		if gotIdle != short || gotKept != short {
			t.Errorf("short timeouts %v: the idle connection closed %v, the kept-alive one %v", short, gotIdle, gotKept)
		}
		if short && !waitFor(func() bool { return sv.s.conns.Load() == 0 }) {
			t.Errorf("%d connections still counted after both closed", sv.s.conns.Load())
		}
	}
}

// TestConnsBound: the call's idle connections past Limits.Conns end it
// (Over names "connections") and are closed at once, and its
// descriptors in the worker stay within the bound. Control: with the
// bound raised the same flood holds a descriptor per connection and
// ends nothing.
func TestConnsBound(t *testing.T) {
	const flood = 60
	for _, bound := range []int{8, 1000} {
		ov := &overs{}
		sv := serveWith(t, Policy{Hosts: []string{"example.test"}}, Options{Limits: Limits{Conns: bound, HeaderTimeout: time.Minute}}, ov)
		var conns []net.Conn
		for range flood {
			conns = append(conns, sv.dial(t))
		}
		waitFor(func() bool {
			return sv.s.conns.Load() >= int64(min(bound, flood)) && (bound > flood || len(ov.list()) > 0)
		})
		time.Sleep(100 * time.Millisecond) // the accept loop takes the rest
		held := serverFDs(t, sv.addr)
		closed := 0
		for _, c := range conns {
			if closedBy(c, 50*time.Millisecond) {
				closed++
			}
		}
		got := ov.list()
		t.Logf("bound %d: %d connections, the proxy holds %d descriptors, %d closed at once, over: %v", bound, flood, held, closed, got)
		if bound < flood {
			var o *Over
			if len(got) != 1 || !errors.As(got[0], &o) || o.Bound != "connections" || !strings.Contains(got[0].Error(), "backend.local.network.connections") {
				t.Errorf("bound %d: Over heard %v, want the connections bound once", bound, got)
			}
			if closed < flood-bound || held > bound+2 {
				t.Errorf("bound %d: %d closed, %d descriptors held", bound, closed, held)
			}
			// The call is over: no connection is admitted any more.
			if c := sv.dial(t); !closedBy(c, time.Second) {
				t.Errorf("a connection after the call passed its bound was admitted")
			}
		} else if len(got) != 0 || closed != 0 || held < flood {
			t.Errorf("control: over %v, %d closed, %d descriptors held (want %d)", got, closed, held, flood)
		}
		for _, c := range conns {
			c.Close()
		}
		sv.stop()
	}
}

// TestSharedBound: the connections of two calls together stay within
// the shared bound: past it a connection is closed at once, neither call
// is ended for it, and what closes is given back. Control: a larger
// shared bound admits them all.
func TestSharedBound(t *testing.T) {
	for _, total := range []int{5, 100} {
		sh := NewShared(total, 0)
		ov := &overs{}
		a := serveWith(t, Policy{Hosts: []string{"*"}}, Options{Shared: sh, Limits: Limits{HeaderTimeout: time.Minute}}, ov)
		b := serveWith(t, Policy{Hosts: []string{"*"}}, Options{Shared: sh, Limits: Limits{HeaderTimeout: time.Minute}}, ov)
		var conns []net.Conn
		for range 4 {
			conns = append(conns, a.dial(t), b.dial(t))
		}
		waitFor(func() bool { n, _ := sh.Open(); return n >= min(total, 8) })
		time.Sleep(100 * time.Millisecond)
		open, _ := sh.Open()
		closed := 0
		for _, c := range conns {
			if closedBy(c, 50*time.Millisecond) {
				closed++
			}
		}
		t.Logf("shared bound %d: 8 connections, %d open, %d closed at once, refused %d", total, open, closed, sh.refusedConns.Load())
		if want := min(total, 8); open != want || closed != 8-want || len(ov.list()) != 0 {
			t.Errorf("shared bound %d: %d open, %d closed, over %v", total, open, closed, ov.list())
		}
		for _, c := range conns {
			c.Close()
		}
		if !waitFor(func() bool { n, _ := sh.Open(); return n == 0 }) {
			n, _ := sh.Open()
			t.Errorf("shared bound %d: %d still charged after every connection closed", total, n)
		}
		a.stop()
		b.stop()
	}
}

// refuse CONNECTs to host:port through the proxy at addr and returns
// the status line.
func refuse(t *testing.T, addr, host string, port int) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	target := net.JoinHostPort(host, strconv.Itoa(port))
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		return "write: " + err.Error()
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	return strings.TrimSpace(line)
}

// TestRefusalsBound: the refusal past Limits.Refusals ends the call
// (Over names "refusals"). Control: with the bound off the same refusals
// end nothing.
func TestRefusalsBound(t *testing.T) {
	for _, bound := range []int{20, -1} {
		ov := &overs{}
		sv := serveWith(t, Policy{Hosts: []string{"allowed.test"}}, Options{Limits: Limits{Refusals: bound}}, ov)
		for i := range 30 {
			refuse(t, sv.addr, fmt.Sprintf("h%d.test", i), 443)
		}
		got := ov.list()
		t.Logf("refusals bound %d: 30 refused, over: %v", bound, got)
		var o *Over
		if bound > 0 && (len(got) != 1 || !errors.As(got[0], &o) || o.Bound != "refusals") {
			t.Errorf("bound %d: Over heard %v", bound, got)
		}
		if bound < 0 && len(got) != 0 {
			t.Errorf("control: Over heard %v", got)
		}
	}
}

// TestLongHost: a request whose host is 900 KB is answered 431 at once
// and never recorded; a host longer than a name may be (but within the
// header bound) is refused before any lookup and recorded by its head.
// Control: a host of 253 bytes is an ordinary refusal, recorded whole.
func TestLongHost(t *testing.T) {
	sv := serveWith(t, Policy{Hosts: []string{"allowed.test"}}, Options{}, nil)
	huge := refuse(t, sv.addr, strings.Repeat("a", 900<<10)+".test", 443)
	long := refuse(t, sv.addr, strings.Repeat("b", 2000)+".test", 443)
	ok := strings.Repeat("c", 248) + ".test"
	ctl := refuse(t, sv.addr, ok, 443)
	sv.stop()
	recs, _ := sv.recs.List()
	t.Logf("900 KB host: %.80s; 2005-byte host: %.120s; 253-byte host: %.60s…", huge, long, ctl)
	for _, r := range recs {
		t.Logf("record: host %d bytes, by %d bytes: %.100s", len(r.Host), len(r.By), r.Host)
	}
	if !strings.Contains(huge, "431") && !strings.HasPrefix(huge, "write:") && !strings.HasPrefix(huge, "read:") {
		t.Errorf("900 KB host: %q, want 431 or the connection closed", huge)
	}
	if !strings.Contains(long, "403") || !strings.Contains(long, "longer than a host name") {
		t.Errorf("2005-byte host: %q", long)
	}
	if !strings.Contains(ctl, "403") || !strings.Contains(ctl, "not among the hosts") {
		t.Errorf("253-byte host: %q", ctl)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2 (the over-long host and the control)", len(recs))
	}
	if r := recs[0]; len(r.Host) > keptHost+32 || len(r.By) > 600 || !strings.Contains(r.Host, "(2005 bytes)") {
		t.Errorf("over-long host recorded as %q (%d bytes), by %d bytes", r.Host, len(r.Host), len(r.By))
	}
	if recs[1].Host != ok {
		t.Errorf("control recorded as %q", recs[1].Host)
	}
}

// TestRecordsSummary: past Records.Max the refusals are counted by host,
// not kept, and summarised. Control: a bound above the count keeps every
// one and summarises nothing.
func TestRecordsSummary(t *testing.T) {
	for _, max := range []int{10, 20000} {
		r := &Records{Max: max}
		for i := range 12345 + 10 {
			r.Record(calls.Connection{Host: fmt.Sprintf("h%d.test", i%3), Port: 443, By: "refused"})
		}
		list, dropped := r.List()
		sum := r.Summary()
		t.Logf("max %d: kept %d, dropped %d, summary %q", max, len(list), dropped, sum)
		if max == 10 && (len(list) != 10 || dropped != 12345 || sum != "… and 12,345 more refusals to 3 hosts") {
			t.Errorf("max %d: kept %d, dropped %d, %q", max, len(list), dropped, sum)
		}
		if max == 20000 && (len(list) != 12355 || dropped != 0 || sum != "") {
			t.Errorf("max %d: kept %d, %q", max, len(list), sum)
		}
	}
	r := &Records{Max: 100}
	for i := range 50 {
		r.Record(calls.Connection{Host: fmt.Sprintf("h%d.test", i)})
	}
	if list, _ := r.List(); len(list) != 50 || r.Summary() != "" {
		t.Errorf("under the bound: kept %d, summary %q", len(list), r.Summary())
	}
}

// TestBufferBound: the copy buffers of a call's open tunnels stay within
// Limits.Buffer (the tunnels past it copy through small ones and still
// work). Control: a larger bound gives each tunnel its two large
// buffers.
func TestBufferBound(t *testing.T) {
	// An echo server: each tunnel holds its buffers while it waits.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
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
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	const tunnels = 6
	for _, bound := range []int64{2 * copyBuffer, 64 << 20} {
		sv := serveWith(t, Policy{Hosts: []string{"127.0.0.1"}}, Options{Limits: Limits{Buffer: bound}}, nil)
		px := &proxied{url: sv.urlOf()}
		var echoed int
		for range tunnels {
			resp, c, br := px.connect(t, ln.Addr().String())
			t.Cleanup(func() { c.Close() })
			if resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %s", resp.Status)
			}
			fmt.Fprintln(c, "ping")
			if line, _ := br.ReadString('\n'); line == "ping\n" {
				echoed++
			}
		}
		held := sv.s.bufBytes.Load()
		t.Logf("buffer bound %d: %d tunnels echoed, %d bytes of copy buffers held", bound, echoed, held)
		if echoed != tunnels {
			t.Errorf("bound %d: %d of %d tunnels echoed", bound, echoed, tunnels)
		}
		if bound < 64<<20 && held > bound || bound == 64<<20 && held != 2*tunnels*copyBuffer {
			t.Errorf("bound %d: %d bytes held", bound, held)
		}
		sv.stop()
	}
}

func (sv *served) urlOf() *url.URL { return &url.URL{Scheme: "http", Host: sv.addr} }

// addLocal gives this machine the addresses cidrs on an interface of
// its own (root), removed when the test ends.
func addLocal(t *testing.T, name string, cidrs ...string) {
	t.Helper()
	run := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	_ = run("link", "del", name) // left by a killed run
	// A veth pair (this kernel has no dummy interfaces): name holds the
	// addresses, its peer only carries the link.
	if err := run("link", "add", name, "type", "veth", "peer", "name", name+"p"); err != nil {
		t.Fatalf("an interface for a host address (needs root and iproute2): %v", err)
	}
	t.Cleanup(func() { _ = run("link", "del", name) })
	if err := run("link", "set", name+"p", "up"); err != nil {
		t.Fatal(err)
	}
	for _, c := range cidrs {
		args := []string{"addr", "add", c, "dev", name}
		if strings.Contains(c, ":") {
			args = append(args, "nodad")
		}
		if err := run(args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := run("link", "set", name, "up"); err != nil {
		t.Fatal(err)
	}
	// The kernel installs an address's local route once it has seen the
	// link's carrier (the veth peer's), which under load can come a while
	// after "up": wait until each address takes a connection.
	for _, c := range cidrs {
		waitReachable(t, strings.Split(c, "/")[0])
	}
}

// waitReachable waits (up to 10 s) until a listener on ip takes a
// connection made to it.
func waitReachable(t *testing.T, ip string) {
	t.Helper()
	var last error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			last = err
			continue
		}
		c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		ln.Close()
		if err == nil {
			c.Close()
			return
		}
		last = err
	}
	t.Fatalf("%s never took a connection: %v", ip, last)
}

// TestHostAddresses: an address of the machine itself that is public
// (on an interface of the test's: 192.88.99.2, once the 6to4 relay anycast, and
// its 6to4 IPv6 form) is refused with "*", by literal and by a name
// that resolves to it (at the dial), for a service bound to all
// interfaces; an address entry naming it lets it through. Control: with
// HostAddresses on (the layer off) "*" reaches it.
func TestHostAddresses(t *testing.T) {
	addLocal(t, "wdnegr0", "192.88.99.2/32", "2002:c058:6302::1/128")
	_, port := lineServer(t, ":0") // every interface, v4 and v6
	p := strconv.Itoa(port)
	dns := dnsServer(t, [4]byte{192, 88, 99, 2})
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns)
	}}
	for _, tc := range []struct {
		hosts  []string
		layer  bool
		target string
		ok     bool
	}{
		{[]string{"*"}, true, "192.88.99.2:" + p, false},
		{[]string{"*"}, true, "[2002:c058:6302::1]:" + p, false},
		{[]string{"*"}, true, "self.test:" + p, false},
		{[]string{"*", "192.88.99.2"}, true, "192.88.99.2:" + p, true},
		{[]string{"*"}, false, "192.88.99.2:" + p, true},
		{[]string{"*"}, false, "[2002:c058:6302::1]:" + p, true},
		{[]string{"*"}, false, "self.test:" + p, true},
	} {
		px := startProxyWith(t, Policy{Hosts: tc.hosts}, Options{HostAddresses: !tc.layer}, res)
		code, got := px.tunnel(t, tc.target)
		recs := px.records()
		t.Logf("hosts %v, layer on %v, %s: %d %.160s", tc.hosts, tc.layer, tc.target, code, got)
		if tc.ok != (code == 200 && got == "REACHED") || !tc.ok && (code != 403 || !strings.Contains(got, "an address of this machine itself")) {
			t.Errorf("hosts %v, layer on %v, %s: %d %q, want ok %v", tc.hosts, tc.layer, tc.target, code, got, tc.ok)
		}
		if len(recs) != 1 || recs[0].Allowed != tc.ok {
			t.Errorf("records %+v", recs)
		}
	}
}
