package sandbox

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/backend/local/cgroup"
	"github.com/wardenhq/warden/backend/local/sandbox/child"
	"github.com/wardenhq/warden/calls"
)

// BenchmarkZygoteLimits is one /bin/true through a zygote with each part
// of a call's limits: none, its cgroups made, joined and removed
// (pids+memory: the default limits' hierarchies), an rlimit, a tmpfs
// TMPDIR; it reports the median (median-ms/op).
func BenchmarkZygoteLimits(b *testing.B) {
	z, err := startZygote(child.ZygoteSpec{})
	if err != nil {
		b.Fatal(err)
	}
	defer z.Close()
	m, err := cgroup.Open(cgroup.Options{CPUShare: true})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	dir, tmp := b.TempDir(), b.TempDir()
	for _, part := range []string{"none", "cgroups", "rlimit", "tmpfs"} {
		b.Run(part, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				req := Request{Write: []string{dir, tmp}, Dir: dir, Argv: []string{"/bin/true"}, Env: testEnv}
				call := Call{Stdout: io.Discard, Stderr: io.Discard}
				var g *cgroup.Group
				switch part {
				case "cgroups":
					if g, err = m.New(calls.Limits{Processes: 4096, Memory: 4 << 30}); err != nil {
						b.Fatal(err)
					}
					call.Cgroups = g.Procs()
				case "rlimit":
					req.Rlimits = []Rlimit{{Resource: unix.RLIMIT_FSIZE, Cur: 10 << 30, Max: 10 << 30}}
				case "tmpfs":
					req.Tmp, req.TmpSize = tmp, 1<<30
				}
				res, err := z.RunCall(context.Background(), req, call)
				if g != nil {
					if err := g.Remove(); err != nil {
						b.Fatal(err)
					}
				}
				took = append(took, time.Since(start))
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%v %+v", err, res)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms/op")
		})
	}
}
