package limit

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/tools"
)

// gauge is a tool that records how many of its calls run at once.
type gauge struct {
	name     string
	inFlight *atomic.Int32
	peak     *atomic.Int32
	hold     time.Duration
}

func newGauge(name string) gauge {
	return gauge{name: name, inFlight: new(atomic.Int32), peak: new(atomic.Int32), hold: 20 * time.Millisecond}
}

func (g gauge) Info() tools.Info { return tools.Info{Name: g.name} }

func (g gauge) Call(context.Context, *tools.Env, json.RawMessage) tools.Stream {
	return func(yield func(tools.Chunk, error) bool) {
		n := g.inFlight.Add(1)
		defer g.inFlight.Add(-1)
		for {
			p := g.peak.Load()
			if n <= p || g.peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(g.hold)
		yield(tools.Chunk{Text: "done"}, nil)
	}
}

func TestLimitCapsConcurrency(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cfg      Config
		tool     string
		calls    int
		wantPeak int32 // exact peak when the tool is limited; > 0 minimum otherwise
		limited  bool
	}{
		{name: "per tool 1", cfg: Config{PerTool: map[string]int{"Bash": 1}}, tool: "Bash", calls: 8, wantPeak: 1, limited: true},
		{name: "per tool 3", cfg: Config{PerTool: map[string]int{"Bash": 3}}, tool: "Bash", calls: 12, wantPeak: 3, limited: true},
		{name: "default applies", cfg: Config{PerTool: map[string]int{Default: 2}}, tool: "Read", calls: 10, wantPeak: 2, limited: true},
		{name: "tool entry beats default", cfg: Config{PerTool: map[string]int{Default: 1, "Read": 4}}, tool: "Read", calls: 12, wantPeak: 4, limited: true},
		{name: "zero is unlimited", cfg: Config{PerTool: map[string]int{"Bash": 0}}, tool: "Bash", calls: 6, wantPeak: 6},
		{name: "zero config", cfg: Config{}, tool: "Bash", calls: 6, wantPeak: 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mw, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			h := mw(middleware.Terminal)
			g := newGauge(tc.tool)
			g.hold = 30 * time.Millisecond
			var wg sync.WaitGroup
			for range tc.calls {
				wg.Go(func() {
					res, err := tools.Collect(h(context.Background(), middleware.Call{Tool: g}))
					if err != nil || res.Content != "done" {
						t.Errorf("call = %q, %v", res.Content, err)
					}
				})
			}
			wg.Wait()
			got := g.peak.Load()
			if tc.limited && got != tc.wantPeak {
				t.Errorf("peak in flight = %d, want exactly %d", got, tc.wantPeak)
			}
			if !tc.limited && got < 2 {
				t.Errorf("peak in flight = %d; unlimited calls should overlap", got)
			}
		})
	}
}

func TestLimitIsPerTool(t *testing.T) {
	t.Parallel()
	mw, err := New(Config{PerTool: map[string]int{Default: 1}})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(middleware.Terminal)
	a, b := newGauge("A"), newGauge("B")
	// Both tools share one in-flight counter: with a slot each they overlap.
	b.inFlight, b.peak = a.inFlight, a.peak
	a.hold, b.hold = 100*time.Millisecond, 100*time.Millisecond
	var wg sync.WaitGroup
	for _, g := range []gauge{a, b} {
		wg.Go(func() { _, _ = tools.Collect(h(context.Background(), middleware.Call{Tool: g})) })
	}
	wg.Wait()
	if got := a.peak.Load(); got != 2 {
		t.Errorf("peak across two tools = %d, want 2 (separate slots)", got)
	}
}

func TestLimitWaitHonoursCancel(t *testing.T) {
	t.Parallel()
	mw, err := New(Config{PerTool: map[string]int{"Bash": 1}})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(middleware.Terminal)
	g := newGauge("Bash")
	g.hold = 300 * time.Millisecond
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		close(started)
		_, _ = tools.Collect(h(context.Background(), middleware.Call{Tool: g}))
	}()
	<-started
	for g.inFlight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = tools.Collect(h(ctx, middleware.Call{Tool: g}))
	waited := time.Since(t0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want a wrapped context.DeadlineExceeded", err)
	}
	if waited > 200*time.Millisecond {
		t.Errorf("queued call returned after %v, want soon after its deadline", waited)
	}
	<-done
	// The slot is free again once the first call ends.
	if _, err := tools.Collect(h(context.Background(), middleware.Call{Tool: g})); err != nil {
		t.Errorf("after release: %v", err)
	}
}

func TestLimitReleasesOnEarlyStop(t *testing.T) {
	t.Parallel()
	mw, err := New(Config{PerTool: map[string]int{"Bash": 1}})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(middleware.Terminal)
	g := newGauge("Bash")
	g.hold = 0
	for range 3 {
		for range h(context.Background(), middleware.Call{Tool: g}) {
			break // the consumer stops at the first chunk
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := tools.Collect(h(ctx, middleware.Call{Tool: g})); err != nil {
		t.Errorf("slot leaked after early stops: %v", err)
	}
}

func TestNewRejectsNegative(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{PerTool: map[string]int{"Bash": -1}}); err == nil {
		t.Error("negative limit accepted")
	}
}
