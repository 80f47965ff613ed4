package warden_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
)

// TestRegisterProtectsOwnPaths: a worker built in code with
// warden.Register hides Options.Protected's paths from its default local
// backend (the file tools refuse them, a sandboxed cat finds the key
// empty) and protects its default content store; an unprotected file
// beside the key reads (the control).
func TestRegisterProtectsOwnPaths(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	key, other := filepath.Join(dir, "keys", "op.key"), filepath.Join(dir, "keys", "other.txt")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	for p, s := range map[string]string{key: "KEY-SECRET\n", other: "plain\n"} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, err := warden.NewActivities(warden.Options{Workdir: dir, Protected: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, ".warden", "content") + "{,/**}"; !slices.Contains(a.Protected, want) {
		t.Errorf("protected %q lack the default content store %s", a.Protected, want)
	}
	lb := a.Backends["local"].(*local.Backend)
	defer lb.Close()
	ctx := context.Background()
	if _, err := lb.ReadFile(ctx, key); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Read of the protected key: %v, want refused", err)
	}
	if got, err := lb.ReadFile(ctx, other); err != nil || string(got) != "plain\n" {
		t.Errorf("control: %q %v", got, err)
	}
	res, err := lb.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "cat " + key + " " + other + "; echo ran-$((40+2))"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(res.Stdout); !strings.Contains(out, "ran-42") || !strings.Contains(out, "plain") || strings.Contains(out, "KEY-SECRET") {
		t.Errorf("sandboxed cat: %q %q, want the marker and the plain file, not the key", out, res.Stderr)
	}
}
