// Package egress is the proxy through which a sandboxed call reaches
// the network: the call's network namespace has only a loopback
// interface, and the worker serves this proxy on the listener made in
// it (127.0.0.1:3128). It speaks HTTP CONNECT (tunnels, for https and
// anything else over TCP) and plain HTTP with absolute-URI requests,
// both through github.com/elazarl/goproxy (no SOCKS: no maintained
// SOCKS5 server module is served here).
//
// A connection is let through when a host entry of the call's policy
// names the host (checked before dialling), and then only to the
// addresses the name resolves to that are public, or that an address
// or range entry names: the dialled address is checked in the dialer's
// Control hook, after resolution, so a name that resolves to loopback,
// a private range or the cloud metadata address never reaches it
// unless the policy names that address. The machine's own addresses
// (every interface's, looked up at each dial) are refused the same way,
// so that a service bound to all interfaces is not reached through the
// machine's public address. Every connection, allowed or refused, is
// recorded once it ends (calls.Connection).
//
// Two kinds of host are seen into rather than tunnelled (mitm.go): the
// hosts a brokered secret is bound to by name (Broker: the process holds
// a placeholder, and the proxy puts the value in the headers of the
// requests it sends on over TLS to that host, and nowhere else), and
// the hosts whose requests a rule holds to methods and paths
// (Policy.HTTP, rules.go). For those the proxy terminates the tunnel's
// TLS with the broker's CA, which only sandboxed processes trust, and
// sends each request on over TLS of its own. Every other tunnel stays a
// plain one.
//
// What the proxy spends on a call is charged to it (Limits): the
// connections it holds open (each a worker descriptor), the time an idle
// one is kept, the size of a request's header and host, the bytes of
// its copy buffers and the records of its connections; a call that
// passes a bound is ended (Options.Over), never the worker. Shared
// bounds the same across the calls of a worker.
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
)

// Policy is what one call may reach.
type Policy struct {
	// Hosts are the host entries (calls.Sandbox.Hosts, Compile); none
	// lets nothing through ("*" must be said).
	Hosts []string
	// By says what granted the network ("sandbox.network_for rule
	// Bash(npm install:*)"), for the records and the refusals.
	By string
	// HTTP hold the requests to the hosts they name to methods and
	// paths (calls.Sandbox.HTTP): the proxy sees plain HTTP requests, and
	// terminates TLS for those hosts (Options.Broker's CA) to see the
	// others; without a broker a CONNECT to them is refused.
	HTTP []calls.HTTPRule
}

// Observer sees every connection once it ended, as recorded (metrics).
type Observer interface {
	Connection(calls.Connection)
}

// dialTimeout bounds one dial.
const dialTimeout = 30 * time.Second

// Options is how Serve serves one call beyond its policy. The zero value
// serves with DefaultLimits, no bound across calls, records nothing and
// refuses the machine's own addresses.
type Options struct {
	// Limits bound what the proxy spends on the call.
	Limits Limits
	// Shared, when not nil, bounds the connections and buffers of every
	// call that names it.
	Shared *Shared
	// Record (when not nil) is called once for each connection, allowed
	// or refused, as it ends, never concurrently.
	Record func(calls.Connection)
	// Over (when not nil) is called once, when the call passes one of
	// its Limits, with the *Over saying which: the caller ends the call.
	// The proxy admits no connection of the call after it.
	Over func(error)
	// HostAddresses lets the call reach the machine's own addresses
	// like any public address (backend.local.sandbox_off:
	// [host_addresses]): a service bound to all interfaces is then
	// reachable. The zero value refuses them unless an address or range
	// entry names them.
	HostAddresses bool
	// Broker, when not nil, holds the brokered secrets: a CONNECT to a
	// host one of them is bound to (by name) is terminated with the
	// broker's CA and its requests sent on with the secrets' values in
	// their headers (mitm). Every other tunnel stays a plain one.
	Broker *Broker
}

// Serve serves the egress proxy of one call on ln with the policy p
// and the options o until ln is closed, and returns once every
// connection it let through is closed too (it closes them): a call's
// connections do not outlive it. Host entries that do not parse allow
// nothing.
func Serve(ln net.Listener, p Policy, o Options) {
	newServer(p, o, nil).serve(ln)
}

// server is the proxy of one call.
type server struct {
	p        Policy
	o        Options
	lim      Limits
	hosts    Hosts
	http     []httpRule
	resolver *net.Resolver // nil: the default
	gp       *goproxy.ProxyHttpServer

	// conns are the client connections open; refusals the connections
	// refused; bufBytes the bytes of the copy buffers in use. over is set
	// once the call passed a bound.
	conns, refusals, bufBytes atomic.Int64
	over                      atomic.Bool
	overOnce                  sync.Once

	// ctx ends when the server closes: dials in progress stop.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	clients  map[net.Conn]struct{}
	upstream map[*upConn]struct{}
	// work counts the handlers running and the tunnels open.
	work  sync.WaitGroup
	recMu sync.Mutex
	// buffers are the tunnels' copy buffers.
	buffers sync.Pool
}

func newServer(p Policy, o Options, resolver *net.Resolver) *server {
	hosts, _ := Compile(p.Hosts) // a bad entry allows nothing
	s := &server{p: p, o: o, lim: o.Limits.withDefaults(), hosts: hosts, http: compileHTTP(p.HTTP), resolver: resolver,
		clients: map[net.Conn]struct{}{}, upstream: map[*upConn]struct{}{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = log.New(io.Discard, "", 0)
	// Never the worker's own proxy settings, and no dial but ours.
	gp.Tr = &http.Transport{Proxy: nil, DialContext: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("warden: egress: no dialer for this request")
	}}
	// Requests and responses pass as they are (no gzip added, none
	// removed).
	gp.KeepAcceptEncoding = true
	gp.ConnectDial = nil
	gp.ConnectDialWithReq = s.connectDial
	gp.ConnectionErrHandler = s.connectError
	gp.NonproxyHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "warden egress proxy: send CONNECT or absolute-URI requests (HTTP_PROXY)", http.StatusBadRequest)
	})
	gp.OnRequest().DoFunc(func(r *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
		if a := attemptOf(r.Context()); a != nil {
			ctx.RoundTripper = goproxy.RoundTripperFunc(func(req *http.Request, _ *goproxy.ProxyCtx) (*http.Response, error) {
				return a.roundTrip(req)
			})
		}
		return r, nil
	})
	s.gp = gp
	return s
}

// serve serves ln until it is closed, then closes every connection and
// waits for the records.
func (s *server) serve(ln net.Listener) {
	srv := &http.Server{Handler: s, ConnState: s.track, MaxHeaderBytes: maxHeaderBytes,
		ReadHeaderTimeout: max(s.lim.HeaderTimeout, 0), IdleTimeout: max(s.lim.IdleTimeout, 0),
		ErrorLog: log.New(io.Discard, "", 0)}
	_ = srv.Serve(boundListener{Listener: ln, s: s})
	s.mu.Lock()
	s.closed = true
	clients, ups := s.clients, s.upstream
	s.clients, s.upstream = map[net.Conn]struct{}{}, map[*upConn]struct{}{}
	s.mu.Unlock()
	s.cancel()
	_ = srv.Close()
	for c := range clients {
		_ = c.Close()
	}
	for u := range ups {
		_ = u.Close()
	}
	s.work.Wait()
}

// track keeps the client connections, hijacked ones (tunnels) included,
// so that serve can close them.
func (s *server) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case http.StateNew:
		if s.closed {
			_ = c.Close()
			return
		}
		s.clients[c] = struct{}{}
	case http.StateClosed:
		delete(s.clients, c)
	}
}

// begin counts one piece of work, unless the server is closing.
func (s *server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.work.Add(1)
	return true
}

// emit records c.
func (s *server) emit(c calls.Connection) {
	if s.o.Record == nil {
		return
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.o.Record(c)
}

// attemptKey carries a request's attempt to the dialer.
type attemptKey struct{}

func attemptOf(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

// attempt is one connection asked for, recorded once when it ends.
type attempt struct {
	s      *server
	tunnel bool
	// mu guards c until recorded.
	mu         sync.Mutex
	c          calls.Connection
	dialled    bool
	sent, recv atomic.Int64
	once       sync.Once
}

// refused marks the attempt refused by ref, and counts it against the
// call's bound.
func (a *attempt) refused(ref *Refusal) {
	a.mu.Lock()
	a.c.Allowed, a.c.By = false, ref.Error()
	if ref.Addr != "" {
		a.c.Addr = ref.Addr
	}
	a.mu.Unlock()
	s := a.s
	if n := s.lim.Refusals; n > 0 && s.refusals.Add(1) > int64(n) {
		s.exceed(&Over{Bound: "refusals", Limit: n})
	}
}

func (a *attempt) failed(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.c.Error == "" {
		a.c.Error = err.Error()
	}
}

// end records the attempt (once).
func (a *attempt) end() {
	a.once.Do(func() {
		a.mu.Lock()
		c := a.c
		a.mu.Unlock()
		c.Sent, c.Received = a.sent.Load(), a.recv.Load()
		a.s.emit(c)
	})
}

// ServeHTTP checks a request by its host before goproxy serves it.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.begin() {
		http.Error(w, "warden egress proxy: the call is over", http.StatusServiceUnavailable)
		return
	}
	defer s.work.Done()
	connect := r.Method == http.MethodConnect
	hostport, defPort := r.Host, "443"
	if !connect {
		if !r.URL.IsAbs() {
			s.gp.ServeHTTP(w, r) // goproxy's answer to a non-proxy request
			return
		}
		hostport = r.URL.Host
		switch r.URL.Scheme {
		case "http":
			defPort = "80"
		case "https":
		default:
			http.Error(w, "warden egress proxy: only http and https URLs, and CONNECT for the rest", http.StatusBadRequest)
			return
		}
	}
	host, port, err := splitHostPort(hostport, defPort)
	if err != nil {
		http.Error(w, "warden egress proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	a := &attempt{s: s, tunnel: connect, c: calls.Connection{Host: host, Port: port, Method: r.Method}}
	var e entry
	var ref *Refusal
	if len(host) > maxHost {
		// No host is that long: refused before any lookup, and only its
		// head recorded.
		a.c.Host = fmt.Sprintf("%s… (%d bytes)", strings.ToValidUTF8(host[:keptHost], "?"), len(host))
		ref = &Refusal{Host: a.c.Host, Port: port, Kind: fmt.Sprintf("longer than a host name may be (%d bytes)", maxHost)}
	} else {
		e, ref = s.hosts.byName(host, port)
	}
	if ref != nil {
		ref.Hosts, ref.By = s.hosts.String(), s.p.By
		a.refused(ref)
		a.end()
		writeRefusal(w, r.Method, ref.Error())
		return
	}
	a.c.Allowed, a.c.By = true, s.allowedBy(e)
	held := s.held(host, port)
	if len(held) > 0 && !connect {
		a.c.Path = r.URL.Path
		if ref := checkHTTP(held, host, port, r.Method, r.URL); ref != nil {
			a.refused(ref)
			a.end()
			writeRefusal(w, r.Method, ref.Error())
			return
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), attemptKey{}, a))
	if connect && (len(held) > 0 || s.o.Broker.binds(host, port)) {
		if s.o.Broker == nil {
			ref := &Refusal{Host: host, Port: port, Why: fmt.Sprintf("warden: %s is refused: its requests are held to methods and paths, and this worker has no CA to see them with", net.JoinHostPort(host, strconv.Itoa(port)))}
			a.refused(ref)
			a.end()
			writeRefusal(w, r.Method, ref.Error())
			return
		}
		s.mitm(w, a, host, port)
		return
	}
	if connect {
		r.URL.Host = net.JoinHostPort(host, strconv.Itoa(port))
	}
	s.gp.ServeHTTP(w, r)
	if !connect {
		a.end()
		return
	}
	a.mu.Lock()
	dialled := a.dialled
	a.mu.Unlock()
	if !dialled {
		a.failed(errors.New("no tunnel was made"))
		a.end()
	}
}

// allowedBy says what let a connection through: the entry and what
// granted the network.
func (s *server) allowedBy(e entry) string {
	by := "host entry " + strconv.Quote(e.raw)
	if s.p.By != "" {
		by += " (" + s.p.By + ")"
	}
	return by
}

// splitHostPort splits a request's target, with def as the port when
// it names none.
func splitHostPort(hostport, def string) (string, int, error) {
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		host, ps = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), def
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("bad target %q", hostport)
	}
	return normName(host), port, nil
}

// writeRefusal answers a refused request with 403, its status text and
// body saying why, and closes the connection.
func writeRefusal(w http.ResponseWriter, method, msg string) {
	body := msg + "\n"
	resp := &http.Response{StatusCode: http.StatusForbidden, Status: "403 " + msg, ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "X-Warden-Refused": {msg}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Close: true}
	if method == http.MethodHead {
		resp.Body, resp.ContentLength = http.NoBody, 0
	}
	if hj, ok := w.(http.Hijacker); ok {
		if c, buf, err := hj.Hijack(); err == nil {
			defer c.Close()
			_ = resp.Write(buf)
			_ = buf.Flush()
			return
		}
	}
	w.Header().Set("X-Warden-Refused", msg)
	http.Error(w, msg, http.StatusForbidden)
}

// connectDial dials a CONNECT's target for goproxy.
func (s *server) connectDial(r *http.Request, network, addr string) (net.Conn, error) {
	a := attemptOf(r.Context())
	if a == nil {
		return nil, errors.New("warden: egress: a tunnel without a check")
	}
	return a.dial(r.Context(), network, addr)
}

// connectError answers a CONNECT whose dial failed: 403 for a refusal,
// 502 for a host that could not be reached.
func (s *server) connectError(w io.Writer, _ *goproxy.ProxyCtx, err error) {
	code, msg, header := http.StatusBadGateway, "warden: "+err.Error(), "X-Warden-Error"
	var ref *Refusal
	if errors.As(err, &ref) {
		code, msg, header = http.StatusForbidden, ref.Error(), "X-Warden-Refused"
	}
	body := msg + "\n"
	_, _ = fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n%s: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, oneLine(msg), header, oneLine(msg), len(body), body)
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// roundTrip sends a plain HTTP request over a connection of its own.
func (a *attempt) roundTrip(req *http.Request) (*http.Response, error) {
	tr := &http.Transport{Proxy: nil, DialContext: a.dial, DisableKeepAlives: true, DisableCompression: true,
		TLSHandshakeTimeout: dialTimeout, MaxResponseHeaderBytes: 1 << 20}
	resp, err := tr.RoundTrip(req)
	if err == nil {
		return resp, nil
	}
	code, msg, header := http.StatusBadGateway, "warden: "+err.Error(), "X-Warden-Error"
	var ref *Refusal
	if errors.As(err, &ref) {
		code, msg, header = http.StatusForbidden, ref.Error(), "X-Warden-Refused"
	} else {
		a.failed(err)
	}
	body := msg + "\n"
	return &http.Response{StatusCode: code, Status: strconv.Itoa(code) + " " + oneLine(msg), ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/plain; charset=utf-8"}, header: {oneLine(msg)}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}, nil
}

// dial connects to addr (the attempt's own host and port) and refuses,
// in the dialer's Control hook, an address the policy does not let the
// call reach.
func (a *attempt) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	s := a.s
	a.mu.Lock()
	a.dialled = true
	want := net.JoinHostPort(a.c.Host, strconv.Itoa(a.c.Port))
	a.mu.Unlock()
	if h, p, err := splitHostPort(addr, "0"); err != nil || net.JoinHostPort(h, strconv.Itoa(p)) != want {
		err := fmt.Errorf("warden: egress: dial of %s for a request to %s", addr, want)
		a.failed(err)
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	d := net.Dialer{Timeout: dialTimeout, Resolver: s.resolver,
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("warden: egress: dialled address %q: %w", address, err)
			}
			var self []netip.Addr
			// A non-public address is refused as such: the machine's own
			// addresses are looked up for a public one.
			if !s.o.HostAddresses && permission.Special(ap.Addr()) == "" {
				if self, err = hostAddrs(); err != nil {
					return err // no way to tell: refused
				}
			}
			if ref := s.hosts.byAddr(a.c.Host, ap.Addr(), int(ap.Port()), self); ref != nil {
				ref.Hosts, ref.By = s.hosts.String(), s.p.By
				return ref
			}
			return nil
		}}
	if network != "tcp4" && network != "tcp6" {
		network = "tcp"
	}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			a.refused(ref)
			err = ref
		} else {
			a.failed(err)
		}
		if a.tunnel {
			a.end() // a request's is recorded when its handler ends
		}
		return nil, err
	}
	tcp, ok := conn.(*net.TCPConn)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("warden: egress: not a TCP connection")
	}
	u := &upConn{TCPConn: tcp, a: a}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = tcp.Close()
		err := errors.New("the call ended")
		a.failed(err)
		if a.tunnel {
			a.end()
		}
		return nil, err
	}
	s.upstream[u] = struct{}{}
	if a.tunnel {
		s.work.Add(1)
	}
	s.mu.Unlock()
	a.mu.Lock()
	a.c.Addr = tcp.RemoteAddr().String()
	a.mu.Unlock()
	return u, nil
}

// upConn is a connection to a host, counting the bytes each way; a
// tunnel's is recorded when it is closed.
type upConn struct {
	*net.TCPConn
	a    *attempt
	once sync.Once
}

func (c *upConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	c.a.recv.Add(int64(n))
	return n, err
}

func (c *upConn) Write(p []byte) (int, error) {
	// Counted before the write, and the shortfall taken back after it:
	// the host can answer, and a plain request be recorded, before this
	// goroutine returns from the write.
	c.a.sent.Add(int64(len(p)))
	n, err := c.TCPConn.Write(p)
	if n < len(p) {
		c.a.sent.Add(int64(n - len(p)))
	}
	return n, err
}

// ReadFrom and WriteTo hide the TCP connection's own, which copy a
// whole stream before they return a count: the bytes are counted as
// they pass, so a tunnel closed at the end of a call is recorded with
// what it carried.
// They copy through a buffer of copyBuffer bytes: fewer system calls
// per megabyte than io.Copy's 32 KiB.
func (c *upConn) ReadFrom(r io.Reader) (int64, error) {
	buf, put := c.a.s.buffer()
	defer put()
	return io.CopyBuffer(writerFunc(c.Write), readerOnly(r), buf)
}

func (c *upConn) WriteTo(w io.Writer) (int64, error) {
	buf, put := c.a.s.buffer()
	defer put()
	return io.CopyBuffer(writerOnly(w), readerFunc(c.Read), buf)
}

// buffer returns a copy buffer and the function that gives it back: one
// of copyBuffer bytes from the server's pool while the call's and the
// worker's buffer bounds have room for it, else a small one.
func (s *server) buffer() ([]byte, func()) {
	if n := s.lim.Buffer; n > 0 && s.bufBytes.Add(copyBuffer) > n {
		s.bufBytes.Add(-copyBuffer)
		return make([]byte, smallBuffer), func() {}
	}
	if !s.o.Shared.take(0, copyBuffer) {
		if s.lim.Buffer > 0 {
			s.bufBytes.Add(-copyBuffer)
		}
		return make([]byte, smallBuffer), func() {}
	}
	b, ok := s.buffers.Get().(*[]byte)
	if !ok {
		nb := make([]byte, copyBuffer)
		b = &nb
	}
	return *b, func() {
		s.buffers.Put(b)
		s.o.Shared.give(0, copyBuffer)
		if s.lim.Buffer > 0 {
			s.bufBytes.Add(-copyBuffer)
		}
	}
}

// copyBuffer is the size of a tunnel's copy buffers.
const copyBuffer = 256 << 10

// readerOnly and writerOnly hide a ReaderFrom or WriterTo, so that
// io.CopyBuffer uses the buffer it is given.
func readerOnly(r io.Reader) io.Reader { return readerFunc(r.Read) }
func writerOnly(w io.Writer) io.Writer { return writerFunc(w.Write) }

type (
	readerFunc func([]byte) (int, error)
	writerFunc func([]byte) (int, error)
)

func (f readerFunc) Read(p []byte) (int, error)  { return f(p) }
func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func (c *upConn) Close() error {
	err := c.TCPConn.Close()
	c.once.Do(func() {
		s := c.a.s
		s.mu.Lock()
		delete(s.upstream, c)
		s.mu.Unlock()
		if c.a.tunnel {
			c.a.end()
			s.work.Done()
		}
	})
	return err
}
