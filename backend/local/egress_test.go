package local_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/calls"
)

// hostAddr is this machine's first non-loopback IPv4 address (eth0's).
// The sandboxed clients are pointed there, not at 127.0.0.1: curl, Go
// and npm reach localhost directly even with a proxy set, and inside
// the call's network namespace loopback is its own.
func hostAddr(t testing.TB) string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				return n.IP.String()
			}
		}
	}
	t.Fatal("this machine has no non-loopback IPv4 address to serve the test's hosts on")
	return ""
}

// serveText serves text over HTTP on addr:0 until the test ends and
// returns its host:port.
func serveText(t testing.TB, addr, text string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, text) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// fetchScript fetches http://<target>/ with curl in the ways a tool
// would: through the proxy the environment names (plain HTTP), through
// a CONNECT tunnel (-p), and directly (--noproxy), printing what each
// got or its HTTP code.
func fetchScript(targets ...string) string {
	var b strings.Builder
	for _, tg := range targets {
		fmt.Fprintf(&b, "echo %[1]s plain: $(curl -sS --max-time 5 http://%[1]s/ 2>&1); ", tg)
		fmt.Fprintf(&b, "echo %[1]s tunnel: $(curl -sS -p --max-time 5 http://%[1]s/ 2>&1); ", tg)
		fmt.Fprintf(&b, "echo %[1]s direct: $(curl -sS --noproxy '*' --max-time 3 http://%[1]s/ 2>&1); ", tg)
	}
	return b.String()
}

// lineOf returns the output line that starts with prefix.
func lineOf(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestEgressProxy: a sandboxed call with the network reaches the host
// its profile names (on this machine's eth0 address, named as an
// address entry) through its egress proxy, by plain HTTP and through a
// CONNECT tunnel, and never directly; a second listener it does not
// name is refused, and each connection is in the result. With the
// network off nothing gets out. Control: unsandboxed, both listeners
// answer directly. The same holds on the re-executed helper's path (a
// call whose directory lies in a tree the zygote hides).
func TestEgressProxy(t *testing.T) {
	ip := hostAddr(t)
	named, other := serveText(t, ip, "REACHED-NAMED"), serveText(t, ip, "REACHED-OTHER")
	script := fetchScript(named, other)
	parent := t.TempDir()
	ws, hiddenWS := filepath.Join(parent, "ws"), filepath.Join(t.TempDir(), "hidden", "ws")
	for _, d := range []string{ws, hiddenWS} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b := &local.Backend{Workdir: ws, Hide: []string{filepath.Dir(hiddenWS)}}
	defer b.Close()
	run := func(b *local.Backend, dir string, prof *calls.Sandbox) (backend.ExecResult, string) {
		t.Helper()
		res, err := b.Exec(backend.WithSandbox(t.Context(), prof), backend.ExecRequest{Argv: []string{"bash", "-c", script}, Dir: dir, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		out := string(res.Stdout) + string(res.Stderr)
		t.Logf("exit %d:\n%s", res.ExitCode, out)
		for _, c := range res.Connections {
			t.Logf("  %s", c)
		}
		return res, out
	}
	profile := func(dir string, network bool) *calls.Sandbox {
		p := &calls.Sandbox{Write: []string{dir}, Dirs: []string{dir}}
		if network {
			p.Network, p.NetworkBy, p.Hosts = true, "test rule Bash(curl:*)", []string{named}
		}
		return p
	}
	for _, path := range []struct{ name, dir string }{{"zygote", ws}, {"helper", hiddenWS}} {
		t.Run(path.name, func(t *testing.T) {
			res, out := run(b, path.dir, profile(path.dir, true))
			if l := lineOf(out, named+" plain:"); !strings.HasSuffix(l, "REACHED-NAMED") {
				t.Errorf("named host, plain HTTP: %q", l)
			}
			if l := lineOf(out, named+" tunnel:"); !strings.HasSuffix(l, "REACHED-NAMED") {
				t.Errorf("named host, CONNECT: %q", l)
			}
			for _, l := range []string{lineOf(out, named+" direct:"), lineOf(out, other+" direct:")} {
				if strings.Contains(l, "REACHED") {
					t.Errorf("reached directly: %q", l)
				}
			}
			for _, l := range []string{lineOf(out, other+" plain:"), lineOf(out, other+" tunnel:")} {
				if strings.Contains(l, "REACHED") {
					t.Errorf("unnamed host reached: %q", l)
				}
			}
			if l := lineOf(out, other+" tunnel:"); !strings.Contains(l, "403") {
				t.Errorf("unnamed host through a tunnel: %q, want curl's 403", l)
			}
			var allowed, refused int
			for _, c := range res.Connections {
				hp := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
				switch {
				case c.Allowed && hp == named && c.Received > 0 && c.Addr == named && strings.Contains(c.By, "test rule Bash(curl:*)"):
					allowed++
				case !c.Allowed && hp == other && strings.Contains(c.By, "is not among the hosts this call may reach (test rule Bash(curl:*): hosts "+named+")"):
					refused++
				default:
					t.Errorf("unexpected connection: %s", c)
				}
			}
			if allowed != 2 || refused != 2 {
				t.Errorf("connections: %d allowed, %d refused; want 2 and 2", allowed, refused)
			}
			res, out = run(b, path.dir, profile(path.dir, false))
			if strings.Contains(out, "REACHED") || len(res.Connections) != 0 {
				t.Errorf("network off: something got out")
			}
		})
	}
	t.Run("control: unsandboxed", func(t *testing.T) {
		u := &local.Backend{Workdir: ws, Unsandboxed: true}
		defer u.Close()
		_, out := run(u, ws, profile(ws, true))
		for _, tg := range []string{named, other} {
			if l := lineOf(out, tg+" direct:"); !strings.HasSuffix(l, "REACHED-"+map[bool]string{true: "NAMED", false: "OTHER"}[tg == named]) {
				t.Errorf("unsandboxed, %s: %q", tg, l)
			}
		}
	})
}

// execNetwork runs argv on b in a fresh workspace with the network to
// hosts (granted by by), with the environment env gives for the
// workspace, and returns the result and its output, logging both and
// the connections.
func execNetwork(t *testing.T, b *local.Backend, by string, hosts, argv []string, env func(ws string) []string) (backend.ExecResult, string) {
	t.Helper()
	ws := t.TempDir()
	prof := &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}, Network: true, NetworkBy: by, Hosts: hosts}
	res, err := b.Exec(backend.WithSandbox(t.Context(), prof), backend.ExecRequest{Argv: argv, Dir: ws, Timeout: 2 * time.Minute, Env: env(ws)})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	t.Logf("hosts %v: exit %d: %s", hosts, res.ExitCode, out)
	for _, c := range res.Connections {
		t.Logf("  %s", c)
	}
	return res, out
}

// goProxyDir lays out a Go module proxy (the GOPROXY file protocol:
// <module>/@v/list, .info, .mod, .zip) holding mod@version, copied
// from what `go mod download -json` puts in the module cache.
func goProxyDir(t *testing.T, mod, version string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", mod+"@"+version).Output()
	if err != nil {
		t.Fatalf("go mod download %s@%s: %v", mod, version, err)
	}
	var dl struct{ Info, GoMod, Zip string }
	if err := json.Unmarshal(out, &dl); err != nil || dl.Zip == "" {
		t.Fatalf("go mod download: %s (%v)", out, err)
	}
	dir := t.TempDir()
	v := filepath.Join(dir, mod, "@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v, "list"), []byte(version+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for ext, src := range map[string]string{".info": dl.Info, ".mod": dl.GoMod, ".zip": dl.Zip} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(v, version+ext), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestGoModDownloadThroughProxy: a Go module proxy served on this
// machine's eth0 address, named as the call's host, serves a sandboxed
// `go mod download` through the egress proxy; not named (the call may
// reach only proxy.golang.org), the download fails and the refusal is
// recorded. Control: unsandboxed, the download succeeds directly.
func TestGoModDownloadThroughProxy(t *testing.T) {
	const mod, version = "github.com/bmatcuk/doublestar/v4", "v4.10.4"
	ln, err := net.Listen("tcp", net.JoinHostPort(hostAddr(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(goProxyDir(t, mod, version)))}
	go srv.Serve(ln)
	defer srv.Close()
	registry := ln.Addr().String()
	download := func(b *local.Backend, hosts []string) (backend.ExecResult, string) {
		t.Helper()
		return execNetwork(t, b, "test rule Bash(go mod download:*)", hosts, []string{"go", "mod", "download", "-json", mod + "@" + version},
			func(ws string) []string {
				return []string{"GOPROXY=http://" + registry, "GOSUMDB=off", "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local",
					"GOMODCACHE=" + filepath.Join(ws, "modcache"), "GOPATH=" + filepath.Join(ws, "gopath")}
			})
	}
	b := local.New(t.TempDir())
	defer b.Close()
	res, out := download(b, []string{registry})
	if res.ExitCode != 0 || !strings.Contains(out, `"Sum": "h1:`) {
		t.Errorf("named registry: exit %d", res.ExitCode)
	}
	var got int64
	for _, c := range res.Connections {
		if !c.Allowed || net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) != registry {
			t.Errorf("connection: %s", c)
		}
		got += c.Received
	}
	if len(res.Connections) == 0 || got == 0 {
		t.Errorf("no allowed connection with bytes recorded: %v", res.Connections)
	}
	res, _ = download(b, []string{"proxy.golang.org"})
	if res.ExitCode == 0 {
		t.Error("unnamed registry: the download succeeded")
	}
	if len(res.Connections) == 0 || res.Connections[0].Allowed || !strings.Contains(res.Connections[0].By, "add it to the hosts of test rule") {
		t.Errorf("unnamed registry: connections %v", res.Connections)
	}
	u := &local.Backend{Workdir: t.TempDir(), Unsandboxed: true}
	defer u.Close()
	if res, _ := download(u, []string{"proxy.golang.org"}); res.ExitCode != 0 {
		t.Errorf("control (unsandboxed): exit %d", res.ExitCode)
	}
}

// TestEgressLocalServices: with `network: true` (Hosts "*") a
// sandboxed call asking its proxy for the worker's local services (a
// listener on 127.0.0.1 as the Temporal frontend, the inbox and the
// metrics have, one on this machine's eth0 address, and localhost, a
// name that resolves to 127.0.0.1) is refused each, by plain HTTP and
// through CONNECT; a name resolving to loopback is reached only once
// 127.0.0.1 is named. Control: unsandboxed, each answers.
func TestEgressLocalServices(t *testing.T) {
	loop := serveText(t, "127.0.0.1", "REACHED")
	_, port, _ := net.SplitHostPort(loop)
	eth := serveText(t, hostAddr(t), "REACHED")
	targets := []string{loop, eth, "localhost:" + port}
	// Through the proxy by name, as curl does not for localhost unless told.
	var script strings.Builder
	for _, tg := range targets {
		for _, flag := range []string{"", "-p"} {
			fmt.Fprintf(&script, "echo %s %s: $(curl -sS %s --noproxy '' -x http://127.0.0.1:3128 --max-time 5 http://%s/ 2>&1); ", tg, map[string]string{"": "plain", "-p": "tunnel"}[flag], flag, tg)
		}
	}
	ws := t.TempDir()
	b := local.New(ws)
	defer b.Close()
	run := func(b *local.Backend, hosts ...string) (backend.ExecResult, string) {
		t.Helper()
		prof := &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}, Network: true, NetworkBy: "network: true", Hosts: hosts}
		res, err := b.Exec(backend.WithSandbox(t.Context(), prof), backend.ExecRequest{Argv: []string{"bash", "-c", script.String()}, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		out := string(res.Stdout) + string(res.Stderr)
		t.Logf("hosts %v:\n%s", hosts, out)
		return res, out
	}
	res, out := run(b, "*")
	if strings.Contains(out, "REACHED") {
		t.Error(`network: true reached a local service`)
	}
	if n := strings.Count(out, "response 403") + strings.Count(out, `which no host name and no "*" reaches`); n != 6 {
		t.Errorf("%d refusals in the output, want 6", n)
	}
	refused := 0
	for _, c := range res.Connections {
		if !c.Allowed && strings.Contains(c.By, "which no host name and no \"*\" reaches") {
			refused++
		}
	}
	if refused != 6 || len(res.Connections) != 6 {
		t.Errorf("connections: %v", res.Connections)
	}
	_, out = run(b, "localhost:"+port)
	if strings.Contains(out, "REACHED") {
		t.Error("a name resolving to 127.0.0.1 reached loopback")
	}
	_, out = run(b, "localhost:"+port, "127.0.0.1")
	if l := lineOf(out, "localhost:"+port+" tunnel:"); !strings.HasSuffix(l, "REACHED") {
		t.Errorf("localhost with 127.0.0.1 named: %q", l)
	}
	u := &local.Backend{Workdir: ws, Unsandboxed: true}
	defer u.Close()
	script.Reset()
	for _, tg := range targets {
		fmt.Fprintf(&script, "echo %s direct: $(curl -sS --noproxy '*' --max-time 5 http://%s/ 2>&1); ", tg, tg)
	}
	if _, out := run(u, "*"); strings.Count(out, "REACHED") != 3 {
		t.Error("control (unsandboxed): not every service answered")
	}
}

// BenchmarkExecProxy: what the network costs a sandboxed call: `true`
// with the network off, and on (a network namespace with the egress
// proxy served for the call), on the zygote's path.
func BenchmarkExecProxy(b *testing.B) {
	ws := b.TempDir()
	lb := local.New(ws)
	defer lb.Close()
	for _, tc := range []struct {
		name    string
		network bool
	}{{"off", false}, {"proxy", true}} {
		prof := &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}, Network: tc.network, Hosts: []string{"*"}}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				res, err := lb.Exec(backend.WithSandbox(b.Context(), prof), backend.ExecRequest{Argv: []string{"true"}})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("exit %d: %v: %s", res.ExitCode, err, res.Stderr)
				}
			}
		})
	}
}

// npmRegistry serves one package, made with npm pack, the way the npm
// registry does (its packument and its tarball), on addr.
func npmRegistry(t *testing.T, addr string) string {
	t.Helper()
	src, out := t.TempDir(), t.TempDir()
	const name = "warden-egress-demo"
	if err := os.WriteFile(filepath.Join(src, "package.json"), []byte(`{"name":"`+name+`","version":"1.0.0","main":"index.js"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "index.js"), []byte("module.exports = 'from the local registry';\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("npm", "pack", "--json", "--pack-destination", out)
	cmd.Dir, cmd.Env = src, append(os.Environ(), "npm_config_cache="+filepath.Join(out, "cache"), "npm_config_offline=true")
	js, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm pack: %v", err)
	}
	var packed []struct{ Filename, Shasum, Integrity string }
	if err := json.Unmarshal(js, &packed); err != nil || len(packed) != 1 {
		t.Fatalf("npm pack: %s (%v)", js, err)
	}
	tgz, err := os.ReadFile(filepath.Join(out, packed[0].Filename))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	doc, _ := json.Marshal(map[string]any{
		"name": name, "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{"name": name, "version": "1.0.0", "main": "index.js",
			"dist": map[string]string{"tarball": base + "/" + name + "/-/" + packed[0].Filename, "shasum": packed[0].Shasum, "integrity": packed[0].Integrity}}},
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/"+name, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	})
	mux.HandleFunc("/"+name+"/-/"+packed[0].Filename, func(w http.ResponseWriter, _ *http.Request) { w.Write(tgz) })
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestNpmInstallThroughProxy: npm installs a package from a registry
// served on this machine's eth0 address through the egress proxy when
// the registry is named, and fails, the refusal recorded, when it is
// not. Control: unsandboxed, the install succeeds.
func TestNpmInstallThroughProxy(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("WARDEN_REQUIRE_TOOLS") == "1" {
			t.Fatal("npm is not installed (WARDEN_REQUIRE_TOOLS=1: scripts/test.sh runs this test)")
		}
		t.Skip("npm is not installed (WARDEN_REQUIRE_TOOLS=1 makes this a failure)")
	}
	registry := npmRegistry(t, hostAddr(t))
	install := func(b *local.Backend, hosts []string) (backend.ExecResult, string) {
		t.Helper()
		return execNetwork(t, b, "test rule Bash(npm install:*)", hosts,
			[]string{"sh", "-c", "npm install --no-audit --no-fund --fetch-retries=0 warden-egress-demo && node -e 'console.log(require(\"warden-egress-demo\"))'"},
			func(ws string) []string {
				return []string{"npm_config_registry=http://" + registry + "/", "npm_config_cache=" + filepath.Join(ws, ".npm"),
					"npm_config_logs_dir=" + filepath.Join(ws, ".npm-logs"), "npm_config_update_notifier=false"}
			})
	}
	b := local.New(t.TempDir())
	defer b.Close()
	res, out := install(b, []string{registry})
	if res.ExitCode != 0 || !strings.Contains(out, "from the local registry") {
		t.Errorf("named registry: exit %d", res.ExitCode)
	}
	if len(res.Connections) == 0 {
		t.Error("named registry: no connection recorded")
	}
	for _, c := range res.Connections {
		if !c.Allowed {
			t.Errorf("named registry: %s", c)
		}
	}
	res, _ = install(b, []string{"registry.npmjs.org"})
	if res.ExitCode == 0 || len(res.Connections) == 0 || res.Connections[0].Allowed {
		t.Errorf("unnamed registry: exit %d, connections %v", res.ExitCode, res.Connections)
	}
	u := &local.Backend{Workdir: t.TempDir(), Unsandboxed: true}
	defer u.Close()
	if res, _ := install(u, []string{"registry.npmjs.org"}); res.ExitCode != 0 {
		t.Errorf("control (unsandboxed): exit %d", res.ExitCode)
	}
}
