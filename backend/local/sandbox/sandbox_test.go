package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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

// runner runs a script in a sandbox of spec, one way or the other.
type runner func(t *testing.T, spec Spec, script string) (string, error)

// viaZygote runs scripts through a zygote started for spec.Hide.
func viaZygote(t *testing.T, hide []string) runner {
	z, err := StartZygote(hide)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	return func(t *testing.T, spec Spec, script string) (string, error) {
		t.Helper()
		var out, errs bytes.Buffer
		res, err := z.Run(context.Background(), Request{Write: spec.Write, Protect: spec.Protect, Network: spec.Network, Dir: spec.Dir,
			Argv: []string{"/bin/bash", "-c", script}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}, nil, &out, &errs)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d", res.ExitCode)
		}
		return out.String() + errs.String(), err
	}
}

func TestSandboxConfinesAProcess(t *testing.T) {
	t.Run("helper", func(t *testing.T) { testConfines(t, func(Spec) runner { return run }) })
	t.Run("zygote", func(t *testing.T) { testConfines(t, func(s Spec) runner { return viaZygote(t, s.Hide) }) })
}

func testConfines(t *testing.T, mk func(Spec) runner) {
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
	run := mk(spec)

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
		{"signal the worker", fmt.Sprintf("kill -0 %d 2>/dev/null && echo ESCAPED", os.Getpid()), "ESCAPED"},
		{"own processes visible", "sleep 1 & test -r /proc/$!/stat && echo ok", ""},
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

// TestZygoteCancelled: a call cancelled before or while it runs ends at
// once: Run returns the cancellation, or the process killed.
func TestZygoteCancelled(t *testing.T) {
	z, err := StartZygote(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	dir := t.TempDir()
	for _, early := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		if early {
			cancel()
		} else {
			time.AfterFunc(200*time.Millisecond, cancel)
		}
		start := time.Now()
		var out, errs bytes.Buffer
		res, err := z.Run(ctx, Request{Write: []string{dir}, Dir: dir, Argv: []string{"/bin/sh", "-c", "sleep 30"},
			Env: []string{"PATH=/usr/bin:/bin"}}, nil, &out, &errs)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("early=%v: Run took %v", early, d)
		}
		if err == nil && res.Signal == 0 {
			t.Errorf("early=%v: the process was not stopped: %+v", early, res)
		}
		cancel()
	}
}

// cancelOnWrite cancels a call at its first output.
type cancelOnWrite struct {
	once   sync.Once
	cancel context.CancelFunc
}

func (c *cancelOnWrite) Write(p []byte) (int, error) { c.once.Do(c.cancel); return len(p), nil }

// TestZygoteCancelledAsItStarts cancels calls at their first output,
// which races the zygote's report that the process started: however the
// race goes, no process outlives its cancelled call.
func TestZygoteCancelledAsItStarts(t *testing.T) {
	z, err := StartZygote(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	dir := t.TempDir()
	marker := fmt.Sprintf("sleep 86.%d", os.Getpid())
	for range 100 {
		ctx, cancel := context.WithCancel(context.Background())
		_, _ = z.Run(ctx, Request{Write: []string{dir}, Dir: dir, Argv: []string{"/bin/sh", "-c", "echo x; exec " + marker},
			Env: []string{"PATH=/usr/bin:/bin"}}, nil, &cancelOnWrite{cancel: cancel}, io.Discard)
		cancel()
	}
	// The kill is asynchronous; a process that escaped it sleeps 86 s.
	deadline := time.Now().Add(10 * time.Second)
	for n := survivors(t, marker); n > 0; n = survivors(t, marker) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 100 cancelled processes still run", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// survivors counts the processes whose command line contains marker.
func survivors(t *testing.T, marker string) int {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})), marker) {
			n++
		}
	}
	return n
}
