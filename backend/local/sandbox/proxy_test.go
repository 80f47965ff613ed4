package sandbox

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend/local/sandbox/child"
)

// TestProxyListener: a Proxy call's only way out is the listener the
// zygote made in its network namespace and handed to the worker: what
// the worker serves on it reaches the process at 127.0.0.1:3128, and a
// listener on the host's loopback does not. Control: with the host's
// network (Network, no Proxy) the host's loopback listener answers.
func TestProxyListener(t *testing.T) {
	z := zygoteOf(t, child.ZygoteSpec{})
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go serveLine(host, "HOST-LOOPBACK")
	hostPort := host.Addr().(*net.TCPAddr).Port
	script := `exec 3<>/dev/tcp/127.0.0.1/3128 && head -c 64 <&3; echo; ` +
		`(exec 4<>/dev/tcp/127.0.0.1/` + strconv.Itoa(hostPort) + ` && head -c 64 <&4) 2>&1; echo END`
	run := func(req Request) string {
		var out, errs bytes.Buffer
		req.Dir, req.Env, req.Argv = t.TempDir(), testEnv, []string{"bash", "-c", script}
		served := 0
		res, err := z.RunCall(context.Background(), req, Call{Stdout: &out, Stderr: &errs, Proxy: func(ln net.Listener) {
			served++
			serveLine(ln, "FROM-THE-WORKER")
		}})
		if err != nil {
			t.Fatal(err)
		}
		if req.Proxy && served != 1 {
			t.Errorf("proxy served %d times", served)
		}
		t.Logf("proxy %v: exit %d: %q", req.Proxy, res.ExitCode, out.String()+errs.String())
		return out.String() + errs.String()
	}
	out := run(Request{Proxy: true})
	if !strings.Contains(out, "FROM-THE-WORKER") || strings.Contains(out, "HOST-LOOPBACK") || !strings.Contains(out, "END") {
		t.Errorf("proxy call: %q", out)
	}
	if out := run(Request{Network: true}); !strings.Contains(out, "HOST-LOOPBACK") {
		t.Errorf("control (host network) did not reach the host's loopback: %q", out)
	}
}

// serveLine answers every connection on ln with line until ln closes.
func serveLine(ln net.Listener, line string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte(line + "\n"))
		c.Close()
	}
}
