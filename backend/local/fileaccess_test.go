package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/calls"
)

// TestFileToolsHoldProfile: the file operations hold the call's sandbox
// profile as its processes do, one rule per case, each with its control
// (the same operation on a backend with the layer off, FileToolsOff,
// succeeds, so the refusal is this layer's): a write outside the Write
// paths, under Protect, to a hidden credential; a read outside what a
// process may read, of a hidden credential, of /etc/shadow, of a
// sensitive file of the workspace; and the grants that allow: a granted
// write outside, a granted read outside (the profile's Read), a
// world-readable file of /etc, a sensitive file the profile grants.
func TestFileToolsHoldProfile(t *testing.T) {
	root := t.TempDir()
	ws, out, home := filepath.Join(root, "ws"), filepath.Join(root, "out"), filepath.Join(root, "home")
	t.Setenv("HOME", home)
	for _, f := range []struct{ p, body string }{
		{filepath.Join(ws, "a.txt"), "in-ws"},
		{filepath.Join(ws, ".env"), "ENV-SECRET"},
		{filepath.Join(ws, ".git", "hooks", "pre-commit"), "#!/bin/sh\n"},
		{filepath.Join(out, "secret.txt"), "OUT-SECRET"},
		{filepath.Join(out, "granted", "g.txt"), "GRANTED"},
		{filepath.Join(home, ".ssh", "id_ed25519"), "KEY-SECRET"},
	} {
		must(t, os.MkdirAll(filepath.Dir(f.p), 0o755))
		must(t, os.WriteFile(f.p, []byte(f.body), 0o600))
	}
	prof := &calls.Sandbox{Write: []string{ws, filepath.Join(out, "new.conf")}, Dirs: []string{ws},
		Protect: []string{filepath.Join(ws, ".git", "hooks")}, Read: []string{filepath.Join(out, "granted") + "/**"}}
	ctx := backend.WithSandbox(context.Background(), prof)
	on := &local.Backend{Workdir: ws}
	off := &local.Backend{Workdir: ws, FileToolsOff: true}
	t.Cleanup(func() { on.Close(); off.Close() })
	shadow := "/etc/shadow"
	if _, err := os.Stat(shadow); err != nil {
		t.Fatalf("this test needs %s: %v", shadow, err)
	}

	refusedCases := []struct {
		name  string
		write bool
		p     string
	}{
		{"write outside the Write paths", true, filepath.Join(out, "secret.txt")},
		{"write a new file outside", true, filepath.Join(home, ".bashrc")},
		{"write under Protect", true, filepath.Join(ws, ".git", "hooks", "pre-commit")},
		{"write a hidden credential", true, filepath.Join(home, ".ssh", "authorized_keys")},
		{"read outside what a process may read", false, filepath.Join(out, "secret.txt")},
		{"read a hidden credential", false, filepath.Join(home, ".ssh", "id_ed25519")},
		{"read /etc/shadow", false, shadow},
		{"read a sensitive file of the workspace", false, filepath.Join(ws, ".env")},
	}
	for _, c := range refusedCases {
		t.Run(c.name, func(t *testing.T) {
			op := func(b *local.Backend) error {
				if c.write {
					return b.WriteFile(ctx, c.p, []byte("WRITTEN"))
				}
				_, err := b.ReadFile(ctx, c.p)
				return err
			}
			err := op(on)
			if !errors.Is(err, backend.ErrSandbox) {
				t.Fatalf("%s: %v, want the sandbox's refusal", c.p, err)
			}
			for _, want := range []string{"refused by the sandbox", "This call may", "grants it"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal lacks %q: %v", want, err)
				}
			}
			if c.write {
				if b, err := os.ReadFile(c.p); err == nil && string(b) == "WRITTEN" {
					t.Fatalf("refused, yet %s was written", c.p)
				}
			}
			if err := op(off); err != nil {
				t.Fatalf("control (file_tools off): %s: %v", c.p, err)
			}
		})
	}

	for _, c := range []struct {
		name  string
		write bool
		p     string
	}{
		{"write inside the workspace", true, filepath.Join(ws, "b.txt")},
		{"write a path outside the profile grants", true, filepath.Join(out, "new.conf")},
		{"read inside the workspace", false, filepath.Join(ws, "a.txt")},
		{"read a path outside the profile grants", false, filepath.Join(out, "granted", "g.txt")},
		{"read a world-readable file of /etc", false, "/etc/passwd"},
		{"read a shared root", false, "/usr/lib/os-release"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.write {
				err = on.WriteFile(ctx, c.p, []byte("ok"))
			} else {
				_, err = on.ReadFile(ctx, c.p)
			}
			if err != nil {
				t.Fatalf("%s: %v", c.p, err)
			}
		})
	}

	t.Run("a sensitive file the profile grants", func(t *testing.T) {
		p := *prof
		p.Read = append(slices.Clone(p.Read), filepath.Join(ws, ".env"))
		if b, err := on.ReadFile(backend.WithSandbox(context.Background(), &p), filepath.Join(ws, ".env")); err != nil || string(b) != "ENV-SECRET" {
			t.Fatalf("granted .env: %q %v", b, err)
		}
	})

	t.Run("a directory lists what the call may read", func(t *testing.T) {
		got, err := on.ListDir(ctx, "/etc")
		if err != nil {
			t.Fatalf("list /etc: %v", err)
		}
		names := map[string]bool{}
		for _, e := range got {
			names[e.Name] = true
		}
		if !names["passwd"] || names["shadow"] {
			t.Fatalf("list /etc: passwd %v shadow %v, want passwd and not shadow", names["passwd"], names["shadow"])
		}
		ctl, err := off.ListDir(ctx, "/etc")
		if err != nil || !slices.ContainsFunc(ctl, func(e backend.FileInfo) bool { return e.Name == "shadow" }) {
			t.Fatalf("control: list /etc: %v, shadow missing", err)
		}
		if _, err := on.ListDir(ctx, filepath.Join(home, ".ssh")); !errors.Is(err, backend.ErrSandbox) {
			t.Fatalf("list ~/.ssh: %v, want the sandbox's refusal", err)
		}
		if _, err := on.ListDir(ctx, out); err != nil {
			t.Fatalf("list %s (holds a granted directory): %v", out, err)
		}
		ents, _ := on.ListDir(ctx, out)
		var shown []string
		for _, e := range ents {
			shown = append(shown, e.Name)
		}
		if !slices.Contains(shown, "granted") || slices.Contains(shown, "secret.txt") {
			t.Fatalf("list %s: %v, want granted and not secret.txt", out, shown)
		}
	})

	t.Run("unsandboxed backend", func(t *testing.T) {
		u := &local.Backend{Workdir: ws, Unsandboxed: true}
		if _, err := u.ReadFile(ctx, filepath.Join(out, "secret.txt")); err != nil {
			t.Fatalf("sandbox off: %v", err)
		}
	})
}
