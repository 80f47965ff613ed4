package devserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/labstack/echo/v4"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"google.golang.org/grpc/metadata"

	"github.com/wardenhq/warden/auth"
)

// Auth makes the frontend require keys. Without it (nil Options.Auth)
// every client that reaches the port may call every API.
type Auth struct {
	// Keys authenticates the key each request carries.
	Keys interface {
		Authenticate(key string) (auth.Principal, bool)
	}
	// Policy decides what each principal's role may call, and which
	// signals and updates are answers whose approver it checks.
	Policy auth.Policy
	// ClientKey is the key of the server's own readiness client (an
	// admin or worker key).
	ClientKey string
	// UIKey is the key the Web UI calls the frontend with (a reader key:
	// the UI is not authenticated itself, so it may only read).
	UIKey string
}

// keyClaimMapper turns a bearer key into claims whose extension is the
// principal (or nil for a key the keyring does not know).
type keyClaimMapper struct{ keys Auth }

func (m keyClaimMapper) GetClaims(info *authorization.AuthInfo) (*authorization.Claims, error) {
	if info == nil || info.AuthToken == "" {
		return nil, nil
	}
	p, ok := m.keys.Keys.Authenticate(info.AuthToken)
	if !ok {
		return &authorization.Claims{AuthType: "warden-key"}, nil
	}
	return &authorization.Claims{Subject: p.Name, AuthType: "warden-key", Extensions: p}, nil
}

// keyAuthorizer applies auth.Policy to each request.
type keyAuthorizer struct{ a Auth }

func (z keyAuthorizer) Authorize(_ context.Context, claims *authorization.Claims, target *authorization.CallTarget) (authorization.Result, error) {
	if claims != nil && claims.AuthType == authorization.InternalPrincipalType {
		// The internal frontend, reachable only with the internode
		// certificate, serves the server's own system workers.
		return authorization.Result{Decision: authorization.DecisionAllow}, nil
	}
	var pr *auth.Principal
	bad := false
	if claims != nil {
		if p, ok := claims.Extensions.(auth.Principal); ok {
			pr = &p
		} else {
			bad = true
		}
	}
	call := auth.Call{Method: target.APIName}
	z.answers(target.Request, &call)
	err := z.a.Policy.Authorize(pr, call)
	if err != nil {
		reason := err.Error()
		if bad {
			reason = "the key is not known to this server (revoked, or from another data directory): " + reason
		}
		return authorization.Result{Decision: authorization.DecisionDeny, Reason: reason}, nil
	}
	res := authorization.Result{Decision: authorization.DecisionAllow}
	if pr != nil {
		res.Principal = &commonpb.Principal{Type: "warden-key", Name: pr.Name}
	}
	return res, nil
}

// answers decodes the answers a request carries into call.
func (z keyAuthorizer) answers(req any, call *auth.Call) {
	add := func(name string, p *commonpb.Payloads) {
		if !z.a.Policy.IsAnswer(name) {
			return
		}
		a, ok := decodeAnswer(p)
		if !ok {
			call.Undecodable = true
			return
		}
		a.Name = name
		call.Answers = append(call.Answers, a)
	}
	switch r := req.(type) {
	case *workflowservice.SignalWorkflowExecutionRequest:
		add(r.GetSignalName(), r.GetInput())
	case *workflowservice.SignalWithStartWorkflowExecutionRequest:
		add(r.GetSignalName(), r.GetSignalInput())
	case *workflowservice.UpdateWorkflowExecutionRequest:
		add(r.GetRequest().GetInput().GetName(), r.GetRequest().GetInput().GetArgs())
	case *workflowservice.ExecuteMultiOperationRequest:
		for _, op := range r.GetOperations() {
			if u := op.GetUpdateWorkflow(); u != nil {
				add(u.GetRequest().GetInput().GetName(), u.GetRequest().GetInput().GetArgs())
			}
		}
	case *workflowservice.StartBatchOperationRequest:
		if s := r.GetSignalOperation(); s != nil {
			add(s.GetSignal(), s.GetInput())
		}
	}
}

// decodeAnswer reads by and via from the first payload of an answer.
func decodeAnswer(p *commonpb.Payloads) (auth.Answer, bool) {
	if len(p.GetPayloads()) != 1 {
		return auth.Answer{}, false
	}
	pl := p.GetPayloads()[0]
	if string(pl.GetMetadata()["encoding"]) != "json/plain" {
		return auth.Answer{}, false
	}
	var v struct {
		By  string `json:"by"`
		Via string `json:"via"`
	}
	if err := json.Unmarshal(pl.GetData(), &v); err != nil {
		return auth.Answer{}, false
	}
	return auth.Answer{By: v.By, Via: v.Via}, true
}

// internodeTLS returns TLS settings for the server's internal services
// with a certificate authority made for this process only: the internal
// frontend (which the server's own system workers use, and which trusts
// every caller as the system) accepts only clients holding it.
func internodeTLS() (config.GroupTLS, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return config.GroupTLS{}, fmt.Errorf("devserver: internode key: %w", err)
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "warden internode CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return config.GroupTLS{}, fmt.Errorf("devserver: internode CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return config.GroupTLS{}, fmt.Errorf("devserver: internode CA: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return config.GroupTLS{}, fmt.Errorf("devserver: internode key: %w", err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: internodeName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		DNSNames: []string{internodeName, "localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		return config.GroupTLS{}, fmt.Errorf("devserver: internode certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(leafKey)
	if err != nil {
		return config.GroupTLS{}, fmt.Errorf("devserver: internode key: %w", err)
	}
	b64 := func(typ string, der []byte) string {
		return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	caData := b64("CERTIFICATE", caDER)
	return config.GroupTLS{
		Server: config.ServerTLS{CertData: b64("CERTIFICATE", leafDER), KeyData: b64("EC PRIVATE KEY", keyDER),
			ClientCAData: []string{caData}, RequireClientAuth: true},
		Client: config.ClientTLS{ServerName: internodeName, RootCAData: []string{caData}},
	}, nil
}

const internodeName = "internode.warden.local"

// uiMiddleware adds the UI's key to every call the Web UI makes.
func uiMiddleware(key string) func(echo.Context) runtime.ServeMuxOption {
	return func(echo.Context) runtime.ServeMuxOption {
		return runtime.WithMetadata(func(context.Context, *http.Request) metadata.MD {
			return metadata.Pairs("authorization", auth.BearerPrefix+key)
		})
	}
}
