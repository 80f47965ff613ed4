package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run runs a shell script in a sandbox of spec and returns its combined
// output and exit error.
func run(t *testing.T, spec Spec, script string) (string, error) {
	t.Helper()
	spec.Argv = []string{"/bin/bash", "-c", script}
	cmd, err := Command(context.Background(), spec, []string{"PATH=/usr/local/bin:/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestSandboxConfinesAProcess(t *testing.T) {
	if _, err := Check(); err != nil {
		t.Fatalf("the sandbox does not work on this machine: %v", err)
	}
	work, outside, secret := t.TempDir(), t.TempDir(), t.TempDir()
	key := filepath.Join(secret, "operator.key")
	if err := os.WriteFile(key, []byte("wk1.secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(work, "temporal-dev.yaml")
	if err := os.WriteFile(cfg, []byte("secret: yes"), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(work, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	spec := Spec{Write: []string{work}, Protect: []string{hooks}, Hide: []string{secret, cfg}, Dir: work}

	cases := []struct {
		name, script string
		// effect is what the script prints when the sandbox failed.
		effect string
	}{
		{"write inside", "echo ok > in.txt && cat in.txt", ""},
		{"write outside", fmt.Sprintf("echo x > %s/out.txt && echo ESCAPED", outside), "ESCAPED"},
		{"read hidden key", "cat " + key + " 2>/dev/null; ls " + secret, "wk1."},
		{"read hidden config", "cat " + cfg, "secret"},
		{"write git hook", "echo x > .git/hooks/pre-commit && echo ESCAPED", "ESCAPED"},
		{"connect host loopback", fmt.Sprintf("(exec 3<>/dev/tcp/127.0.0.1/%s) 2>/dev/null && echo ESCAPED", port), "ESCAPED"},
		{"see worker processes", fmt.Sprintf("test -e /proc/%d && echo ESCAPED", os.Getpid()), "ESCAPED"},
		{"unshare", "unshare -Urm sh -c 'umount /proc' 2>/dev/null && echo ESCAPED", "ESCAPED"},
		{"mount", "mount -t tmpfs none " + outside + " 2>/dev/null && echo ESCAPED", "ESCAPED"},
		{"capabilities", "grep CapEff /proc/self/status", "CapEff:\t0000003"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, spec, c.script)
			t.Logf("%s: %q (%v)", c.name, out, err)
			if c.effect == "" {
				if err != nil || !strings.Contains(out, "ok") {
					t.Fatalf("%v: %q", err, out)
				}
				return
			}
			if strings.Contains(out, c.effect) {
				t.Fatalf("the sandbox let it happen: %q", out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Error("a file was written outside the sandbox")
	}
	if _, err := os.Stat(filepath.Join(hooks, "pre-commit")); err == nil {
		t.Error("a git hook was written")
	}
	// The same probes with the network kept: the loopback listener is
	// then reachable, which shows the probe can succeed.
	spec.Network = true
	out, _ := run(t, spec, fmt.Sprintf("(exec 3<>/dev/tcp/127.0.0.1/%s) 2>/dev/null && echo REACHED", port))
	if !strings.Contains(out, "REACHED") {
		t.Errorf("with the network on, the loopback probe failed, so it proves nothing: %q", out)
	}
}
