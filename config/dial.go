package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"

	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/auth"
)

// ClientOptions are the Temporal client options for joining the cluster
// in t (address, namespace, TLS client certificate, API key, warden key). Workers and
// clients of a hosted or self-run cluster use the same.
func (t Temporal) ClientOptions() (tclient.Options, error) {
	o := tclient.Options{HostPort: t.Address, Namespace: t.Namespace}
	if loopback(t.Address) {
		// Compressing on loopback costs CPU on both ends and saves
		// nothing (a listing of 10,000 waiting turns moves ~15 MB).
		o.ConnectionOptions.GrpcCompression = &tclient.GrpcCompressionNone{}
	}
	tc, err := t.tlsConfig()
	if err != nil {
		return o, err
	}
	o.ConnectionOptions.TLS = tc
	key, err := t.Key()
	if err != nil {
		return o, err
	}
	if key != "" {
		// A warden key goes as a bearer header, over TLS when the
		// connection has it (the embedded server on loopback has not).
		o.HeadersProvider = auth.Headers(key)
	}
	if t.APIKey != "" {
		o.Credentials = tclient.NewAPIKeyStaticCredentials(t.APIKey)
		if o.ConnectionOptions.TLS == nil {
			o.ConnectionOptions.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	return o, nil
}

// loopback reports whether the host of address (host:port) is a loopback
// address or localhost.
func loopback(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (t Temporal) tlsConfig() (*tls.Config, error) {
	if t.TLSCert == "" && t.TLSCA == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(t.TLSCert, t.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("temporal.tls_cert/tls_key: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if t.TLSCA != "" {
		pem, err := os.ReadFile(t.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("temporal.tls_ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("temporal.tls_ca: no certificates found")
		}
		tc.RootCAs = pool
	}
	return tc, nil
}
