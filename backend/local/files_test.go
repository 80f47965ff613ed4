package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/calls"
)

// TestFileOperationsActOnRealPaths: the file operations, which run inside
// the worker, refuse its /proc entries, the hidden paths, links out of the
// working directories and hard links to hidden files, and follow links
// that stay inside.
func TestFileOperationsActOnRealPaths(t *testing.T) {
	ws, out, secret := t.TempDir(), t.TempDir(), t.TempDir()
	key := filepath.Join(secret, "operator.key")
	must(t, os.WriteFile(key, []byte("wk1.x"), 0o600))
	must(t, os.WriteFile(filepath.Join(ws, "in.txt"), []byte("inside"), 0o644))
	must(t, os.WriteFile(filepath.Join(out, "out.txt"), []byte("outside"), 0o644))
	must(t, os.Symlink(filepath.Join(ws, "in.txt"), filepath.Join(ws, "inlink")))
	must(t, os.Symlink(filepath.Join(out, "out.txt"), filepath.Join(ws, "outlink")))
	must(t, os.Symlink(out, filepath.Join(ws, "outdir")))
	must(t, os.Symlink(key, filepath.Join(ws, "keylink")))
	must(t, os.Link(key, filepath.Join(ws, "keyhard")))
	must(t, os.Link(filepath.Join(out, "out.txt"), filepath.Join(ws, "outhard")))
	b := &local.Backend{Workdir: ws, Hide: []string{secret}}
	ctx := backend.WithSandbox(context.Background(), &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}})

	if got, err := b.ReadFile(ctx, filepath.Join(ws, "inlink")); err != nil || string(got) != "inside" {
		t.Errorf("a link inside the workspace: %q %v", got, err)
	}
	if got, err := b.ReadFile(ctx, filepath.Join(ws, "outhard")); err != nil || string(got) != "outside" {
		t.Errorf("reading a hard-linked file that is not hidden: %q %v", got, err)
	}
	refused := []struct {
		name string
		err  error
	}{
		{"read through a link out", read(ctx, b, filepath.Join(ws, "outlink"))},
		{"read a link to a hidden file", read(ctx, b, filepath.Join(ws, "keylink"))},
		{"read a hard link to a hidden file", read(ctx, b, filepath.Join(ws, "keyhard"))},
		{"read a hidden file", read(ctx, b, key)},
		{"read /proc/self", read(ctx, b, "/proc/self/status")},
		{"read /proc/<pid>", read(ctx, b, "/proc/1/cmdline")},
		{"write through a linked directory", b.WriteFile(ctx, filepath.Join(ws, "outdir", "new.txt"), []byte("x"))},
		{"write through a hard link", b.WriteFile(ctx, filepath.Join(ws, "outhard"), []byte("x"))},
		{"stat through a link out", stat(ctx, b, filepath.Join(ws, "outlink"))},
		{"list a hidden directory", list(ctx, b, secret)},
	}
	for _, r := range refused {
		if r.err == nil || !strings.Contains(r.err.Error(), "refused") {
			t.Errorf("%s: %v, want refused", r.name, r.err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "new.txt")); err == nil {
		t.Error("a file was written through the linked directory")
	}
	if got, _ := os.ReadFile(filepath.Join(out, "out.txt")); string(got) != "outside" {
		t.Errorf("the hard-linked file outside was changed: %q", got)
	}
	// The same paths without links work, and a new file is written.
	if err := b.WriteFile(ctx, filepath.Join(ws, "sub", "new.txt"), []byte("x")); err != nil {
		t.Errorf("write a new file inside: %v", err)
	}
}

// TestSandboxCaches: a call that may write gets caches of its own; a
// read-only call gets none and writes nothing.
func TestSandboxCaches(t *testing.T) {
	ws, cache := t.TempDir(), t.TempDir()
	b := &local.Backend{Workdir: ws, CacheDir: cache}
	defer b.Close()
	ctx := context.Background()
	res, err := b.Exec(backend.WithSandbox(ctx, &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}}),
		backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo $GOCACHE; mkdir -p $GOCACHE && touch $GOCACHE/x && echo written"}})
	if err != nil || !strings.Contains(string(res.Stdout), filepath.Join(cache, "go-build")) || !strings.Contains(string(res.Stdout), "written") {
		t.Errorf("writing call: %v %q %q", err, res.Stdout, res.Stderr)
	}
	res, err = b.Exec(backend.WithSandbox(ctx, &calls.Sandbox{Dirs: []string{ws}}),
		backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo GOCACHE=$GOCACHE; touch " + filepath.Join(cache, "y") + " && echo written"}})
	if err != nil || strings.Contains(string(res.Stdout), "written") || strings.Contains(string(res.Stdout), cache) {
		t.Errorf("read-only call: %v %q", err, res.Stdout)
	}
}

func read(ctx context.Context, b *local.Backend, p string) error {
	_, err := b.ReadFile(ctx, p)
	return err
}
func stat(ctx context.Context, b *local.Backend, p string) error {
	_, err := b.Stat(ctx, p)
	return err
}
func list(ctx context.Context, b *local.Backend, p string) error {
	_, err := b.ListDir(ctx, p)
	return err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSandboxHidesCredentialsAndSockets: a sandboxed process finds the
// home directory's credentials and /run (the daemons' sockets) empty;
// without the sandbox the same probe sees both.
func TestSandboxHidesCredentialsAndSockets(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	must(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	must(t, os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("PRIVATE-KEY-lab"), 0o600))
	if es, err := os.ReadDir("/run"); err != nil || len(es) == 0 {
		t.Fatalf("/run on this machine is empty (%v): the probe would prove nothing", err)
	}
	probe := []string{"/bin/sh", "-c", `cat "$HOME/.ssh/id_rsa" 2>/dev/null; echo; echo "run:$(ls -A /run | wc -l)"`}
	for _, unsandboxed := range []bool{false, true} {
		b := &local.Backend{Workdir: ws, Unsandboxed: unsandboxed, CacheDir: t.TempDir()}
		res, err := b.Exec(context.Background(), backend.ExecRequest{Argv: probe, Env: []string{"HOME=" + home}})
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		out := string(res.Stdout)
		key, run := strings.Contains(out, "PRIVATE-KEY-lab"), !strings.Contains(out, "run:0")
		if key != unsandboxed || run != unsandboxed {
			t.Errorf("unsandboxed=%v: key seen %v, /run seen %v: %q", unsandboxed, key, run, out)
		}
	}
}
