package egress

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Secret is one brokered secret (backend.secrets): a tool process sees
// only its placeholder, and the proxy puts the value in the headers of
// the requests it sends to the secret's hosts over TLS, and nowhere
// else.
type Secret struct {
	// Name is the environment variable the placeholder is given in
	// (GH_TOKEN).
	Name string
	// Value is the real value (read by the worker from its own
	// environment). It is never printed: String shows the name only.
	Value string
	// Hosts are the host names (an optional ":port") whose requests get
	// the value; never addresses or patterns.
	Hosts []string
	// Header, when set, is the only request header the placeholder is
	// replaced in; else every header holding it.
	Header string
	// Format, with Header, is what that header becomes when it holds the
	// placeholder, "%s" standing for the value ("Bearer %s"); empty: the
	// placeholder is replaced by the value where it stands.
	Format string
}

// String names the secret, never its value.
func (s Secret) String() string { return "secret " + s.Name }

// GoString is String: %#v never shows the value either.
func (s Secret) GoString() string { return s.String() }

// envName is what a secret's name may be.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// check says what is wrong with s, if anything.
func (s Secret) check() error {
	if !envName.MatchString(s.Name) {
		return fmt.Errorf("secret %q: not an environment variable name", s.Name)
	}
	if s.Value == "" {
		return fmt.Errorf("secret %s: empty value", s.Name)
	}
	if len(s.Hosts) == 0 {
		return fmt.Errorf("secret %s: no hosts", s.Name)
	}
	for _, h := range s.Hosts {
		if _, _, err := bindingOf(h); err != nil {
			return fmt.Errorf("secret %s: host %q: %w", s.Name, h, err)
		}
	}
	if s.Format != "" {
		if s.Header == "" {
			return fmt.Errorf("secret %s: format without header", s.Name)
		}
		if strings.Count(s.Format, "%s") != 1 || strings.Count(s.Format, "%") != 1 {
			return fmt.Errorf("secret %s: format %q must hold %%s once and no other verb", s.Name, s.Format)
		}
	}
	if strings.ContainsAny(s.Value, "\r\n") {
		return fmt.Errorf("secret %s: the value holds a line break", s.Name)
	}
	return nil
}

// bindingOf parses a secret's host: a name with an optional port.
func bindingOf(h string) (string, int, error) {
	e, err := parseEntry(h)
	if err != nil {
		return "", 0, err
	}
	if e.name == "" {
		return "", 0, errors.New("must be a host name (no address, range, pattern or \"*\")")
	}
	return e.name, e.port, nil
}

// BrokerConfig is what NewBroker makes a broker of.
type BrokerConfig struct {
	// Secrets are the brokered secrets.
	Secrets []Secret
	// Dir is where the CA bundle the sandboxed processes trust is
	// written (created if missing; readable by all, it holds no key).
	Dir string
	// Roots verify the real hosts; nil: the system's roots. A test
	// supplies its own HTTPS host's.
	Roots *x509.CertPool
	// SystemBundle is the PEM file of the system's roots put in the
	// bundle; empty: the worker's SSL_CERT_FILE when it names a file,
	// else the first of the usual places that exists.
	SystemBundle string
}

// Broker holds a worker's brokered secrets and the CA the proxy
// terminates TLS with for their hosts. The CA's key stays in memory:
// it is made at NewBroker and lost when the worker ends.
type Broker struct {
	secrets []brokered
	roots   *x509.CertPool
	bundle  string
	ca      *x509.Certificate
	caKey   *ecdsa.PrivateKey

	mu    sync.Mutex
	certs map[string]*tls.Certificate
}

// brokered is one secret with its placeholder and parsed hosts.
type brokered struct {
	Secret
	placeholder string
	hosts       []binding
}

type binding struct {
	name string
	port int // 0: any
}

// systemBundles are where the system's roots usually are.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Alpine
	"/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",             // openSUSE
	"/etc/ssl/cert.pem",                  // Alpine, macOS
}

// NewBroker makes the broker of c's secrets: a placeholder for each, a
// CA of its own, and the bundle file (the system's roots and the CA).
func NewBroker(c BrokerConfig) (*Broker, error) {
	b := &Broker{roots: c.Roots, certs: map[string]*tls.Certificate{}}
	seen := map[string]bool{}
	for _, s := range c.Secrets {
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("egress: %w", err)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("egress: secret %s named twice", s.Name)
		}
		seen[s.Name] = true
		r := make([]byte, 16)
		if _, err := rand.Read(r); err != nil {
			return nil, fmt.Errorf("egress: placeholder: %w", err)
		}
		bs := brokered{Secret: s, placeholder: "warden-secret-" + s.Name + "-" + hex.EncodeToString(r)}
		bs.Header = http.CanonicalHeaderKey(s.Header)
		for _, h := range s.Hosts {
			name, port, _ := bindingOf(h)
			bs.hosts = append(bs.hosts, binding{name: name, port: port})
		}
		b.secrets = append(b.secrets, bs)
	}
	if err := b.makeCA(); err != nil {
		return nil, err
	}
	sys := c.SystemBundle
	if f := os.Getenv("SSL_CERT_FILE"); sys == "" && f != "" {
		if _, err := os.Stat(f); err == nil {
			sys = f
		}
	}
	if sys == "" {
		for _, p := range systemBundles {
			if _, err := os.Stat(p); err == nil {
				sys = p
				break
			}
		}
	}
	if sys == "" {
		return nil, errors.New("egress: no system CA bundle found to add the broker's CA to")
	}
	pemSys, err := os.ReadFile(sys)
	if err != nil {
		return nil, fmt.Errorf("egress: system CA bundle: %w", err)
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("egress: CA bundle directory: %w", err)
	}
	b.bundle = filepath.Join(c.Dir, "ca-bundle.pem")
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.ca.Raw})
	out := append(append(append([]byte{}, pemSys...), '\n'), caPEM...)
	if err := os.WriteFile(b.bundle, out, 0o644); err != nil {
		return nil, fmt.Errorf("egress: CA bundle: %w", err)
	}
	return b, nil
}

// makeCA makes the broker's CA.
func (b *Broker) makeCA() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("egress: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "warden egress broker CA", Organization: []string{"warden"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("egress: CA: %w", err)
	}
	b.ca, err = x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("egress: CA: %w", err)
	}
	b.caKey = key
	return nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

// cert is the certificate the proxy shows for host (made once).
func (b *Broker) cert(host string) (*tls.Certificate, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.certs[host]; ok {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress: key for %s: %w", host, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: host},
		NotBefore: now.Add(-time.Hour), NotAfter: b.ca.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{host},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, b.ca, &key.PublicKey, b.caKey)
	if err != nil {
		return nil, fmt.Errorf("egress: certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, b.ca.Raw}, PrivateKey: key}
	b.certs[host] = c
	return c, nil
}

// Bundle is the path of the CA bundle file (the system's roots and the
// broker's CA) that sandboxed processes trust.
func (b *Broker) Bundle() string { return b.bundle }

// CAPEM is the broker's CA certificate (no key), PEM-encoded.
func (b *Broker) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.ca.Raw})
}

// Names are the secrets' names.
func (b *Broker) Names() []string {
	out := make([]string, len(b.secrets))
	for i, s := range b.secrets {
		out[i] = s.Name
	}
	return out
}

// caEnv are the variables that point clients at the bundle.
var caEnv = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT"}

// Env gives env each secret's placeholder under its name (the value
// never) and, for a call with the network, points the usual TLS
// clients (OpenSSL and Go through SSL_CERT_FILE, Node, Python's
// requests, curl, git, pip) at the bundle. A nil b leaves env as it is.
func (b *Broker) Env(env []string, network bool) []string {
	if b == nil {
		return env
	}
	set := map[string]string{}
	var order []string
	for _, s := range b.secrets {
		set[s.Name] = s.placeholder
		order = append(order, s.Name)
	}
	if network {
		for _, n := range caEnv {
			set[n] = b.bundle
			order = append(order, n)
		}
	}
	out := make([]string, 0, len(env)+len(order))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; !ok {
			out = append(out, kv)
		}
	}
	for _, n := range order {
		out = append(out, n+"="+set[n])
	}
	return out
}

// binds reports whether a secret is bound to host:port (a name; an
// address literal never is).
func (b *Broker) binds(host string, port int) bool {
	if b == nil {
		return false
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return false
	}
	for _, s := range b.secrets {
		if s.bound(host, port) {
			return true
		}
	}
	return false
}

func (s brokered) bound(host string, port int) bool {
	for _, h := range s.hosts {
		if h.name == host && (h.port == 0 || h.port == port) {
			return true
		}
	}
	return false
}

// apply puts the values of the secrets bound to host:port in place of
// their placeholders in h (the headers of a request about to be sent
// to that host over TLS), and returns the names of those it used.
// Nothing but headers is touched: the URL and the body keep the
// placeholder.
func (b *Broker) apply(h http.Header, host string, port int) []string {
	if b == nil {
		return nil
	}
	var used []string
	for _, s := range b.secrets {
		if !s.bound(host, port) {
			continue
		}
		hit := false
		for name, vals := range h {
			if s.Header != "" && name != s.Header {
				continue
			}
			for i, v := range vals {
				if nv, ok := s.replace(v); ok {
					vals[i], hit = nv, true
				}
			}
		}
		if hit {
			used = append(used, s.Name)
		}
	}
	return used
}

// replace returns v with the value in place of the placeholder (or, with
// a Format, the formatted value), and whether v held it. Basic
// credentials are decoded and encoded again (a token in a URL's user
// information: git).
func (s brokered) replace(v string) (string, bool) {
	if strings.Contains(v, s.placeholder) {
		if s.Format != "" {
			return fmt.Sprintf(s.Format, s.Value), true
		}
		return strings.ReplaceAll(v, s.placeholder, s.Value), true
	}
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return v, false
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil || !strings.Contains(string(dec), s.placeholder) {
		return v, false
	}
	return scheme + " " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(string(dec), s.placeholder, s.Value))), true
}

// scrub puts the placeholders back in place of the values in a
// response's headers from host:port: a host that echoes the header does
// not hand the value to the process through them.
func (b *Broker) scrub(h http.Header) {
	for _, s := range b.secrets {
		for _, vals := range h {
			for i, v := range vals {
				if strings.Contains(v, s.Value) {
					vals[i] = strings.ReplaceAll(v, s.Value, s.placeholder)
				}
			}
		}
	}
}

// tlsConfig is the client side of the connection to the real host.
func (b *Broker) tlsConfig(host string) *tls.Config {
	return &tls.Config{ServerName: host, RootCAs: b.roots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}
}

// scrubBody is body with the secrets' values replaced by their
// placeholders as it streams.
func (b *Broker) scrubBody(body io.ReadCloser) io.ReadCloser {
	sr := &scrubReader{rc: body}
	for _, s := range b.secrets {
		sr.pairs = append(sr.pairs, [2][]byte{[]byte(s.Value), []byte(s.placeholder)})
		sr.keep = max(sr.keep, len(s.Value)-1)
	}
	return sr
}

// scrubReader replaces each pair's first with its second in what it
// reads, holding back the last keep bytes until more come (a value cut
// across two reads is still found).
type scrubReader struct {
	rc    io.ReadCloser
	pairs [][2][]byte
	keep  int
	buf   []byte // read, replaced, not yet returned
	eof   bool
	err   error
}

func (r *scrubReader) Read(p []byte) (int, error) {
	for {
		ready := len(r.buf) - r.keep
		if r.eof {
			ready = len(r.buf)
		}
		if ready > 0 {
			n := copy(p, r.buf[:ready])
			r.buf = r.buf[n:]
			return n, nil
		}
		if r.eof {
			return 0, r.err
		}
		chunk := make([]byte, 32<<10)
		n, err := r.rc.Read(chunk)
		if n > 0 {
			r.buf = append(r.buf, chunk[:n]...)
			for _, pr := range r.pairs {
				r.buf = bytes.ReplaceAll(r.buf, pr[0], pr[1])
			}
		}
		if err != nil {
			r.eof, r.err = true, err
		}
	}
}

func (r *scrubReader) Close() error { return r.rc.Close() }
