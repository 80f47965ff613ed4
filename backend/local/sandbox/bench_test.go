package sandbox

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/wardenhq/warden/backend/local/sandbox/child"
)

// BenchmarkZygoteRun is one /bin/true through a zygote, reporting the
// median (median-ms/op).
func BenchmarkZygoteRun(b *testing.B) {
	z, err := startZygote(child.ZygoteSpec{})
	if err != nil {
		b.Fatal(err)
	}
	defer z.Close()
	dir := b.TempDir()
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := z.Run(context.Background(), Request{Write: []string{dir}, Dir: dir, Argv: []string{"/bin/true"}, Env: testEnv}, nil, io.Discard, io.Discard)
		took = append(took, time.Since(start))
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms/op")
}
