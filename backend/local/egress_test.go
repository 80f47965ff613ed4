package local_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
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
		res, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"bash", "-c", script}, Dir: dir, Sandbox: prof, Timeout: time.Minute})
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
