package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/tools/backendtest"
)

// testImage is the workspace image the tests run; .ci/docker.sh builds it.
func testImage() string {
	if img := os.Getenv("WARDEN_DOCKER_IMAGE"); img != "" {
		return img
	}
	return "warden-workspace:latest"
}

// dockerClient returns a client for the test daemon. It skips the test when
// no daemon answers, unless WARDEN_REQUIRE_DOCKER is set.
func dockerClient(t testing.TB) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := NewClient(ctx)
	if err != nil {
		if os.Getenv("WARDEN_REQUIRE_DOCKER") == "" {
			t.Skipf("no Docker daemon (set WARDEN_REQUIRE_DOCKER=1 to fail instead): %v", err)
		}
		t.Fatalf("WARDEN_REQUIRE_DOCKER is set but no Docker daemon answers: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// newTest starts a workspace container owned by the test and removed
// when it ends.
func newTest(t testing.TB, cli *client.Client, cfg Config) *Backend {
	t.Helper()
	cfg.Client = cli
	if cfg.Image == "" {
		cfg.Image = testImage()
	}
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{"warden.test": t.Name()}
	}
	b, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

func testConformance(t *testing.T, session bool) {
	cli := dockerClient(t)
	owner := newTest(t, cli, Config{Session: session})
	backendtest.Run(t, func(t *testing.T) (backend.Backend, string) {
		// Each subtest attaches a fresh Backend to the shared workspace
		// container and gets its own empty directory in it.
		b := newTest(t, cli, Config{WorkspaceID: owner.WorkspaceID(), Session: session})
		if b.ContainerID() != owner.ContainerID() {
			t.Fatalf("attached to %s, want %s", short(b.ContainerID()), short(owner.ContainerID()))
		}
		wd := path.Join("/workspace", "t-"+nonce()[:12])
		res, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"mkdir", "-p", wd}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("mkdir %s: %v %+v", wd, err, res)
		}
		return b, wd
	})
}

func TestConformancePlain(t *testing.T)   { testConformance(t, false) }
func TestConformanceSession(t *testing.T) { testConformance(t, true) }

func TestConformanceNonRoot(t *testing.T) {
	// A non-root user: files go through execs so permissions apply, and
	// the suite's PermissionDenied test runs instead of skipping.
	cli := dockerClient(t)
	owner := newTest(t, cli, Config{User: "65534:65534", Session: true})
	backendtest.Run(t, func(t *testing.T) (backend.Backend, string) {
		b := newTest(t, cli, Config{WorkspaceID: owner.WorkspaceID(), User: "65534:65534", Session: true})
		wd := path.Join("/tmp", "t-"+nonce()[:12])
		res, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"mkdir", "-p", wd}, Dir: "/"})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("mkdir %s: %v %+v", wd, err, res)
		}
		return b, wd
	})
}

func run(t *testing.T, b *Backend, script string) backend.ExecResult {
	t.Helper()
	res, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"/bin/sh", "-c", script}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return res
}

func TestRecreateAfterRemove(t *testing.T) {
	for _, session := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "session"}[session], func(t *testing.T) {
			cli := dockerClient(t)
			b := newTest(t, cli, Config{Session: session})
			ctx := t.Context()
			if res := run(t, b, "echo one"); string(res.Stdout) != "one\n" {
				t.Fatalf("first exec: %+v", res)
			}
			old := b.ContainerID()
			if _, err := cli.ContainerRemove(ctx, old, client.ContainerRemoveOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			if res := run(t, b, "echo two"); string(res.Stdout) != "two\n" || res.ExitCode != 0 {
				t.Fatalf("exec after removal: %+v", res)
			}
			if b.ContainerID() == old {
				t.Fatalf("container was not recreated")
			}
			// File calls recover too.
			if _, err := cli.ContainerRemove(ctx, b.ContainerID(), client.ContainerRemoveOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			if err := b.WriteFile(ctx, "/workspace/x/f", []byte("hi")); err != nil {
				t.Fatalf("write after removal: %v", err)
			}
			if got, err := b.ReadFile(ctx, "/workspace/x/f"); err != nil || string(got) != "hi" {
				t.Fatalf("read: %q %v", got, err)
			}
			// Stat is a HEAD request, whose 404 has no body: a removed
			// container must not read as a missing path.
			if _, err := cli.ContainerRemove(ctx, b.ContainerID(), client.ContainerRemoveOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			if fi, err := b.Stat(ctx, "/workspace"); err != nil || !fi.IsDir {
				t.Fatalf("stat after removal: %+v %v", fi, err)
			}
		})
	}
}

func TestRestartStopped(t *testing.T) {
	cli := dockerClient(t)
	b := newTest(t, cli, Config{Session: true})
	run(t, b, "echo warm > /workspace/f")
	id := b.ContainerID()
	if _, err := cli.ContainerStop(t.Context(), id, client.ContainerStopOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := run(t, b, "cat /workspace/f"); string(res.Stdout) != "warm\n" {
		t.Fatalf("after stop: %+v", res)
	}
	if b.ContainerID() != id {
		t.Errorf("a stopped container was replaced instead of restarted")
	}
}

func TestCloseRemovesOnlyOwnContainer(t *testing.T) {
	cli := dockerClient(t)
	ctx := t.Context()
	b, err := New(ctx, Config{Image: testImage(), Client: cli, Labels: map[string]string{"warden.test": t.Name()}})
	if err != nil {
		t.Fatal(err)
	}
	id := b.ContainerID()
	// A second Backend attaches to the same workspace; closing it leaves
	// the container alone.
	other, err := New(ctx, Config{Image: testImage(), Client: cli, WorkspaceID: b.WorkspaceID()})
	if err != nil {
		t.Fatal(err)
	}
	if other.ContainerID() != id {
		t.Fatalf("attach found %s, want %s", short(other.ContainerID()), short(id))
	}
	if err := other.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err != nil {
		t.Fatalf("attached Close removed the container: %v", err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Fatalf("after Close, inspect: %v; want not found", err)
	}
}

func TestCleanup(t *testing.T) {
	cli := dockerClient(t)
	ctx := t.Context()
	labels := map[string]string{"warden.test": "cleanup-" + nonce()[:8]}
	var ids []string
	for range 2 {
		b, err := New(ctx, Config{Image: testImage(), Client: cli, Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.ContainerID())
	}
	keep := newTest(t, cli, Config{})
	if err := Cleanup(ctx, cli, labels); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
			t.Errorf("%s survived Cleanup: %v", short(id), err)
		}
	}
	if _, err := cli.ContainerInspect(ctx, keep.ContainerID(), client.ContainerInspectOptions{}); err != nil {
		t.Errorf("Cleanup removed a container without the labels: %v", err)
	}
}

func TestSession(t *testing.T) {
	cli := dockerClient(t)
	b := newTest(t, cli, Config{Session: true})
	ctx := t.Context()
	run(t, b, "true")
	s := b.sess
	if s == nil {
		t.Fatal("no session after a /bin/sh -c exec")
	}
	t.Run("Framing", func(t *testing.T) {
		// Output that imitates the protocol, has NULs and no final newline.
		script := `printf 'WARDEN-END-x\nWARDEN-BEGIN-y 0 0 0 0 0\n\0tail'; printf 'e\0rr' >&2; exit 7`
		res := run(t, b, script)
		if res.ExitCode != 7 || string(res.Stdout) != "WARDEN-END-x\nWARDEN-BEGIN-y 0 0 0 0 0\n\x00tail" || string(res.Stderr) != "e\x00rr" {
			t.Errorf("got %+v", res)
		}
	})
	t.Run("NoStateLeaks", func(t *testing.T) {
		run(t, b, "cd /; export LEAK=1; LEAK2=1")
		res := run(t, b, `pwd; echo "[$LEAK$LEAK2]"; umask`)
		if string(res.Stdout) != "/workspace\n[]\n0022\n" {
			t.Errorf("got %q", res.Stdout)
		}
	})
	t.Run("BackgroundOutputStaysOut", func(t *testing.T) {
		run(t, b, "(sleep 0.2; echo late; echo late >&2) &")
		time.Sleep(400 * time.Millisecond)
		if res := run(t, b, "echo now"); string(res.Stdout) != "now\n" || len(res.Stderr) != 0 {
			t.Errorf("got %q %q", res.Stdout, res.Stderr)
		}
	})
	t.Run("PrivateDirRemoved", func(t *testing.T) {
		run(t, b, `rm -rf "${TMPDIR:-/tmp}"/.warden-session-*`)
		if res := run(t, b, "echo still"); string(res.Stdout) != "still\n" || b.sess == nil {
			t.Errorf("got %+v", res)
		}
	})
	t.Run("MaxOutput", func(t *testing.T) {
		res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "head -c 5000 /dev/zero; echo short >&2"}, MaxOutput: 10})
		if err != nil || len(res.Stdout) != 10 || string(res.Stderr) != "short\n" || !res.Truncated {
			t.Errorf("got %d bytes %q truncated=%v err=%v", len(res.Stdout), res.Stderr, res.Truncated, err)
		}
	})
	t.Run("TimeoutKeepsSession", func(t *testing.T) {
		res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo started; sleep 30"}, Timeout: 300 * time.Millisecond})
		if err != nil || !res.TimedOut || res.ExitCode != -1 || string(res.Stdout) != "started\n" {
			t.Fatalf("got %+v %v", res, err)
		}
		if res := run(t, b, "echo after"); string(res.Stdout) != "after\n" {
			t.Errorf("after timeout: %+v", res)
		}
		if b.sess != s {
			t.Errorf("the session was restarted; want it to survive a timeout")
		}
		if res := run(t, b, "ps -o args | grep -c '^sleep 30' || true"); strings.TrimSpace(string(res.Stdout)) != "0" {
			t.Errorf("sleep survived: %q", res.Stdout)
		}
	})
	t.Run("CancelKeepsSession", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		_, err := b.Exec(cctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "sleep 30"}})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want deadline exceeded", err)
		}
		if res := run(t, b, "echo after"); string(res.Stdout) != "after\n" || b.sess != s {
			t.Errorf("after cancel: %+v (same session: %v)", res, b.sess == s)
		}
	})
	t.Run("BrokenSessionRestarts", func(t *testing.T) {
		// Killing the shell breaks the session; the next call must still
		// answer and a new session takes over.
		// The call that kills the shell itself fails: the backend cannot
		// know whether the command finished.
		_, _ = b.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "kill -9 $PPID"}})
		res := run(t, b, "echo back")
		if string(res.Stdout) != "back\n" {
			t.Fatalf("got %+v", res)
		}
		run(t, b, "true")
		if b.sess == nil || b.sess == s {
			t.Errorf("no new session after the old one broke")
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		errs := make(chan error, 8)
		for i := range 8 {
			go func() {
				res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo $0", strings.Repeat("x", i+1)}})
				if err == nil && string(res.Stdout) != strings.Repeat("x", i+1)+"\n" {
					err = errors.New("wrong output " + string(res.Stdout))
				}
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	})
}

func TestListDirHidden(t *testing.T) {
	cli := dockerClient(t)
	b := newTest(t, cli, Config{})
	ctx := t.Context()
	for _, n := range []string{".hidden", "b", "a b", "link"} {
		if n == "link" {
			run(t, b, "ln -s /workspace/d/b /workspace/d/link; ln -s /nowhere /workspace/d/dangling")
			continue
		}
		if err := b.WriteFile(ctx, "/workspace/d/"+n, []byte(n)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := b.ListDir(ctx, "/workspace/d")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
	}
	want := []string{".hidden", "a b", "b", "dangling", "link"}
	if !slices.Equal(names, want) || !sort.StringsAreSorted(names) {
		t.Errorf("ListDir = %q, want %q", names, want)
	}
	if got, err := b.ReadFile(ctx, "/workspace/d/link"); err != nil || string(got) != "b" {
		t.Errorf("read through symlink: %q %v", got, err)
	}
	if fi, err := b.Stat(ctx, "/workspace/d/link"); err != nil || fi.Size != 1 || fi.Name != "link" {
		t.Errorf("stat symlink: %+v %v", fi, err)
	}
	if err := b.WriteFile(ctx, "/workspace/d/link", []byte("via link")); err != nil {
		t.Fatal(err)
	}
	if got, err := b.ReadFile(ctx, "/workspace/d/b"); err != nil || string(got) != "via link" {
		t.Errorf("write through symlink: target holds %q %v", got, err)
	}
	if res := run(t, b, "test -L /workspace/d/link"); res.ExitCode != 0 {
		t.Errorf("WriteFile replaced the symlink")
	}
	if _, err := b.ListDir(ctx, "/workspace/d/b"); err == nil {
		t.Errorf("ListDir of a file succeeded")
	}
}

func benchExec(b *testing.B, session bool) {
	cli := dockerClient(b)
	bk := newTest(b, cli, Config{Session: session})
	ctx := b.Context()
	req := backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "true"}}
	if _, err := bk.Exec(ctx, req); err != nil { // warm up (starts the session)
		b.Fatal(err)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		res, err := bk.Exec(ctx, req)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
		durs = append(durs, time.Since(t0))
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Nanoseconds()), "median-ns/op")
}

// BenchmarkExecPlain runs `true` as a fresh API exec each time.
func BenchmarkExecPlain(b *testing.B) { benchExec(b, false) }

// BenchmarkExecSession runs `true` on the persistent shell.
func BenchmarkExecSession(b *testing.B) { benchExec(b, true) }

// TestExecEnv: backend.env entries (ExecEnv) reach every process, plain
// and on the session; the worker's own environment never does.
func TestExecEnv(t *testing.T) {
	cli := dockerClient(t)
	t.Setenv("WARDEN_TEST_WORKER_ONLY", "worker-secret")
	env := backend.ResolveEnv([]string{"WARDEN_TEST_WORKER_ONLY_PASSED=x", "CI=1"}, os.Environ())
	for _, session := range []bool{false, true} {
		b := newTest(t, cli, Config{Session: session, ExecEnv: env})
		res := run(t, b, "env")
		out := string(res.Stdout)
		if !strings.Contains(out, "WARDEN_TEST_WORKER_ONLY_PASSED=x\n") || !strings.Contains(out, "CI=1\n") || strings.Contains(out, "worker-secret") {
			t.Errorf("session=%v: container environment:\n%s", session, out)
		}
	}
}

// TestTraceEnv: a process run with a context carrying a span sees
// TRACEPARENT naming that span (plain exec and on the session); the
// control, a context without a span, sees no TRACEPARENT.
func TestTraceEnv(t *testing.T) {
	cli := dockerClient(t)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	for _, session := range []bool{false, true} {
		b := newTest(t, cli, Config{Session: session})
		ctx, span := tp.Tracer("test").Start(t.Context(), "tool")
		sc := span.SpanContext()
		res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo tp=$TRACEPARENT"}, Timeout: 30 * time.Second})
		span.End()
		want := "tp=00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01\n"
		if err != nil || string(res.Stdout) != want {
			t.Errorf("session=%v: with a span: %v stdout %q, want %q", session, err, res.Stdout, want)
		}
		if out := string(run(t, b, "env").Stdout); strings.Contains(out, "TRACEPARENT") || strings.Contains(out, "TRACESTATE") {
			t.Errorf("session=%v: control without a span: environment has trace context:\n%s", session, out)
		}
	}
}

// TestRemovedMidResult removes the container after a session command ran,
// while its output is on the way back. A command's caller is told the
// container went and took the output with it, and the command ran once;
// the backend's own read-only scripts (ListDir, Stat, Home, a non-root
// ReadFile) run again on the recovered workspace and succeed. The two
// cases run side by side, each with its own container: most of each is
// the daemon's delay in reporting the killed container gone.
func TestRemovedMidResult(t *testing.T) {
	cli := dockerClient(t)
	const size = 50 << 20
	// setup starts a session backend whose next command's result loses
	// its container once its header was read; removals counts them, ran
	// counts the runs of the command req.
	setup := func(t *testing.T) (b *Backend, req backend.ExecRequest, removals *int, ran func() int) {
		host := t.TempDir()
		b = newTest(t, cli, Config{Session: true, Mounts: []string{host + ":/workspace"}})
		armed := false
		removals = new(int)
		var removing sync.WaitGroup
		t.Cleanup(removing.Wait) // before Close, which newTest registered first
		b.afterHeader = func() {
			if !armed {
				return
			}
			armed = false
			*removals++
			// Kill first, then remove while the rest of the output is
			// read: a daemon removing a container waits for its exec
			// streams, which this hook holds back.
			id := b.ContainerID()
			if _, err := cli.ContainerKill(context.Background(), id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
				t.Errorf("kill: %v", err)
			}
			time.Sleep(300 * time.Millisecond)
			removing.Go(func() {
				if _, err := cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true}); err != nil {
					t.Errorf("remove: %v", err)
				}
			})
		}
		run(t, b, "true") // the session is up, with the hook
		armed = true
		req = backend.ExecRequest{Argv: []string{"/bin/sh", "-c", fmt.Sprintf(
			"mkdir -p /workspace/ran && mktemp /workspace/ran/XXXXXX >/dev/null && head -c %d /dev/zero", size)}}
		ran = func() int {
			ents, _ := os.ReadDir(filepath.Join(host, "ran"))
			return len(ents)
		}
		return b, req, removals, ran
	}
	t.Run("command", func(t *testing.T) {
		t.Parallel()
		b, req, removals, ran := setup(t)
		_, err := b.Exec(t.Context(), req)
		if !errors.Is(err, errContainerGone) || !strings.Contains(err.Error(), "removed while the command ran") {
			t.Fatalf("Exec with the container removed mid-result: err = %v", err)
		}
		if *removals != 1 || ran() != 1 {
			t.Fatalf("removals = %d, runs = %d; want 1 and 1", *removals, ran())
		}
	})
	t.Run("read-only", func(t *testing.T) {
		t.Parallel()
		b, req, removals, ran := setup(t)
		res, err := b.execReadOnly(t.Context(), req)
		if err != nil || len(res.Stdout) != size || res.ExitCode != 0 {
			t.Fatalf("execReadOnly: %d bytes, exit %d, %v", len(res.Stdout), res.ExitCode, err)
		}
		if *removals != 1 || ran() != 2 {
			t.Fatalf("removals = %d, runs = %d; want 1 and 2 (the first run was cut, the second answered)", *removals, ran())
		}
	})
}
