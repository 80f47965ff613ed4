package egress

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenhq/warden/calls"
)

// Limits bound what the proxy spends on one call: the worker's
// descriptors, memory and time are charged to the call that asks for
// them. A zero field takes its default (DefaultLimits); a negative one
// turns that bound off.
type Limits struct {
	// Conns bounds the client connections open at once (tunnels and
	// idle ones included). Each holds one worker descriptor, and a
	// tunnel a second one to its host: a call holds at most 2×Conns+1
	// of the worker's descriptors. The call that opens one more is
	// ended.
	Conns int
	// Refusals bounds the connections refused to the call: the one past
	// it ends the call.
	Refusals int
	// Records bounds the connection records the call's result keeps in
	// full (refusals first); the rest are counted by kind and host
	// (Records.Summary).
	Records int
	// HeaderTimeout bounds the time a client has to send a request's
	// header (the first request of a connection included): an idle
	// connection is closed after it.
	HeaderTimeout time.Duration
	// IdleTimeout bounds the time a kept-alive connection waits for its
	// next request.
	IdleTimeout time.Duration
	// Buffer bounds the bytes of the call's tunnel copy buffers: past
	// it, a tunnel copies through a small buffer (slower, never more
	// memory).
	Buffer int64
}

// DefaultLimits are the bounds a zero Limits field takes.
func DefaultLimits() Limits {
	return Limits{Conns: 128, Refusals: 10000, Records: 1000, HeaderTimeout: 5 * time.Second,
		IdleTimeout: 15 * time.Second, Buffer: 16 << 20}
}

// withDefaults is l with its zero fields set to the defaults.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Conns == 0 {
		l.Conns = d.Conns
	}
	if l.Refusals == 0 {
		l.Refusals = d.Refusals
	}
	if l.Records == 0 {
		l.Records = d.Records
	}
	if l.HeaderTimeout == 0 {
		l.HeaderTimeout = d.HeaderTimeout
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.Buffer == 0 {
		l.Buffer = d.Buffer
	}
	return l
}

// The fixed bounds.
const (
	// maxHeaderBytes bounds a request's line and header (net/http
	// answers 431 past it, and closes the connection).
	maxHeaderBytes = 64 << 10
	// maxHost is the longest host name the proxy considers (DNS names
	// have at most 253 characters); a longer one is refused at once.
	maxHost = 253
	// keptHost is how much of a refused over-long host a record keeps.
	keptHost = 64
	// smallBuffer is the copy buffer of a tunnel past the buffer bounds.
	smallBuffer = 16 << 10
)

// Shared is the budget of every call one worker's proxies serve: the
// connections open at once across calls and the bytes of their copy
// buffers. A nil *Shared bounds nothing across calls. It is safe for
// concurrent use.
type Shared struct {
	conns, maxConns int64
	buffer, maxBuf  int64
	// refusedConns counts the connections refused at the shared bound.
	refusedConns atomic.Int64
	mu           sync.Mutex
}

// NewShared returns the budget of conns connections and buffer bytes
// across calls; a value ≤ 0 is the default (1024 connections, 256 MiB).
func NewShared(conns int, buffer int64) *Shared {
	if conns <= 0 {
		conns = 1024
	}
	if buffer <= 0 {
		buffer = 256 << 20
	}
	return &Shared{maxConns: int64(conns), maxBuf: buffer}
}

// take charges n connections and b buffer bytes, unless the budget is
// spent.
func (s *Shared) take(conns, buf int64) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns+conns > s.maxConns || s.buffer+buf > s.maxBuf {
		return false
	}
	s.conns += conns
	s.buffer += buf
	return true
}

func (s *Shared) give(conns, buf int64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns -= conns
	s.buffer -= buf
}

// Open is the connections open across calls now, and the bytes of
// their copy buffers (tests, metrics).
func (s *Shared) Open() (conns int, buffer int64) {
	if s == nil {
		return 0, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.conns), s.buffer
}

// Over is the error a call gets when it passes one of its Limits: the
// bound, and the configuration key that sets it.
type Over struct {
	// Bound names it ("connections").
	Bound string
	// Limit is its value.
	Limit int
}

// Error says which bound the call passed and how to raise it.
func (o *Over) Error() string {
	switch o.Bound {
	case "connections":
		return fmt.Sprintf("network: the call's processes had %d connections to the egress proxy open at once, its bound (backend.local.network.connections)", o.Limit)
	case "refusals":
		return fmt.Sprintf("network: the egress proxy refused %d connections of the call, its bound (backend.local.network.refusals)", o.Limit)
	}
	return fmt.Sprintf("network: the call passed the egress proxy's bound %s (%d)", o.Bound, o.Limit)
}

// boundListener admits a connection when the call and the worker have
// room for it, and closes it at once when not.
type boundListener struct {
	net.Listener
	s *server
}

func (l boundListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.s.admit() {
			return &clientConn{Conn: c, s: l.s}, nil
		}
		_ = c.Close()
	}
}

// admit charges one client connection to the call and the worker; at
// the call's bound it ends the call.
func (s *server) admit() bool {
	if s.over.Load() {
		return false
	}
	if s.lim.Conns > 0 && s.conns.Add(1) > int64(s.lim.Conns) {
		s.conns.Add(-1)
		s.exceed(&Over{Bound: "connections", Limit: s.lim.Conns})
		return false
	}
	if !s.o.Shared.take(1, 0) {
		s.o.Shared.refusedConns.Add(1)
		if s.lim.Conns > 0 {
			s.conns.Add(-1)
		}
		return false
	}
	return true
}

// exceed ends the call once: no connection is admitted after it, and
// Options.Over hears why. Without an Over (a proxy no call's end
// follows), nothing ends: the connection past the bound is refused, and
// the next ones as they come.
func (s *server) exceed(o *Over) {
	if s.o.Over == nil {
		return
	}
	s.overOnce.Do(func() {
		s.over.Store(true)
		s.o.Over(o)
	})
}

// clientConn is an admitted client connection, given back when closed.
type clientConn struct {
	net.Conn
	s    *server
	once sync.Once
}

func (c *clientConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		if c.s.lim.Conns > 0 {
			c.s.conns.Add(-1)
		}
		c.s.o.Shared.give(1, 0)
	})
	return err
}

// CloseWrite and CloseRead half-close a TCP connection (goproxy's
// tunnels do).
func (c *clientConn) CloseWrite() error {
	if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return c.Close()
}

func (c *clientConn) CloseRead() error {
	if hc, ok := c.Conn.(interface{ CloseRead() error }); ok {
		return hc.CloseRead()
	}
	return nil
}

// Records collects one call's connection records within Limits.Records:
// refusals first, and what is not kept counted. It is safe for
// concurrent use.
type Records struct {
	// Max bounds the records kept (≤ 0: DefaultLimits().Records).
	Max int
	// Observer, when not nil, sees every record.
	Observer Observer

	mu   sync.Mutex
	list []calls.Connection
	// dropped and droppedRefused count the records not kept;
	// droppedHosts the hosts of the refused ones (up to maxHosts).
	dropped, droppedRefused int
	droppedHosts            map[string]struct{}
}

// maxHosts bounds the hosts of the refusals not kept that are counted.
const maxHosts = 10000

// Record keeps c, or counts it when Max are kept: a refusal then
// replaces the last allowed record (the refusals are what the model
// needs to read).
func (r *Records) Record(c calls.Connection) {
	if r.Observer != nil {
		r.Observer.Connection(c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	max := r.Max
	if max <= 0 {
		max = DefaultLimits().Records
	}
	if len(r.list) < max {
		r.list = append(r.list, c)
		return
	}
	r.dropped++
	if c.Allowed {
		return
	}
	for i := len(r.list) - 1; i >= 0; i-- {
		if r.list[i].Allowed {
			r.list = append(r.list[:i], r.list[i+1:]...)
			r.list = append(r.list, c)
			return
		}
	}
	r.droppedRefused++
	if r.droppedHosts == nil {
		r.droppedHosts = map[string]struct{}{}
	}
	if len(r.droppedHosts) < maxHosts {
		r.droppedHosts[c.Host] = struct{}{}
	}
}

// List returns the records kept, and how many were not.
func (r *Records) List() ([]calls.Connection, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.list, r.dropped
}

// Summary says what was not kept of the refusals ("… and 12,345 more
// refusals to 3 hosts"), "" when every refusal was kept.
func (r *Records) Summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.droppedRefused == 0 {
		return ""
	}
	hosts := fmt.Sprintf("%s hosts", group(len(r.droppedHosts)))
	switch n := len(r.droppedHosts); {
	case n == 1:
		hosts = "1 host"
	case n >= maxHosts:
		hosts = "more than " + hosts
	}
	return fmt.Sprintf("… and %s more refusals to %s", group(r.droppedRefused), hosts)
}

// group writes n with thousands separators (12,345).
func group(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
