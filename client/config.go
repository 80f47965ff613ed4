package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"time"

	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/telemetry"
	"github.com/wardenhq/warden/workflows"
)

// This file builds what a client of warden needs from package config's
// data: the Temporal connection and the approvers turns record. The
// content store a configuration names is opened by package
// content/stores (which links the S3 store; this package does not).

// DialOptions are the Temporal client options for joining the cluster
// in t (address, namespace, TLS client certificate, API key, warden
// key). Workers and clients of a hosted or self-run cluster use the same.
func DialOptions(t config.Temporal) (tclient.Options, error) {
	o := tclient.Options{HostPort: t.Address, Namespace: t.Namespace}
	if loopback(t.Address) {
		// Compressing on loopback costs CPU on both ends and saves
		// nothing (a listing of 10,000 waiting turns moves ~15 MB).
		o.ConnectionOptions.GrpcCompression = &tclient.GrpcCompressionNone{}
	}
	tc, err := tlsConfig(t)
	if err != nil {
		return o, err
	}
	o.ConnectionOptions.TLS = tc
	key, err := Key(t)
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

// ConfigOptions are the Temporal client options for dialing
// c.Frontend(address) in c's namespace with c's TLS, API key and warden
// key (DialOptions).
func ConfigOptions(c config.Config, address string) (tclient.Options, error) {
	t := c.Temporal
	t.Address, t.Namespace = c.Frontend(address), c.Namespace()
	return DialOptions(t)
}

// Dial connects a Temporal client with ConfigOptions(c, address) and
// logger (nil: the SDK's default). A refusal for want of a key says
// where the key is.
func Dial(ctx context.Context, c config.Config, address string, logger sdklog.Logger) (tclient.Client, error) {
	opts, err := ConfigOptions(c, address)
	if err != nil {
		return nil, err
	}
	opts.Logger = logger
	tp, err := telemetry.Setup(ctx, c.Telemetry, "warden-starter", os.Getenv)
	if err != nil {
		return nil, err
	}
	if tp != nil {
		i, err := telemetry.Interceptor(tp.TracerProvider())
		if err != nil {
			return nil, err
		}
		opts.Interceptors = append(opts.Interceptors, i)
	}
	tc, err := tclient.DialContext(ctx, opts)
	if err != nil {
		if c.Temporal.KeyFile == "" && errors.As(err, new(*serviceerror.PermissionDenied)) {
			return nil, fmt.Errorf("dial %s: %w (pass --key-file or set WARDEN_KEY_FILE; the embedded worker writes DATA_DIR/auth/operator.key)", opts.HostPort, Explain(err))
		}
		return nil, fmt.Errorf("dial %s: %w", opts.HostPort, Explain(err))
	}
	if tp != nil {
		return tracedClient{Client: tc, tp: tp}, nil
	}
	return tc, nil
}

// tracedClient is a client with the tracing interceptor whose Close also
// flushes the spans of its calls.
type tracedClient struct {
	tclient.Client
	tp *telemetry.Provider
}

// Close closes the client and flushes its spans (at most 5 s).
func (c tracedClient) Close() {
	c.Client.Close()
	_ = c.tp.ShutdownWithin(5 * time.Second)
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

// tlsConfig is the TLS configuration of t's certificate and CA (nil
// without either).
func tlsConfig(t config.Temporal) (*tls.Config, error) {
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

// Key reads the warden key of Temporal.KeyFile; "" when none is set.
func Key(t config.Temporal) (string, error) {
	if t.KeyFile == "" {
		return "", nil
	}
	key, err := auth.ReadKeyFile(t.KeyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errors.New("temporal.key_file " + t.KeyFile + " does not exist: create keys with `starter keys create`, or start the worker once")
	}
	return key, err
}

// KeyName is the name of the warden key in KeyFile ("" without one, or
// when it cannot be read: DialOptions reports that error).
func KeyName(t config.Temporal) string {
	key, err := Key(t)
	if err != nil || key == "" {
		return ""
	}
	name, _ := auth.NameOf(key)
	return name
}

// Approvers is the approval policy recorded with the turns a client of
// this configuration starts: the inbox users, their roles and what each
// role may answer, and the operator (auth.OperatorName), who may answer
// every call. Nil when no inbox users are configured (anyone may
// answer, the one-command demo's behaviour). Credentials are not part of
// it: only names and roles go into the turn's history.
func Approvers(i config.Inbox) (*workflows.Approvers, error) {
	if len(i.Users) == 0 {
		return nil, nil
	}
	a := &workflows.Approvers{Users: map[string][]string{}}
	for name, u := range i.Users {
		a.Users[name] = slices.Clone(u.Roles)
		for _, rn := range u.Roles {
			r, ok := i.Roles[rn]
			if !ok {
				return nil, fmt.Errorf("inbox.users.%s: unknown role %q", name, rn)
			}
			if a.Roles == nil {
				a.Roles = map[string][]string{}
			}
			a.Roles[rn] = slices.Clone(r.Allow)
		}
	}
	// The operator key (auth.OperatorName, the admin key the worker
	// writes) may answer every call, as the roles table says, unless an
	// inbox user of that name restricts it.
	if _, ok := a.Users[auth.OperatorName]; !ok {
		a.Users[auth.OperatorName] = nil
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	return a, nil
}

// CheckQuorum checks that approvers a (Approvers: the config's inbox
// users and roles) can meet the quorum rules of a policy on a turn
// requester starts ("" when no turn is known), with the role check the
// worker's turns run (roles.Checker): workflows.CheckQuorum. A rule
// fewer approvers could ever allow than it needs is an error naming it;
// a rule some of whose calls only part of the team may allow is a
// warning. The worker's start (node.Check), Start and `starter policy
// apply` call it.
func CheckQuorum(a *workflows.Approvers, rules []permission.QuorumRule, requester string) (warnings []string, err error) {
	return workflows.CheckQuorum(a, roles.Checker{}, rules, requester)
}
