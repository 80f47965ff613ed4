package cgroup

import (
	"testing"

	"github.com/wardenhq/warden/calls"
)

func BenchmarkGroup(b *testing.B) {
	m, err := Open(Options{CPUShare: true})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for _, l := range []struct {
		name string
		lim  calls.Limits
	}{{"pids", calls.Limits{Processes: 4096}}, {"memory", calls.Limits{Memory: 4 << 30}}, {"pids+memory", calls.Limits{Processes: 4096, Memory: 4 << 30}}} {
		b.Run(l.name, func(b *testing.B) {
			for b.Loop() {
				g, err := m.New(l.lim)
				if err != nil {
					b.Fatal(err)
				}
				if err := g.Remove(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
