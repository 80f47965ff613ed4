package tests

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/internal/testhosts"
	"github.com/wardenhq/warden/permission"
)

// TestRealWorkerBrokeredSecret: a worker started with backend.secrets
// (GH_TOKEN from its own BROKER_REAL_TOKEN, bound to this machine's
// name, header Authorization, format "Bearer %s") runs a sandboxed curl
// that sends "token $GH_TOKEN" to the bound host and to localhost; the
// bound host receives "Bearer <value>", localhost the placeholder, and
// the value is nowhere in the tool's output, the audit, the workflow's
// history or the worker's output; the audit records the secret's use.
// The worker's roots (SSL_CERT_FILE) trust the test's hosts. Control: a
// worker given the same token as backend.env hands the process the
// value, which reaches both hosts.
func TestRealWorkerBrokeredSecret(t *testing.T) {
	name := testhosts.LoopbackName(t)
	ca := testhosts.New(t, name, "localhost")
	var mu sync.Mutex
	var seen []string
	serve := func(label string) int {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, label+" "+r.Header.Get("Authorization"))
			mu.Unlock()
			fmt.Fprintf(w, "REACHED-%s\n", label)
		}))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Cert}}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().(*net.TCPAddr).Port
	}
	bp, op := serve("BOUND"), serve("OTHER")
	roots := ca.Bundle(t)
	const value = "ghp_realWorkerBrokered0123456789XYZ"
	t.Setenv("SSL_CERT_FILE", roots)
	t.Setenv("BROKER_REAL_TOKEN", value)
	extra := fmt.Sprintf("backend:\n  secrets:\n    GH_TOKEN: {from_env: BROKER_REAL_TOKEN, hosts: [%q], header: Authorization, format: \"Bearer %%s\"}\n", name)
	w := startRealWorker(t, outside, false, extra)
	m := modeRun{w: w, mode: permission.ModeBypass, sandbox: sandboxPolicy(t, fmt.Sprintf("network: true\nhosts: [%q, localhost, 127.0.0.1]\n", name))}
	cmd := fmt.Sprintf(`echo "ENV: $(env | grep -c ghp_realWorker)"; echo "TOKEN: $GH_TOKEN"; `+
		`curl -sS --max-time 10 -H "Authorization: token $GH_TOKEN" https://%s:%d/x; `+
		`curl -sS --max-time 10 -H "Authorization: token $GH_TOKEN" https://localhost:%d/y`, name, bp, op)
	rs, id := m.turnID(t, "broker", "", 3*time.Minute, []attempt{{tool: "Bash", input: bash(cmd)}})
	out := rs[0].Content
	t.Logf("tool output:\n%s", out)
	mu.Lock()
	got := strings.Join(seen, "\n")
	mu.Unlock()
	t.Logf("hosts saw:\n%s", got)
	if !strings.Contains(out, "ENV: 0") || !strings.Contains(out, "TOKEN: warden-secret-GH_TOKEN-") ||
		!strings.Contains(out, "REACHED-BOUND") || !strings.Contains(out, "REACHED-OTHER") {
		t.Errorf("tool output:\n%s", out)
	}
	if !strings.Contains(got, "BOUND Bearer "+value) || !strings.Contains(got, "OTHER token warden-secret-GH_TOKEN-") || strings.Count(got, value) != 1 {
		t.Errorf("the hosts saw:\n%s", got)
	}
	if strings.Contains(out, value) {
		t.Errorf("the value is in the tool's output")
	}
	recs, err := audit.Workflow(ctxT(t, time.Minute), env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	used := false
	for _, r := range recs {
		s := fmt.Sprintf("%+v", r)
		if strings.Contains(s, value) {
			t.Errorf("the value is in an audit record: %s", s)
		}
		if r.Kind == audit.KindConnection {
			t.Logf("audit: %s %s", r.Decision, r.Reason)
			used = used || strings.Contains(r.Reason, "secret GH_TOKEN used for "+name)
		}
	}
	if !used {
		t.Errorf("no audit record says GH_TOKEN was used for %s", name)
	}
	it := env.c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ev.String(), value) {
			t.Errorf("the value is in history event %d (%s)", ev.GetEventId(), ev.GetEventType())
		}
	}
	if strings.Contains(w.stdout.String(), value) {
		t.Errorf("the value is in the worker's output")
	}

	// Control: the same token passed through as backend.env is the
	// process's own, and goes out as it sends it, to every host.
	t.Setenv("GH_TOKEN", value)
	// Its tools trust the test's hosts through a bundle in their
	// workspace (the worker's temporary directories are not theirs;
	// a .pem there would be hidden as a sensitive file).
	cw := startRealWorker(t, outside, false, "backend:\n  env: [GH_TOKEN, CURL_CA_BUNDLE=test-hosts.crt]\n")
	b, err := os.ReadFile(roots)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cw.ws, "test-hosts.crt"), string(b), 0o644)
	mu.Lock()
	seen = nil
	mu.Unlock()
	cm := modeRun{w: cw, mode: m.mode, sandbox: m.sandbox}
	crs := cm.turn(t, "broker-control", cw.ws, 3*time.Minute, []attempt{{tool: "Bash", input: bash(cmd)}})
	mu.Lock()
	got = strings.Join(seen, "\n")
	mu.Unlock()
	if cout := crs[0].Content; !strings.Contains(cout, "ENV: 1") || !strings.Contains(cout, "TOKEN: "+value) {
		t.Errorf("control: the token given as backend.env is not the process's:\n%s", cout)
	}
	if !strings.Contains(got, "BOUND token "+value) || !strings.Contains(got, "OTHER token "+value) {
		t.Errorf("control: the hosts saw:\n%s", got)
	}
}

// TestRealWorkerMethodRules: a worker with no brokered secret runs a
// turn whose network_for rule holds this machine's name to GET under
// /repos/**: a sandboxed curl's GET over https reaches the host (TLS
// terminated with the CA the worker makes at the first such call), its
// POST is answered 403 naming the rule, which the tool prints, and the
// audit records the refusal with its method and path; the host never
// sees the POST. Control: the same rule without methods lets it
// through.
func TestRealWorkerMethodRules(t *testing.T) {
	name := testhosts.LoopbackName(t)
	ca := testhosts.New(t, name)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		fmt.Fprintln(w, "REACHED-API")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	roots := ca.Bundle(t)
	t.Setenv("SSL_CERT_FILE", roots)
	w := startRealWorker(t, outside, false, "")
	get := bash(fmt.Sprintf("curl -sS --max-time 10 https://%s:%d/repos/o/r", name, port))
	post := bash(fmt.Sprintf("curl -sS --max-time 10 -X POST -d x https://%s:%d/repos/o/r", name, port))
	for _, held := range []bool{true, false} {
		methods := ""
		if held {
			methods = `, methods: [GET, HEAD], paths: ["/repos/**"]`
		}
		m := modeRun{w: w, mode: permission.ModeBypass, rules: []string{"Bash(curl:*)"},
			sandbox: sandboxPolicy(t, fmt.Sprintf("network_for:\n  - {rule: \"Bash(curl:*)\", hosts: [%q, 127.0.0.1]%s}\n", name, methods))}
		rs, id := m.turnID(t, fmt.Sprintf("methods-%v", held), "", 3*time.Minute,
			[]attempt{{tool: "Bash", input: get}}, []attempt{{tool: "Bash", input: post}})
		t.Logf("held %v:\nGET: %s\nPOST: %s", held, rs[0].Content, rs[1].Content)
		if !strings.Contains(rs[0].Content, "REACHED-API") {
			t.Errorf("held %v: GET not reached", held)
		}
		refused := strings.Contains(rs[1].Content, "is refused") && strings.Contains(rs[1].Content, "sandbox.network_for rule Bash(curl:*)")
		if refused != held || held == strings.Contains(rs[1].Content, "REACHED-API") {
			t.Errorf("held %v: POST answered %q", held, rs[1].Content)
		}
		if held {
			recs, err := audit.Workflow(ctxT(t, time.Minute), env.c, id)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range recs {
				if r.Kind == audit.KindConnection {
					t.Logf("audit: %s %s", r.Decision, r.Reason)
					found = found || r.Decision == audit.ConnectionRefused && strings.Contains(r.Reason, "POST "+name) && strings.Contains(r.Reason, "/repos/o/r")
				}
			}
			if !found {
				t.Errorf("the audit has no refused POST with its path")
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(seen, "\n"); strings.Count(got, "POST") != 1 {
		t.Errorf("the host saw %q, want one POST (the control's)", got)
	}
}
