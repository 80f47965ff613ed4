package tools

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
)

// goneBackend is a workspace that went away for its first `gone` execs:
// they fail with backend.ErrUnavailable, as a removed container does.
type goneBackend struct {
	*local.Backend
	gone *atomic.Int32
}

func (g goneBackend) Exec(ctx context.Context, r backend.ExecRequest) (backend.ExecResult, error) {
	if g.gone.Add(-1) >= 0 {
		return backend.ExecResult{ExitCode: 137}, errors.Join(errors.New("container went away"), backend.ErrUnavailable)
	}
	return g.Backend.Exec(ctx, r)
}

// TestWorkspaceGoneIsNotAToolResult: a workspace that goes away under a
// Grep or PowerShell call (its probe or its run) fails the call with a Go
// error, which the activity retries on a new workspace, instead of
// telling the model the search failed or remembering that no ripgrep or
// PowerShell is there.
func TestWorkspaceGoneIsNotAToolResult(t *testing.T) {
	t.Parallel()
	grepProbes, psProbes := &ProbeCache{}, &ProbeCache{}
	for _, c := range []struct {
		name   string
		tool   Tool
		probes *ProbeCache // the tool's, nil when it does not probe
		gone   int32
		in     string
	}{
		{"Grep probe", Grep{Probes: grepProbes}, grepProbes, 1, `{"pattern":"x"}`},
		{"Grep ripgrep", Grep{Engine: GrepRipgrep}, nil, 1, `{"pattern":"x"}`},
		{"PowerShell probe", PowerShell{Probes: psProbes}, psProbes, 1, `{"command":"Get-Date"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			gone := &atomic.Int32{}
			gone.Store(c.gone)
			b := goneBackend{local.New(t.TempDir()), gone}
			env := &Env{Backend: b, Workdir: b.Workdir}
			r, err := Collect(c.tool.Call(context.Background(), env, json.RawMessage(c.in)))
			if !errors.Is(err, backend.ErrUnavailable) {
				t.Fatalf("result %+v, error %v: want a Go error wrapping ErrUnavailable", r, err)
			}
			// The failed probe was not remembered (a remembered "" would
			// say no ripgrep or no PowerShell on every later call) ...
			if c.probes != nil {
				c.probes.mu.Lock()
				n := len(c.probes.m)
				c.probes.mu.Unlock()
				if n != 0 {
					t.Errorf("the failed probe was remembered: %v", c.probes.m)
				}
			}
			// ... and, the workspace back, the retried call is answered.
			r, err = Collect(c.tool.Call(context.Background(), env, json.RawMessage(c.in)))
			if err != nil {
				t.Fatalf("after the workspace came back: %v", err)
			}
			if c.name == "Grep probe" && r.IsError {
				t.Errorf("after the workspace came back: %q", r.Content)
			}
		})
	}
}
