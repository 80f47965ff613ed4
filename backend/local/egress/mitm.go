package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/wardenhq/warden/calls"
)

// mitm serves a CONNECT to host:port, a host a brokered secret is bound
// to, by terminating its TLS with the broker's CA and sending each
// request on over TLS of its own to the real host (verified with the
// broker's roots), one connection per request, with the secrets' values
// in its headers. Only the tunnel's host is ever dialled; a request
// whose Host is another host, or a handshake naming another server, is
// refused; only HTTP/1.1 is offered; redirects are passed back, never
// followed. Each request is recorded on its own; the CONNECT is recorded
// only when no request came through it.
func (s *server) mitm(w http.ResponseWriter, a *attempt, host string, port int) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "warden egress proxy: cannot take the connection over", http.StatusInternalServerError)
		return
	}
	raw, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer raw.Close()
	if _, err := brw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if err := brw.Flush(); err != nil {
		return
	}
	cert, err := s.o.Broker.cert(host)
	if err != nil {
		a.failed(err)
		a.end()
		return
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(hi *tls.ClientHelloInfo) (*tls.Config, error) {
			if hi.ServerName != "" && normName(hi.ServerName) != host {
				return nil, fmt.Errorf("the handshake names %q, the tunnel %s", hi.ServerName, host)
			}
			return nil, nil
		}}
	tc := tls.Server(&bufConn{Conn: raw, r: brw.Reader}, cfg)
	hsTimeout := s.lim.HeaderTimeout
	if hsTimeout <= 0 {
		hsTimeout = dialTimeout
	}
	_ = tc.SetDeadline(time.Now().Add(hsTimeout))
	if err := tc.HandshakeContext(s.ctx); err != nil {
		a.failed(fmt.Errorf("TLS handshake with the process: %w", err))
		a.end()
		return
	}
	_ = tc.SetDeadline(time.Time{})
	lr := &io.LimitedReader{R: tc, N: maxHeaderBytes}
	br := bufio.NewReader(lr)
	served := false
	for {
		lr.N = maxHeaderBytes
		if s.lim.IdleTimeout > 0 {
			_ = tc.SetReadDeadline(time.Now().Add(s.lim.IdleTimeout))
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			break
		}
		_ = tc.SetReadDeadline(time.Time{})
		lr.N = math.MaxInt64
		served = true
		if !s.mitmRequest(tc, req, host, port) || s.over.Load() {
			break
		}
	}
	if !served {
		a.failed(errors.New("no request came through the tunnel"))
		a.end()
	}
}

// mitmRequest sends one request read from a terminated tunnel to
// host:port and writes the answer to c; it reports whether the
// connection may carry another.
func (s *server) mitmRequest(c net.Conn, req *http.Request, host string, port int) bool {
	defer req.Body.Close()
	a := &attempt{s: s, c: calls.Connection{Host: host, Port: port, Method: req.Method, Path: req.URL.Path}}
	defer a.end()
	target := net.JoinHostPort(host, strconv.Itoa(port))
	if h, p, err := splitHostPort(req.Host, strconv.Itoa(port)); err != nil || h != host || p != port {
		ref := &Refusal{Host: host, Port: port, Why: fmt.Sprintf("warden: a request for Host %q through a tunnel to %s is refused: the proxy sees this tunnel's requests (a secret or a method and path rule names the host), and takes only those for the host itself", req.Host, target)}
		a.refused(ref)
		writeResponse(c, req.Method, http.StatusForbidden, "X-Warden-Refused", ref.Error())
		return false
	}
	if !req.URL.IsAbs() && !strings.HasPrefix(req.RequestURI, "/") && req.RequestURI != "*" {
		a.failed(fmt.Errorf("request target %q", req.RequestURI))
		writeResponse(c, req.Method, http.StatusBadRequest, "X-Warden-Error", "warden: only origin-form request targets in a tunnel")
		return false
	}
	if held := s.held(host, port); len(held) > 0 {
		if ref := checkHTTP(held, host, port, req.Method, req.URL); ref != nil {
			a.refused(ref)
			writeResponse(c, req.Method, http.StatusForbidden, "X-Warden-Refused", ref.Error())
			return false
		}
	}
	a.mu.Lock()
	a.c.Allowed, a.c.By = true, s.allowedByName(host, port)
	a.mu.Unlock()
	out := req.Clone(context.WithValue(s.ctx, attemptKey{}, a))
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host, out.Host = "https", target, req.Host
	out.Header.Del("Proxy-Connection")
	out.Header.Del("Proxy-Authorization")
	used := s.o.Broker.apply(out.Header, host, port)
	if len(used) > 0 {
		a.mu.Lock()
		a.c.Secrets = strings.Join(used, ", ")
		a.mu.Unlock()
		// An identity body, which scrub can read for the values.
		out.Header.Del("Accept-Encoding")
	}
	resp, err := s.hostTransport(host).RoundTrip(out)
	if err != nil {
		code, header, msg := http.StatusBadGateway, "X-Warden-Error", "warden: "+err.Error()
		var ref *Refusal
		if errors.As(err, &ref) {
			code, header, msg = http.StatusForbidden, "X-Warden-Refused", ref.Error()
		} else {
			a.failed(err)
		}
		writeResponse(c, req.Method, code, header, msg)
		return false
	}
	defer resp.Body.Close()
	s.o.Broker.scrub(resp.Header)
	if len(used) > 0 && resp.Body != http.NoBody && resp.Header.Get("Content-Encoding") == "" {
		// A host that echoes the value in its body hands the process the
		// placeholder instead (the length changes: chunked).
		resp.Body = s.o.Broker.scrubBody(resp.Body)
		resp.ContentLength, resp.TransferEncoding = -1, []string{"chunked"}
		resp.Header.Del("Content-Length")
	}
	keep := !req.Close && !resp.Close
	if err := resp.Write(c); err != nil {
		return false
	}
	return keep
}

// allowedByName says what let a request to host:port through.
func (s *server) allowedByName(host string, port int) string {
	e, ref := s.hosts.byName(host, port)
	if ref != nil {
		return ""
	}
	return s.allowedBy(e)
}

// hostTransport is the transport of a terminated tunnel's requests to host:
// TLS of its own, verified with the broker's roots, over the attempt's
// checked dial, one connection per request.
func (s *server) hostTransport(host string) *http.Transport {
	return &http.Transport{Proxy: nil, DisableKeepAlives: true, DisableCompression: true,
		TLSHandshakeTimeout: dialTimeout, MaxResponseHeaderBytes: 1 << 20, ForceAttemptHTTP2: false,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			a := attemptOf(ctx)
			if a == nil {
				return nil, errors.New("warden: egress: a request without a check")
			}
			raw, err := a.dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(raw, s.o.Broker.tlsConfig(host))
			if err := tc.HandshakeContext(ctx); err != nil {
				_ = raw.Close()
				return nil, fmt.Errorf("TLS with %s: %w", host, err)
			}
			return tc, nil
		}}
}

// writeResponse writes a short answer of the proxy's own to c.
func writeResponse(c io.Writer, method string, code int, header, msg string) {
	body := msg + "\n"
	resp := &http.Response{StatusCode: code, Status: strconv.Itoa(code) + " " + oneLine(msg), ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/plain; charset=utf-8"}, header: {oneLine(msg)}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Close: true}
	if method == http.MethodHead {
		resp.Body, resp.ContentLength = http.NoBody, 0
	}
	_ = resp.Write(c)
}

// bufConn is a hijacked connection read through the buffer that may
// already hold the start of its TLS handshake.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }
