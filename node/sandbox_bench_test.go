package node

import (
	"context"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
)

// BenchmarkLocalExec measures one tool process on the local backend with
// and without the sandbox, in a binary that links what the worker links
// (the sandbox helper is this binary re-executed, so its start-up cost is
// the worker's): the difference is what the sandbox adds per call.
func BenchmarkLocalExec(b *testing.B) {
	for _, v := range []struct {
		name        string
		unsandboxed bool
	}{{"unsandboxed", true}, {"sandboxed", false}} {
		b.Run(v.name, func(b *testing.B) {
			be := &local.Backend{Workdir: b.TempDir(), Unsandboxed: v.unsandboxed}
			ctx := context.Background()
			for b.Loop() {
				res, err := be.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/true"}})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%v: exit %d %s", err, res.ExitCode, res.Stderr)
				}
			}
		})
	}
}
