package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/calls"
)

// BenchmarkLocalExec measures one tool process on the local backend with
// and without the sandbox, in a binary that links what the worker links
// (the sandbox helper is this binary re-executed, so its start-up cost is
// the worker's), on a workspace of 10,000 files: the difference is what
// the sandbox adds per call. Each sub-benchmark reports the median of
// its processes (median-ms/op), and the parent logs the difference and
// the ratio of the two medians of the same run; sandboxed+limits is the
// sandbox with local.DefaultLimits (the cgroups of each call).
func BenchmarkLocalExec(b *testing.B) {
	work := b.TempDir()
	for i := range 10000 {
		d := filepath.Join(work, fmt.Sprintf("pkg%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.go", i)), []byte("package p\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	medians := map[string]time.Duration{}
	for _, v := range []struct {
		name        string
		unsandboxed bool
		limits      calls.Limits
	}{{"unsandboxed", true, calls.Limits{}}, {"sandboxed", false, calls.Limits{}}, {"sandboxed+limits", false, local.DefaultLimits()}} {
		b.Run(v.name, func(b *testing.B) {
			be := &local.Backend{Workdir: work, Unsandboxed: v.unsandboxed, Limits: v.limits}
			defer be.Close()
			ctx := context.Background()
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := be.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/true"}})
				took = append(took, time.Since(start))
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%v: exit %d %s", err, res.ExitCode, res.Stderr)
				}
			}
			slices.Sort(took)
			m := took[len(took)/2]
			medians[v.name] = m
			b.ReportMetric(float64(m.Microseconds())/1000, "median-ms/op")
		})
	}
	if u, s := medians["unsandboxed"], medians["sandboxed"]; u > 0 && s > 0 {
		b.Logf("median per process: unsandboxed %.2f ms, sandboxed %.2f ms: the sandbox adds %.2f ms (%.2fx)",
			float64(u.Microseconds())/1000, float64(s.Microseconds())/1000, float64((s-u).Microseconds())/1000, float64(s)/float64(u))
	}
	if s, l := medians["sandboxed"], medians["sandboxed+limits"]; s > 0 && l > 0 {
		b.Logf("median per process: sandboxed %.2f ms, with the default limits (cgroups, rlimit, tmpfs TMPDIR, watcher) %.2f ms: the limits add %.2f ms",
			float64(s.Microseconds())/1000, float64(l.Microseconds())/1000, float64((l-s).Microseconds())/1000)
	}
}
