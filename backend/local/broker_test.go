package local_test

import (
	"bytes"
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

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/backend/local/egress"
	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/internal/testhosts"
)

// headerLog is what a test host received in its requests' headers.
type headerLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *headerLog) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.seen, "\n")
}

// httpsHost serves HTTPS on 127.0.0.1 with cert, logging each request's
// method, path and headers; it answers "REACHED <name>".
func httpsHost(t *testing.T, cert tls.Certificate, name string) (int, *headerLog) {
	t.Helper()
	l := &headerLog{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Method+" "+r.URL.String())
		for k, vs := range r.Header {
			l.seen = append(l.seen, k+": "+strings.Join(vs, ","))
		}
		l.mu.Unlock()
		fmt.Fprintf(w, "REACHED %s\n", name)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port, l
}

// TestBrokeredSecretCurl: a sandboxed curl sends the placeholder it was
// given in GH_TOKEN; the bound host (this machine's name) receives the
// real value in Authorization, a second allowed host (localhost)
// receives the placeholder unchanged, and neither env, /proc/self/environ
// nor the output show the value. Control: the same value given as
// backend.env is in the environment.
func TestBrokeredSecretCurl(t *testing.T) {
	bound := testhosts.LoopbackName(t)
	ca := testhosts.New(t, bound, "localhost")
	bp, bLog := httpsHost(t, ca.Cert, "bound")
	op, oLog := httpsHost(t, ca.Cert, "other")
	// The test's "system roots": the machine's and the test hosts' CA.
	sys := ca.Bundle(t)
	const value = "ghp_brokeredREALvalue0123456789abcdef"
	br, err := egress.NewBroker(egress.BrokerConfig{Dir: t.TempDir(), Roots: ca.Pool, SystemBundle: sys, Secrets: []egress.Secret{
		{Name: "GH_TOKEN", Value: value, Hosts: []string{bound}, Header: "Authorization"}}})
	if err != nil {
		t.Fatal(err)
	}
	b := &local.Backend{Broker: br}
	defer b.Close()
	hosts := []string{bound, "localhost", "127.0.0.1"}
	script := fmt.Sprintf(`echo "ENV: $(env | grep -c %[1]s) $(cat /proc/self/environ | tr '\0' '\n' | grep -c %[1]s)"
echo "TOKEN: $GH_TOKEN"
echo "BOUND: $(curl -sS --max-time 10 -H "Authorization: Bearer $GH_TOKEN" https://%[2]s:%[3]d/x 2>&1)"
echo "OTHER: $(curl -sS --max-time 10 -H "Authorization: Bearer $GH_TOKEN" https://localhost:%[4]d/y 2>&1)"
echo "ADDR: $(curl -sS --max-time 10 -H "Authorization: Bearer $GH_TOKEN" https://127.0.0.1:%[3]d/z 2>&1)"
`, value[:12], bound, bp, op)
	res, out := execNetwork(t, b, "test grant", hosts, []string{"bash", "-c", script}, func(string) []string { return nil })
	if res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	if strings.Contains(out, value) {
		t.Errorf("the value reached the process's output:\n%s", out)
	}
	if l := lineOf(out, "ENV:"); l != "ENV: 0 0" {
		t.Errorf("environment: %q, want the value nowhere", l)
	}
	ph := strings.TrimPrefix(lineOf(out, "TOKEN: "), "TOKEN: ")
	if !strings.HasPrefix(ph, "warden-secret-GH_TOKEN-") {
		t.Errorf("GH_TOKEN is %q, want the placeholder", ph)
	}
	if !strings.Contains(lineOf(out, "BOUND:"), "REACHED bound") || !strings.Contains(lineOf(out, "OTHER:"), "REACHED other") {
		t.Errorf("not reached:\n%s", out)
	}
	bl, ol := bLog.all(), oLog.all()
	t.Logf("bound host saw:\n%s\nother host saw:\n%s", bl, ol)
	if !strings.Contains(bl, "Authorization: Bearer "+value) || strings.Count(bl, value) != 1 {
		t.Errorf("the bound host got the value %d times, want once (in the request by name)", strings.Count(bl, value))
	}
	if !strings.Contains(bl, "Authorization: Bearer "+ph) {
		t.Errorf("the request by address did not arrive with the placeholder")
	}
	if strings.Contains(ol, value) || !strings.Contains(ol, "Authorization: Bearer "+ph) {
		t.Errorf("the other host did not get the placeholder unchanged")
	}
	var used bool
	for _, c := range res.Connections {
		if strings.Contains(c.String(), value) {
			t.Errorf("the value is in a record: %s", c)
		}
		used = used || c.Secrets == "GH_TOKEN" && c.Host == bound
	}
	if !used {
		t.Errorf("no record says GH_TOKEN was used for %s", bound)
	}

	// Control: given as backend.env, the value is the process's.
	ctl := &local.Backend{Env: []string{"GH_TOKEN=" + value}}
	defer ctl.Close()
	_, out = execNetwork(t, ctl, "test grant", hosts, []string{"bash", "-c", script}, func(string) []string { return nil })
	if l := lineOf(out, "ENV:"); l != "ENV: 1 1" {
		t.Errorf("control: environment %q, want the value in both", l)
	}
}

// TestHTTPRulesCurl: a sandboxed curl whose call's rule holds the host
// to GET under /repos/** gets a GET through (over https, TLS terminated
// with the backend's own CA, made at the first such call) and its POST
// refused with a 403 the tool prints, naming the rule, and recorded
// with its method and path. Control: without the rule the POST passes.
func TestHTTPRulesCurl(t *testing.T) {
	bound := testhosts.LoopbackName(t)
	ca := testhosts.New(t, bound)
	bp, bLog := httpsHost(t, ca.Cert, "api")
	sys := ca.Bundle(t)
	// No secrets: the broker is the CA the rules need; the test gives it
	// roots that trust its host.
	br, err := egress.NewBroker(egress.BrokerConfig{Dir: t.TempDir(), Roots: ca.Pool, SystemBundle: sys})
	if err != nil {
		t.Fatal(err)
	}
	const by = "sandbox.network_for rule Bash(curl:*)"
	script := fmt.Sprintf(`echo "GET: $(curl -sS --max-time 10 https://%[1]s:%[2]d/repos/a/b 2>&1)"
echo "POST: $(curl -sS --max-time 10 -X POST -d x https://%[1]s:%[2]d/repos/a/b 2>&1)"
`, bound, bp)
	for _, withRule := range []bool{true, false} {
		b := &local.Backend{Broker: br}
		ws := t.TempDir()
		prof := &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}, Network: true, NetworkBy: by, Hosts: []string{bound, "127.0.0.1"}}
		if withRule {
			prof.HTTP = []calls.HTTPRule{{Hosts: []string{bound}, Methods: []string{"GET", "HEAD"}, Paths: []string{"/repos/**"}, By: by}}
		}
		res, err := b.Exec(backend.WithSandbox(t.Context(), prof), backend.ExecRequest{Argv: []string{"bash", "-c", script}, Dir: ws, Timeout: time.Minute})
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		out := string(res.Stdout) + string(res.Stderr)
		t.Logf("rule %v: exit %d:\n%s", withRule, res.ExitCode, out)
		refused := 0
		for _, c := range res.Connections {
			t.Logf("  %s", c)
			if !c.Allowed {
				refused++
				if c.Method != "POST" || c.Path != "/repos/a/b" || !strings.Contains(c.By, by) {
					t.Errorf("refusal record %s", c)
				}
			}
		}
		if !strings.Contains(lineOf(out, "GET:"), "REACHED api") {
			t.Errorf("rule %v: GET not reached", withRule)
		}
		post := lineOf(out, "POST:")
		if withRule && (!strings.Contains(post, "is refused") || !strings.Contains(post, by) || strings.Contains(post, "REACHED") || refused != 1) {
			t.Errorf("with the rule: POST %q, %d refusals recorded, want refused naming the rule, once", post, refused)
		}
		if !withRule && !strings.Contains(post, "REACHED api") {
			t.Errorf("control: POST %q, want reached", post)
		}
	}
	if n := strings.Count(bLog.all(), "POST "); n != 1 {
		t.Errorf("the host saw %d POSTs, want 1 (the control's)", n)
	}
}

// TestHTTPRulesOwnCA: on a backend with no broker, the first call whose
// requests are held to methods makes the backend's own CA: the call
// gets the bundle (SSL_CERT_FILE), curl trusts the terminated tunnel,
// and a POST the rule does not allow is refused before anything is
// sent to the host.
func TestHTTPRulesOwnCA(t *testing.T) {
	bound := testhosts.LoopbackName(t)
	ca := testhosts.New(t, bound)
	bp, bLog := httpsHost(t, ca.Cert, "api")
	const by = "sandbox.network_for rule Bash(curl:*)"
	b := &local.Backend{}
	defer b.Close()
	ws := t.TempDir()
	prof := &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}, Network: true, NetworkBy: by, Hosts: []string{bound, "127.0.0.1"},
		HTTP: []calls.HTTPRule{{Hosts: []string{bound}, Methods: []string{"GET"}, By: by}}}
	script := fmt.Sprintf(`echo "CA: $SSL_CERT_FILE $GIT_SSL_CAINFO"; echo "POST: $(curl -sS --max-time 10 -X POST -d x https://%s:%d/x 2>&1)"`, bound, bp)
	res, err := b.Exec(backend.WithSandbox(t.Context(), prof), backend.ExecRequest{Argv: []string{"bash", "-c", script}, Dir: ws, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	t.Logf("exit %d:\n%s", res.ExitCode, out)
	if !strings.Contains(lineOf(out, "CA:"), "ca-bundle.pem") {
		t.Errorf("no bundle in the environment: %q", lineOf(out, "CA:"))
	}
	if p := lineOf(out, "POST:"); !strings.Contains(p, "is refused") || !strings.Contains(p, by) {
		t.Errorf("POST: %q, want refused naming the rule", p)
	}
	if s := bLog.all(); s != "" {
		t.Errorf("the host saw: %s", s)
	}
}

// TestBrokeredSecretGit: git with the placeholder in the URL's user
// information (https://x-access-token:$GH_TOKEN@host/...) sends Basic
// credentials after the host's 401; the proxy decodes them, puts the
// value in and encodes them again, so the host receives the real token
// while git, its config and its output only ever hold the placeholder.
func TestBrokeredSecretGit(t *testing.T) {
	bound := testhosts.LoopbackName(t)
	ca := testhosts.New(t, bound)
	var mu sync.Mutex
	var creds []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		creds = append(creds, u+":"+p)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	sys := ca.Bundle(t)
	const value = "ghs_gitBrokeredValue0123456789"
	br, err := egress.NewBroker(egress.BrokerConfig{Dir: t.TempDir(), Roots: ca.Pool, SystemBundle: sys, Secrets: []egress.Secret{
		{Name: "GH_TOKEN", Value: value, Hosts: []string{bound}, Header: "Authorization"}}})
	if err != nil {
		t.Fatal(err)
	}
	b := &local.Backend{Broker: br}
	defer b.Close()
	script := fmt.Sprintf(`git ls-remote "https://x-access-token:$GH_TOKEN@%s:%d/o/r.git" 2>&1; echo "EXIT: $?"`, bound, port)
	res, out := execNetwork(t, b, "test grant", []string{bound, "127.0.0.1"}, []string{"bash", "-c", script}, func(string) []string { return nil })
	mu.Lock()
	got := strings.Join(creds, "\n")
	mu.Unlock()
	t.Logf("the host saw: %s", got)
	if got != "x-access-token:"+value {
		t.Errorf("the host's credentials: %q, want the value", got)
	}
	if strings.Contains(out, value) {
		t.Errorf("the value is in git's output")
	}
	for _, c := range res.Connections {
		if strings.Contains(c.String(), value) {
			t.Errorf("the value is in a record: %s", c)
		}
	}
}

// TestBrokeredSecretNotInMemory: a sandboxed python3 sends the
// placeholder it was given in GH_TOKEN to the bound host (which gets the
// real value), then dumps its whole address space, every readable
// mapping read through /proc/self/mem, as a core dump holds it. The dump
// holds the placeholder and not the value. Control: with the same value
// given as backend.env, the same dump holds the value, so the dump is
// one the value would be seen in.
func TestBrokeredSecretNotInMemory(t *testing.T) {
	bound := testhosts.LoopbackName(t)
	ca := testhosts.New(t, bound)
	bp, bLog := httpsHost(t, ca.Cert, "bound")
	const value = "ghp_brokeredMEMORYvalue0123456789abcdef"
	br, err := egress.NewBroker(egress.BrokerConfig{Dir: t.TempDir(), Roots: ca.Pool, SystemBundle: ca.Bundle(t), Secrets: []egress.Secret{
		{Name: "GH_TOKEN", Value: value, Hosts: []string{bound}, Header: "Authorization"}}})
	if err != nil {
		t.Fatal(err)
	}
	// The script names neither the value nor a part of it: the dump is
	// searched by the test.
	script := fmt.Sprintf(`import os, urllib.request
req = urllib.request.Request("https://%s:%d/mem", headers={"Authorization": "Bearer " + os.environ["GH_TOKEN"]})
try:
    print("REQ", urllib.request.urlopen(req, timeout=10).read().decode().strip())
except Exception as e:
    print("REQ error", e)
dump = bytearray()
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        span, perms = line.split()[:2]
        if "r" not in perms:
            continue
        lo, hi = (int(x, 16) for x in span.split("-"))
        try:
            mem.seek(lo)
            dump += mem.read(hi - lo)
        except (OSError, ValueError, OverflowError):
            pass
open("core.dump", "wb").write(dump)
print("DUMPED", len(dump))
`, bound, bp)
	dumpOf := func(b *local.Backend) ([]byte, string) {
		t.Helper()
		var ws string
		_, out := execNetwork(t, b, "test grant", []string{bound, "127.0.0.1"}, []string{"python3", "-c", script},
			func(dir string) []string { ws = dir; return nil })
		if !strings.Contains(out, "DUMPED") {
			t.Fatalf("no dump:\n%s", out)
		}
		dump, err := os.ReadFile(filepath.Join(ws, "core.dump"))
		if err != nil {
			t.Fatal(err)
		}
		return dump, out
	}
	b := &local.Backend{Broker: br}
	defer b.Close()
	dump, out := dumpOf(b)
	if !strings.Contains(lineOf(out, "REQ"), "REACHED bound") {
		t.Fatalf("the request did not reach the bound host:\n%s", out)
	}
	if !strings.Contains(bLog.all(), "Authorization: Bearer "+value) {
		t.Fatal("the bound host did not get the value: the dump would prove nothing")
	}
	t.Logf("dump: %d bytes, value %d times, placeholder %d times", len(dump), bytes.Count(dump, []byte(value)), bytes.Count(dump, []byte("warden-secret-GH_TOKEN-")))
	if n := bytes.Count(dump, []byte(value)); n != 0 {
		t.Errorf("the tool's memory holds the value %d times", n)
	}
	if bytes.Count(dump, []byte("warden-secret-GH_TOKEN-")) == 0 {
		t.Error("the dump does not hold the placeholder either: it is not a dump of the process's memory")
	}

	// Control: given as backend.env, the value is in the same dump.
	ctl := &local.Backend{Env: []string{"GH_TOKEN=" + value}}
	defer ctl.Close()
	dump, _ = dumpOf(ctl)
	if n := bytes.Count(dump, []byte(value)); n == 0 {
		t.Errorf("control: the dump (%d bytes) does not hold the value given as backend.env", len(dump))
	}
}
