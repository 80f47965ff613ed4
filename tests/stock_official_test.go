package tests

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/workflows"
)

// officialServer is the official server binary (go.temporal.io/server/
// cmd/server at the version go.mod pins) started with the config
// template embedded in it, rendered from environment variables the way
// the server's Docker image runs, on PostgreSQL with SQL visibility.
type officialServer struct {
	addr string
	cmd  *exec.Cmd
	log  *procLog
}

// officialEnv is the template's environment for a server on PostgreSQL
// at pgPort, in databases db and db_visibility, on free loopback ports.
func officialEnv(t *testing.T, pgPort int, db, dynamicConfig string, internalFrontend bool) (string, []string) {
	t.Helper()
	port := freePort(t)
	env := []string{
		"DB=postgres12", "POSTGRES_SEEDS=127.0.0.1", "DB_PORT=" + strconv.Itoa(pgPort), "POSTGRES_USER=warden",
		"DBNAME=" + db, "VISIBILITY_DBNAME=" + db + "_visibility",
		"BIND_ON_IP=127.0.0.1", "TEMPORAL_BROADCAST_ADDRESS=127.0.0.1", "LOG_LEVEL=warn",
		"DYNAMIC_CONFIG_FILE_PATH=" + dynamicConfig,
		"FRONTEND_GRPC_PORT=" + strconv.Itoa(port),
	}
	names := []string{"FRONTEND_HTTP_PORT", "FRONTEND_MEMBERSHIP_PORT", "MATCHING_GRPC_PORT", "MATCHING_MEMBERSHIP_PORT",
		"HISTORY_GRPC_PORT", "HISTORY_MEMBERSHIP_PORT", "WORKER_GRPC_PORT", "WORKER_MEMBERSHIP_PORT"}
	if internalFrontend {
		env = append(env, "USE_INTERNAL_FRONTEND=true")
		names = append(names, "INTERNAL_FRONTEND_GRPC_PORT", "INTERNAL_FRONTEND_MEMBERSHIP_PORT", "INTERNAL_FRONTEND_HTTP_PORT")
	}
	for _, n := range names {
		env = append(env, n+"="+strconv.Itoa(freePort(t)))
	}
	return fmt.Sprintf("127.0.0.1:%d", port), env
}

// setupSchema creates db and db_visibility on PostgreSQL and sets up
// their schema with the server's own SQL tool, as its documentation
// says: create, setup-schema -v 0.0, update-schema --schema-name.
func setupSchema(t *testing.T, tool string, pgPort int, db string) {
	t.Helper()
	start := time.Now()
	for _, d := range []struct{ name, schema string }{{db, "postgresql/v12/temporal"}, {db + "_visibility", "postgresql/v12/visibility"}} {
		base := []string{"--ep", "127.0.0.1", "-p", strconv.Itoa(pgPort), "-u", "warden", "--pl", "postgres12", "--db", d.name}
		for _, args := range [][]string{{"create"}, {"setup-schema", "-v", "0.0"}, {"update-schema", "--schema-name", d.schema}} {
			out, err := exec.Command(tool, append(base, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("temporal-sql-tool %s: %v\n%s", strings.Join(append(base, args...), " "), err, tail(string(out), 3000))
			}
		}
	}
	t.Logf("schema of %s and %s_visibility set up by temporal-sql-tool in %s", db, db, time.Since(start).Round(time.Millisecond))
}

// startOfficial starts the server binary with env (officialEnv plus TLS
// and authorization settings) and args.
func startOfficial(t *testing.T, bin, dir, addr string, env []string, args ...string) *officialServer {
	t.Helper()
	cmd, log := startLoggedEnv(t, true, env, bin, dir, args...)
	s := &officialServer{addr: addr, cmd: cmd, log: log}
	t.Cleanup(func() {
		killProcess(t, cmd)
		if t.Failed() {
			t.Logf("official server %s output (last 4 KB):\n%s", addr, tail(log.String(), 4096))
		}
	})
	return s
}

// TestStockOfficialServer runs warden on the official server binary on
// PostgreSQL, schema set up with the server's own SQL tool, configured
// as its template renders it from the environment — every dynamic
// config at its default — in two configurations:
//
//  1. mutual TLS with a CA the test makes, the frontend requiring client
//     certificates and no authorizer: the stock profile (runStockProfile)
//     with workers, starter, inbox and the Temporal CLI holding client
//     certificates;
//  2. TLS with the server's default JWT claim mapper and authorizer (the
//     `authorization` header, keys from a JWKS file): tokens are passed
//     as --api-key. A worker whose token may write but not administer
//     the namespace refuses to start and prints the command, which an
//     administrator's token then runs; approvers' identities are the
//     tokens' subjects, recorded by the server on the signals they send,
//     while the approver a client names (by) is not checked.
func TestStockOfficialServer(t *testing.T) {
	cli := temporalCLI(t)
	wbin, sbin := buildWorker(t), buildStarter(t)
	server := buildModuleBinary(t, "temporal-server", "go.temporal.io/server/cmd/server")
	sqlTool := buildModuleBinary(t, "temporal-sql-tool", "go.temporal.io/server/cmd/tools/sql")
	pg := startPostgres(t, wbin)
	dir := pg.dir
	ca := newTestCA(t, dir)
	serverCert, serverKey := ca.issue(t, "server", true)

	t.Run("mtls", func(t *testing.T) {
		clientCert, clientKey := ca.issue(t, "warden-worker", false)
		dyn := filepath.Join(dir, "dynamic-mtls.yaml")
		if err := os.WriteFile(dyn, []byte("# every key at the server's default\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		setupSchema(t, sqlTool, pg.pgPort, "stock_mtls")
		addr, env := officialEnv(t, pg.pgPort, "stock_mtls", dyn, false)
		env = append(env, "TEMPORAL_TLS_REQUIRE_CLIENT_AUTH=true",
			"TEMPORAL_TLS_SERVER_CERT="+serverCert, "TEMPORAL_TLS_SERVER_KEY="+serverKey, "TEMPORAL_TLS_SERVER_CA_CERT="+ca.path,
			"TEMPORAL_TLS_FRONTEND_CERT="+serverCert, "TEMPORAL_TLS_FRONTEND_KEY="+serverKey,
			"TEMPORAL_TLS_CLIENT1_CA_CERT="+ca.path, "TEMPORAL_TLS_CLIENT2_CA_CERT="+ca.path,
			"TEMPORAL_TLS_INTERNODE_SERVER_NAME=localhost", "TEMPORAL_TLS_FRONTEND_SERVER_NAME=localhost")
		start := time.Now()
		startOfficial(t, server, dir, addr, env, "--allow-no-auth", "start")
		p := &stockProfile{name: "official-mtls", addr: addr, dir: filepath.Join(dir, "mtls"),
			creds:    []string{"--tls-cert", clientCert, "--tls-key", clientKey, "--tls-ca", ca.path},
			cliCreds: []string{"--tls-cert-path", clientCert, "--tls-key-path", clientKey, "--tls-ca-path", ca.path},
			temporal: config.Temporal{Address: addr, Namespace: "default", TLSCert: clientCert, TLSKey: clientKey, TLSCA: ca.path}}
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t, 2*time.Minute)
		p.waitServing(t, ctx, "temporal-system")
		t.Logf("official server serving in %s", time.Since(start).Round(time.Millisecond))
		// The namespace is the administrator's to create, with its retention.
		if out, err := p.cli(t, cli, "operator", "namespace", "create", "--retention", "72h"); err != nil {
			t.Fatalf("namespace create: %v\n%s", err, out)
		}
		p.waitServing(t, ctx, "default")
		// Without a client certificate the frontend refuses the handshake.
		noCert := config.Temporal{Address: addr, Namespace: "default", TLSCA: ca.path}
		if o, err := client.DialOptions(noCert); err != nil {
			t.Fatal(err)
		} else if _, err := dialFor(ctx, o, 5*time.Second); err == nil {
			t.Error("a client without a certificate was served")
		}
		runStockProfile(t, p, cli, wbin, sbin)
	})

	t.Run("jwt", func(t *testing.T) {
		issuer := newJWTIssuer(t, dir)
		admin := issuer.token(t, "warden-admin", "temporal-system:admin")
		writer := issuer.token(t, "warden-worker", "default:write")
		alice, bob := issuer.token(t, "alice", "default:write"), issuer.token(t, "bob", "default:write")
		reader := issuer.token(t, "auditor", "default:read")
		dyn := filepath.Join(dir, "dynamic-jwt.yaml")
		// The one key set: signals and starts record who sent them.
		if err := os.WriteFile(dyn, []byte("frontend.enablePrincipalPropagation:\n  - value: true\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		setupSchema(t, sqlTool, pg.pgPort, "stock_jwt")
		addr, env := officialEnv(t, pg.pgPort, "stock_jwt", dyn, true)
		env = append(env, "TEMPORAL_AUTH_AUTHORIZER=default", "TEMPORAL_AUTH_CLAIM_MAPPER=default",
			"TEMPORAL_JWT_KEY_SOURCE1=file://"+issuer.jwks,
			"TEMPORAL_TLS_FRONTEND_CERT="+serverCert, "TEMPORAL_TLS_FRONTEND_KEY="+serverKey)
		startOfficial(t, server, dir, addr, env, "start",
			"--service", "frontend", "--service", "internal-frontend", "--service", "history", "--service", "matching", "--service", "worker")
		as := func(token string) config.Temporal {
			return config.Temporal{Address: addr, Namespace: "default", TLSCA: ca.path, APIKey: token}
		}
		p := &stockProfile{name: "official-jwt", addr: addr, dir: filepath.Join(dir, "jwt"), temporal: as(admin),
			creds: []string{"--api-key", writer, "--tls-ca", ca.path}, cliCreds: []string{"--api-key", admin, "--tls-ca-path", ca.path}}
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t, 4*time.Minute)
		p.waitServing(t, ctx, "temporal-system")
		if out, err := p.cli(t, cli, "operator", "namespace", "create", "--retention", "72h"); err != nil {
			t.Fatalf("namespace create: %v\n%s", err, out)
		}
		c := p.waitServing(t, ctx, "default")
		// No token: refused.
		if o, err := client.DialOptions(as("")); err != nil {
			t.Fatal(err)
		} else if ac, err := dialFor(ctx, o, 10*time.Second); err == nil {
			_, err = ac.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
			ac.Close()
			if !errors.As(err, new(*serviceerror.PermissionDenied)) {
				t.Errorf("a client without a token: %v, want permission denied", err)
			}
		}

		// A writer's token may run turns but not create search
		// attributes: the worker refuses to start with the command.
		queue := "tq-jwt-" + tag()
		work := filepath.Join(p.dir, "work")
		if err := os.MkdirAll(work, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(p.dir, "worker.yaml")
		if err := os.WriteFile(cfg, []byte(contentConfig()), 0o644); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"--config", cfg, "--temporal-address", addr, "--namespace", "default", "--task-queue", queue,
			"--metrics-addr", "off", "--workdir", work}, p.creds...)
		refused := exec.CommandContext(ctx, wbin, args...)
		refused.Dir = p.dir
		out, err := refused.CombinedOutput()
		if err == nil || !strings.Contains(string(out), createCommand(addr, "default")) {
			t.Fatalf("worker with a writer's token: %v\n%s\nwant it to refuse, printing %q", err, out, createCommand(addr, "default"))
		}
		t.Logf("worker with a writer's token:\n%s", tail(string(out), 1200))
		// The printed command, with an administrator's token, creates them.
		var command []string
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "temporal" && f[1] == "operator" {
				command = f[1:]
			}
		}
		if out, err := runTemporal(t, cli, append(command, p.cliCreds...)...); err != nil {
			t.Fatalf("the printed command: %v\n%s", err, out)
		}
		w, log := startLoggedEnv(t, false, nil, wbin, p.dir, args...)
		defer killProcess(t, w)
		log.wait(t, ctx, "task queue "+queue)
		if strings.Contains(log.String(), "search attrs") {
			t.Errorf("the worker created search attributes again:\n%s", log)
		}
		wc := client.New(c, queue)
		wc.PollInterval = 50 * time.Millisecond
		ids := []string{"jwt-" + tag() + "-alice", "jwt-" + tag() + "-forged", "jwt-" + tag() + "-update"}
		for _, id := range ids {
			if _, err := wc.Start(ctx, id, clusterTurn(t, id)); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, func() bool {
				es, err := wc.ListPending(ctx, client.Filter{Workflow: id})
				return err == nil && len(es) == 1
			})
		}
		approve := func(token, id string, extra ...string) (string, error) {
			return runStarter(t, sbin, p.dir, append([]string{"approvals", "approve", id, "c2", "--config", cfg, "--address", addr,
				"--namespace", "default", "--task-queue", queue, "--api-key", token, "--tls-ca", ca.path}, extra...)...)
		}
		// A reader's token may list but not answer.
		if out, err := approve(reader, ids[0], "--by", "auditor", "--signal"); err == nil {
			t.Errorf("a reader's token answered: %s", out)
		}
		// Alice answers as herself; bob answers naming alice: the stock
		// server checks neither name, only that each token may write.
		if out, err := approve(alice, ids[0], "--by", "alice", "--signal"); err != nil {
			t.Fatalf("alice: %v\n%s", err, out)
		}
		if out, err := approve(bob, ids[1], "--by", "alice", "--signal"); err != nil {
			t.Fatalf("bob naming alice: %v\n%s", err, out)
		}
		// Alice answers with an Update: its acceptance is written by the
		// worker's workflow task, under the worker's principal.
		if out, err := approve(alice, ids[2], "--by", "alice"); err != nil {
			t.Fatalf("alice's update: %v\n%s", err, out)
		}
		for i, id := range ids {
			if res, err := wc.Result(ctx, id); err != nil || res.Answer != "done "+id {
				t.Fatalf("turn %s: %q, %v", id, res.Answer, err)
			}
			// Who sent the answer is the token's subject, recorded by the
			// server on the signal event (frontend.enablePrincipalPropagation).
			var principal string
			iter := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for iter.HasNext() {
				e, err := iter.Next()
				if err != nil {
					t.Fatal(err)
				}
				if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == workflows.SignalApprove ||
					e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED {
					principal = e.GetPrincipal().GetType() + ":" + e.GetPrincipal().GetName()
				}
			}
			if want := []string{"jwt:alice", "jwt:bob", "jwt:warden-worker"}[i]; principal != want {
				t.Errorf("turn %s: the answer's event records principal %q, want %q", id, principal, want)
			}
			// warden's audit records the approver the answer names.
			out, err := runStarter(t, sbin, p.dir, "audit", "--workflow", id, "--jsonl", "--config", cfg, "--address", addr,
				"--namespace", "default", "--api-key", admin, "--tls-ca", ca.path)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var r audit.Record
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("audit line %q: %v", line, err)
				}
				if r.Kind == audit.KindApproval {
					found = r.By == "alice"
				}
			}
			if !found {
				t.Errorf("turn %s: the audit does not name alice as the approver:\n%s", id, out)
			}
		}
	})
}

// dialFor dials with o and checks the connection within d.
func dialFor(ctx context.Context, o tclient.Options, d time.Duration) (tclient.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	o.Logger = quietLog()
	return tclient.DialContext(ctx, o)
}

// testCA is a certificate authority made by the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
	// path is the CA certificate's PEM file.
	path string
}

func newTestCA(t *testing.T, dir string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "warden test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{cert: cert, key: key, dir: dir, path: filepath.Join(dir, "ca.pem")}
	writePEM(t, ca.path, "CERTIFICATE", der)
	return ca
}

// issue makes a certificate for name signed by the CA: a server's (for
// localhost and 127.0.0.1, usable as a client too: the server's own
// services present it to each other) or a client's.
func (ca *testCA) issue(t *testing.T, name string, server bool) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+".key")
	writePEM(t, certPath, "CERTIFICATE", der)
	writePEM(t, keyPath, "PRIVATE KEY", keyDER)
	return certPath, keyPath
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// jwtIssuer signs ES256 tokens with a key the server reads from a JWKS
// file (its default token key provider, file:// source).
type jwtIssuer struct {
	key  *ecdsa.PrivateKey
	jwks string
}

func newJWTIssuer(t *testing.T, dir string) *jwtIssuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	point, err := key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	set, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "EC", "crv": "P-256", "kid": "warden-test", "use": "sig", "alg": "ES256", "x": b64(point[1:33]), "y": b64(point[33:]),
	}}})
	j := &jwtIssuer{key: key, jwks: filepath.Join(dir, "jwks.json")}
	if err := os.WriteFile(j.jwks, set, 0o644); err != nil {
		t.Fatal(err)
	}
	return j
}

// token is a JWT for subject with the server's default permissions claim
// ("NAMESPACE:read|write|worker|admin", temporal-system for the cluster).
func (j *jwtIssuer) token(t *testing.T, subject string, permissions ...string) string {
	t.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	header, _ := json.Marshal(map[string]string{"alg": "ES256", "typ": "JWT", "kid": "warden-test"})
	claims, _ := json.Marshal(map[string]any{"sub": subject, "permissions": permissions,
		"iat": time.Now().Unix(), "exp": time.Now().Add(2 * time.Hour).Unix()})
	signing := b64(header) + "." + b64(claims)
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, j.key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + b64(sig)
}
