package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"sync/atomic"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
)

// countingBackend counts Exec calls.
type countingBackend struct {
	*local.Backend
	execs *atomic.Int32
}

func (c countingBackend) Exec(ctx context.Context, r backend.ExecRequest) (backend.ExecResult, error) {
	c.execs.Add(1)
	return c.Backend.Exec(ctx, r)
}

func TestPowerShellMissing(t *testing.T) {
	t.Parallel()
	for _, p := range powerShellPrograms() {
		if _, err := exec.LookPath(p); err == nil {
			t.Skipf("%s is installed", p)
		}
	}
	b := countingBackend{local.New(t.TempDir()), &atomic.Int32{}}
	env := &Env{Backend: b, Workdir: b.Workdir}
	ps := PowerShell{Probes: &ProbeCache{}}
	for range 3 {
		r, err := Collect(ps.Call(context.Background(), env, json.RawMessage(`{"command":"Get-Date"}`)))
		if err != nil {
			t.Fatal(err)
		}
		want := "PowerShell is not available on the local backend (tried pwsh, powershell.exe). Use the Bash tool instead."
		if !r.IsError || r.Content != want {
			t.Errorf("got %q, want %q", r.Content, want)
		}
	}
	if n := b.execs.Load(); n != int32(len(powerShellPrograms())) {
		t.Errorf("probed with %d execs, want %d (once per backend)", n, len(powerShellPrograms()))
	}
}

func TestEncodePowerShell(t *testing.T) {
	t.Parallel()
	got := encodePowerShell("Write-Output 'é'")
	raw, _ := base64.StdEncoding.DecodeString(got)
	want := []byte{'W', 0, 'r', 0, 'i', 0, 't', 0, 'e', 0}
	if string(raw[:10]) != string(want) || raw[len(raw)-4] != 0xE9 || raw[len(raw)-3] != 0 {
		t.Errorf("encoding % x", raw)
	}
}

func TestBuiltins(t *testing.T) {
	t.Parallel()
	want := []string{"Bash", "PowerShell", "Read", "Write", "Edit", "Glob", "Grep", "TaskCreate", "TaskGet", "TaskList", "TaskUpdate", "AskUser"}
	bs := Builtins()
	if len(bs) != len(want) {
		t.Fatalf("%d builtins", len(bs))
	}
	for i, b := range bs {
		if b.Info().Name != want[i] {
			t.Errorf("builtin %d is %s, want %s", i, b.Info().Name, want[i])
		}
	}
	if _, err := NewRegistry(bs...); err != nil {
		t.Error(err)
	}
}
