package tests

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// TestRealWorkerNetwork is the egress suite against the worker as a
// deployment starts it (cmd/worker with a config file and flags, its
// metrics and inbox listening on loopback): a call whose rule names
// hosts reaches those hosts through the call's egress proxy and nothing
// else. A Go module proxy served on this machine's own (non-loopback)
// address, named in a network_for rule, serves `go mod download`; a
// second listener on that address that no rule names, a name that
// resolves to loopback ("localhost"), and, with network: true, the
// Temporal frontend, the worker's metrics and inbox listeners and a
// loopback listener are refused, and the audit lists each connection.
// The control: with backend.local.sandbox off, the same attempts reach
// every one of them.
func TestRealWorkerNetwork(t *testing.T) {
	ip := hostAddr(t)
	reg := goModuleProxy(t, ip)
	other := markerServer(t, ip+":0", "OTHER-HOST-REACHED")
	loop := markerServer(t, "127.0.0.1:0", "LOOPBACK-REACHED")
	_, loopPort, _ := net.SplitHostPort(loop)
	metricsAddr, inboxAddr := freeLoopback(t), freeLoopback(t)
	// The go command by its path: a service's PATH does not hold it.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []bool{false, true} {
		name := "sandbox_on"
		if off {
			name = "sandbox_off"
		}
		t.Run(name, func(t *testing.T) {
			w := startRealWorker(t, outside, off, "", "--metrics-addr", metricsAddr, "--inbox", "--inbox-listen", inboxAddr)
			modcache := filepath.Join(w.ws, "modcache")
			// The rule names the command as written: its environment
			// prefix is not among the variables a rule may look past.
			goCmd := "GOTOOLCHAIN=local GOTELEMETRY=off GOFLAGS=-modcacherw GOSUMDB=off GOPROXY=http://" + reg + " GOMODCACHE=" + modcache + " " + goBin + " mod download"
			named := sandboxPolicy(t, fmt.Sprintf(`network_for:
  - {rule: %q, hosts: [%q]}
  - {rule: "Bash(python3:*)", hosts: [%q, "localhost:%s"]}
`, "Bash("+goCmd+":*)", reg, reg, loopPort))
			m := modeRun{w: w, mode: permission.ModeDefault, rules: []string{"Bash(" + goCmd + ":*)", "Bash(python3:*)"}, sandbox: named}
			download := bash(goCmd + " -json example.test/hello@v1.0.0")
			rs, id := m.turnID(t, "registry", "", 4*time.Minute,
				[]attempt{{tool: "Bash", input: download}},
				[]attempt{{tool: "Bash", input: netProbe(other, "OTHER-HOST-REACHED")}},
				[]attempt{{tool: "Bash", input: netProbe("localhost:"+loopPort, "LOOPBACK-REACHED")}})
			zipPath := filepath.Join(modcache, "cache", "download", "example.test", "hello", "@v", "v1.0.0.zip")
			if _, err := os.Stat(zipPath); err != nil || rs[0].IsError {
				t.Errorf("go mod download through the proxy of a named registry failed (%v):\n%.2000s", err, rs[0].Content)
			}
			reachedOther, reachedLoop := probeReached(rs[1], "OTHER-HOST-REACHED"), probeReached(rs[2], "LOOPBACK-REACHED")
			if off != reachedOther || off != reachedLoop {
				t.Errorf("sandbox off %v: reached the unnamed host %v, the name resolving to loopback %v:\n%.1500s\n---\n%.1500s",
					off, reachedOther, reachedLoop, rs[1].Content, rs[2].Content)
			}
			if !off {
				for i, want := range []string{"not among the hosts", "loopback"} {
					if !strings.Contains(rs[i+1].Content, want) {
						t.Errorf("the refusal the model reads does not say %q:\n%.1500s", want, rs[i+1].Content)
					}
				}
				checkConnections(t, id, map[string]string{reg: "allowed", other: "refused", "localhost:" + loopPort: "refused"})
			}

			// network: true, any public host: still none of the worker's
			// own listeners nor loopback.
			all := modeRun{w: w, mode: permission.ModeDefault, rules: []string{"Bash(python3:*)"}, sandbox: sandboxPolicy(t, "network: true\n")}
			targets := []struct{ name, addr, marker string }{
				{"frontend", env.srv.Addr(), ""},
				{"metrics", metricsAddr, "# HELP"},
				{"inbox", inboxAddr, ""},
				{"loopback", loop, "LOOPBACK-REACHED"},
			}
			var steps [][]attempt
			for _, tg := range targets {
				steps = append(steps, []attempt{{tool: "Bash", input: netProbe(tg.addr, tg.marker)}})
			}
			rs = all.turn(t, "network-true", "", 3*time.Minute, steps...)
			for i, tg := range targets {
				if got := probeReached(rs[i], tg.marker); got != off {
					t.Errorf("network: true, sandbox off %v: %s (%s) reached %v:\n%.1500s", off, tg.name, tg.addr, got, rs[i].Content)
				}
			}
		})
	}
}

// sandboxPolicy reads a permission.sandbox section.
func sandboxPolicy(t *testing.T, y string) *permission.Sandbox {
	t.Helper()
	var s permission.Sandbox
	if err := yaml.Unmarshal([]byte(y), &s); err != nil {
		t.Fatalf("sandbox policy %q: %v", y, err)
	}
	return &s
}

// netProbe is a python3 command that tries addr (host:port) directly
// and, when the call has a proxy (HTTP_PROXY), through a CONNECT tunnel
// of it, and prints what each got: DIRECT-OK/DIRECT-ERR, TUNNEL <status
// line>, and the head of what a GET through the tunnel returned.
func netProbe(addr, marker string) map[string]any {
	host, port, _ := net.SplitHostPort(addr)
	return pyCall(fmt.Sprintf(`import socket
H,P=%q,%d
def direct():
  s=socket.create_connection((H,P),timeout=5); s.close(); return 'connected'
show('DIRECT',direct)
px=os.environ.get('HTTP_PROXY','')
if px:
  ph,pp=px.rsplit('/',1)[-1].split(':') if '//' in px else px.split(':')
  def tunnel():
    s=socket.create_connection((ph,int(pp)),timeout=5)
    s.sendall(('CONNECT %%s:%%d HTTP/1.1\r\nHost: %%s:%%d\r\n\r\n'%%(H,P,H,P)).encode())
    head=s.recv(4096).decode('latin-1')
    print('TUNNEL', head.splitlines()[0] if head else 'closed', flush=True)
    print('TUNNEL-BODY', head.replace('\r\n',' | ')[:600], flush=True)
    if ' 200' in head.splitlines()[0]:
      s.sendall(('GET / HTTP/1.0\r\nHost: %%s\r\n\r\n'%%H).encode())
      print('GOT', s.recv(4096).decode('latin-1')[:300].replace('\r\n',' | '), flush=True)
    s.close(); return 'done'
  show('VIA',tunnel)
print('WANT', %q, flush=True)
`, host, atoiPort(port), marker))
}

func atoiPort(p string) int { n, _ := strconv.Atoi(p); return n }

// probeReached says a netProbe got through: a direct connection, or a
// tunnel the proxy opened (and, for a marker, the server's answer).
func probeReached(r model.Message, marker string) bool {
	c := r.Content
	if strings.Contains(c, "DIRECT OK") {
		return true
	}
	if strings.Contains(c, "TUNNEL HTTP/1.1 200") || strings.Contains(c, "TUNNEL HTTP/1.0 200") {
		return marker == "" || strings.Contains(c, marker)
	}
	return false
}

// checkConnections checks that the audit of turn id lists a connection
// record for each host:port of want with its decision.
func checkConnections(t *testing.T, id string, want map[string]string) {
	t.Helper()
	recs, err := audit.Workflow(ctxT(t, time.Minute), env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range recs {
		if r.Kind == audit.KindConnection {
			lines = append(lines, r.Decision+" "+r.Reason)
		}
	}
	for hp, dec := range want {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, dec+" ") && strings.Contains(l, " "+hp) {
				found = true
			}
		}
		if !found {
			t.Errorf("the audit has no %s connection to %s; connection records:\n%s", dec, hp, strings.Join(lines, "\n"))
		}
	}
}

// hostAddr is this machine's first non-loopback IPv4 address: tools'
// HTTP clients (Go's, the go command's) never use a proxy for loopback.
func hostAddr(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatal("this machine has no non-loopback IPv4 address to serve the registry on")
	return ""
}

// freeLoopback is a free 127.0.0.1 port, for a listener the worker makes.
func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// markerServer serves marker to every HTTP request on addr and returns
// where it listens.
func markerServer(t *testing.T, addr, marker string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, marker) }),
		ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// goModuleProxy serves a Go module proxy (the GOPROXY protocol) holding
// example.test/hello v1.0.0 on ip and returns its host:port.
func goModuleProxy(t *testing.T, ip string) string {
	t.Helper()
	const mod, ver = "example.test/hello", "v1.0.0"
	gomod := "module " + mod + "\n\ngo 1.21\n"
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for name, body := range map[string]string{"go.mod": gomod, "hello.go": "package hello\n\n// Hello greets.\nfunc Hello() string { return \"hello\" }\n"} {
		f, err := zw.Create(mod + "@" + ver + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"/" + mod + "/@v/list":             []byte(ver + "\n"),
		"/" + mod + "/@v/" + ver + ".info": []byte(`{"Version":"` + ver + `","Time":"2026-01-01T00:00:00Z"}`),
		"/" + mod + "/@v/" + ver + ".mod":  []byte(gomod),
		"/" + mod + "/@v/" + ver + ".zip":  zb.Bytes(),
	}
	var hits atomic.Int64
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close(); t.Logf("module proxy served %d requests", hits.Load()) })
	return l.Addr().String()
}
