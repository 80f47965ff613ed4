package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/calls"
)

// TestHiddenByIdentity: a hidden file or directory stays refused to the
// file tools under a new name: after a tool's `mv deploy d2` (the
// directory holding the hidden config) and `mv data data2` (the hidden
// data directory), Read, Stat and ListDir refuse or omit them; a hidden
// file replaced by rename on the host and then moved by a tool is
// refused as its new inode. The control: a backend hiding nothing reads the moved files
// (the attempt reaches the key), and the moved directory's other files
// stay readable.
func TestHiddenByIdentity(t *testing.T) {
	ws := t.TempDir()
	deploy, data := filepath.Join(ws, "deploy"), filepath.Join(ws, "data")
	must(t, os.MkdirAll(filepath.Join(data, "auth"), 0o700))
	must(t, os.MkdirAll(deploy, 0o755))
	cfg, key, app := filepath.Join(deploy, "warden.yaml"), filepath.Join(data, "auth", "operator.key"), filepath.Join(ws, "app.yaml")
	must(t, os.WriteFile(cfg, []byte("config-secret"), 0o600))
	must(t, os.WriteFile(filepath.Join(deploy, "notes.txt"), []byte("notes"), 0o644))
	must(t, os.WriteFile(key, []byte("key-secret"), 0o600))
	must(t, os.WriteFile(app, []byte("app-v1"), 0o600))
	// The moves are a tool's: an unsandboxed Exec, so they run whatever
	// the sandbox would allow (this test is about the file tools).
	b := &local.Backend{Workdir: ws, Hide: []string{cfg, data, app}, Unsandboxed: true}
	ctx := backend.WithSandbox(context.Background(), &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}})
	res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "mv deploy d2 && mv data data2 && echo moved"}, Dir: ws})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "moved" {
		t.Fatalf("mv: %v %q %q", err, res.Stdout, res.Stderr)
	}
	movedCfg, movedKey := filepath.Join(ws, "d2", "warden.yaml"), filepath.Join(ws, "data2", "auth", "operator.key")
	// The control hides nothing, and its file operations do not hold
	// the profile (operator.key is a sensitive name): only the hiding
	// differs.
	control := &local.Backend{Workdir: ws, FileToolsOff: true}
	for p, want := range map[string]string{movedCfg: "config-secret", movedKey: "key-secret"} {
		if got, err := control.ReadFile(ctx, p); err != nil || string(got) != want {
			t.Fatalf("control: read %s = %q %v, want %q", p, got, err, want)
		}
	}
	// The host replaces app.yaml by rename (an editor, sed -i); then a
	// tool moves the new file: the backend knows the new inode as the
	// hidden file's (it looks again before every process).
	tmp := filepath.Join(ws, ".app.yaml.tmp")
	must(t, os.WriteFile(tmp, []byte("app-v2"), 0o600))
	must(t, os.Rename(tmp, app))
	movedApp := filepath.Join(ws, "moved.yaml")
	res, err = b.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "mv app.yaml moved.yaml && echo moved"}, Dir: ws})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "moved" {
		t.Fatalf("mv app.yaml: %v %q %q", err, res.Stdout, res.Stderr)
	}
	if got, err := control.ReadFile(ctx, movedApp); err != nil || string(got) != "app-v2" {
		t.Fatalf("control: read %s = %q %v", movedApp, got, err)
	}

	for _, r := range []struct {
		name string
		err  error
	}{
		{"read the config in the renamed directory", read(ctx, b, movedCfg)},
		{"read a key in the renamed data directory", read(ctx, b, movedKey)},
		{"list the renamed data directory", list(ctx, b, filepath.Join(ws, "data2"))},
		{"stat the renamed data directory's key", stat(ctx, b, movedKey)},
		{"write over the renamed config", b.WriteFile(ctx, movedCfg, []byte("x"))},
		{"read the replaced, then moved file", read(ctx, b, movedApp)},
	} {
		if r.err == nil || !strings.Contains(r.err.Error(), "refused") {
			t.Errorf("%s: %v, want refused", r.name, r.err)
		}
	}
	if got, err := b.ReadFile(ctx, filepath.Join(ws, "d2", "notes.txt")); err != nil || string(got) != "notes" {
		t.Errorf("the renamed directory's other file: %q %v", got, err)
	}
	entries, err := b.ListDir(ctx, filepath.Join(ws, "d2"))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if slices.Contains(names, "warden.yaml") || !slices.Contains(names, "notes.txt") {
		t.Errorf("ListDir d2 = %q, want notes.txt without warden.yaml", names)
	}
	if got, _ := os.ReadFile(movedCfg); string(got) != "config-secret" {
		t.Errorf("the refused write changed the config: %q", got)
	}
}

// TestFileToolsBounded: the file operations refuse a FIFO, a device and
// a file over the read's limit before reading a byte: a 200 GB sparse
// file is refused at once with ErrTooLarge (and the worker's heap does
// not grow), a FIFO with no writer is refused at once with ErrNotRegular
// (for reading and for writing: neither open blocks), /dev/zero too. The
// control: a file of exactly the limit reads whole, one byte more is too
// large, and the FIFO really blocks a plain open.
func TestFileToolsBounded(t *testing.T) {
	ws := t.TempDir()
	b := &local.Backend{Workdir: ws}
	ctx := backend.WithSandbox(context.Background(), &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}})

	sparse := filepath.Join(ws, "huge.bin")
	f, err := os.Create(sparse)
	must(t, err)
	must(t, f.Truncate(200<<30))
	must(t, f.Close())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err = b.ReadFile(ctx, sparse)
	_, err2 := b.ReadFileLimit(ctx, sparse, 1<<20)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, backend.ErrTooLarge) || !errors.Is(err2, backend.ErrTooLarge) {
		t.Errorf("200 GB sparse file: %v / %v, want ErrTooLarge", err, err2)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refusing the sparse file took %s", d)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("refusing the sparse file allocated %d bytes", grew)
	}
	t.Logf("200 GB sparse file: %v (allocated %d KiB)", err, (after.TotalAlloc-before.TotalAlloc)>>10)

	fifo := filepath.Join(ws, "pipe")
	must(t, unix.Mkfifo(fifo, 0o644))
	blocked := make(chan struct{})
	go func() { // control: a plain open of the FIFO blocks
		defer close(blocked)
		if f, err := os.OpenFile(fifo, os.O_RDONLY, 0); err == nil {
			f.Close()
		}
	}()
	select {
	case <-blocked:
		t.Fatal("control: a plain open of the FIFO did not block")
	case <-time.After(200 * time.Millisecond):
	}
	for name, call := range map[string]func() error{
		"read a FIFO":       func() error { _, err := b.ReadFile(ctx, fifo); return err },
		"write a FIFO":      func() error { return b.WriteFile(ctx, fifo, []byte("x")) },
		"read /dev/zero":    func() error { _, err := b.ReadFile(ctx, "/dev/zero"); return err },
		"limited read FIFO": func() error { _, err := b.ReadFileLimit(ctx, fifo, 10); return err },
	} {
		done := make(chan error, 1)
		go func() { done <- call() }()
		select {
		case err := <-done:
			if !errors.Is(err, backend.ErrNotRegular) {
				t.Errorf("%s: %v, want ErrNotRegular", name, err)
			}
		case <-time.After(2 * time.Second):
			t.Errorf("%s: blocked", name)
		}
	}
	// Unblock the control's open.
	if w, err := os.OpenFile(fifo, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
	<-blocked

	exact := filepath.Join(ws, "exact.txt")
	must(t, os.WriteFile(exact, []byte("0123456789"), 0o644))
	if got, err := b.ReadFileLimit(ctx, exact, 10); err != nil || string(got) != "0123456789" {
		t.Errorf("a file of exactly the limit: %q %v", got, err)
	}
	if _, err := b.ReadFileLimit(ctx, exact, 9); !errors.Is(err, backend.ErrTooLarge) {
		t.Errorf("a file one byte over the limit: %v, want ErrTooLarge", err)
	}
}
