// Package testhosts gives tests HTTPS hosts of their own, under a name
// of this machine: a CA of the test's, a certificate it signed, and the
// system trust bundle with that CA added, for a worker or a broker that
// must trust the test's hosts as it trusts real ones.
package testhosts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// SystemBundle is Debian's bundle of the system's trusted CAs.
const SystemBundle = "/etc/ssl/certs/ca-certificates.crt"

// CA is a test's CA: PEM-encoded, as a pool, and the certificate it
// signed for the names New was given and 127.0.0.1.
type CA struct {
	PEM  []byte
	Pool *x509.CertPool
	Cert tls.Certificate
}

// New makes a CA valid for two hours and a server certificate it signed
// for names (the first is its common name) and 127.0.0.1.
func New(t testing.TB, names ...string) CA {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test hosts CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(2 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(2 * time.Hour), DNSNames: names,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return CA{PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), Pool: pool,
		Cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}}
}

// Bundle writes the system bundle with c added to a file of the test's
// and returns its path: roots (SSL_CERT_FILE) that trust the real hosts
// and the test's.
func (c CA) Bundle(t testing.TB) string {
	t.Helper()
	sys, err := os.ReadFile(SystemBundle)
	if err != nil {
		t.Fatalf("the system's CA bundle (Debian's ca-certificates): %v", err)
	}
	p := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(p, append(append(sys, '\n'), c.PEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// LoopbackName is this machine's host name, which a test's hosts bind
// to: it must resolve to 127.0.0.1 (/etc/hosts) and not be localhost.
// Elsewhere the test is skipped, said loudly; with
// WARDEN_REQUIRE_TOOLS=1 (scripts/test.sh) it fails instead.
func LoopbackName(t testing.TB) string {
	t.Helper()
	name, err := os.Hostname()
	if err == nil {
		var addrs []string
		addrs, err = net.LookupHost(name)
		if err == nil && (len(addrs) == 0 || addrs[0] != "127.0.0.1" || name == "localhost") {
			err = fmt.Errorf("it resolves to %v", addrs)
		}
	}
	if err != nil {
		msg := fmt.Sprintf("the host name %q is no name of 127.0.0.1 (%v): add it to /etc/hosts", name, err)
		if os.Getenv("WARDEN_REQUIRE_TOOLS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return name
}
