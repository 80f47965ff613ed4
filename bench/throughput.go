package bench

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/wardenhq/warden/permission"
)

// ThroughputConfig sizes the throughput scenario.
type ThroughputConfig struct {
	// Turns run concurrently (default 20).
	Turns int
	// Calls is the number of sequential Bash calls per turn (default 10).
	Calls int
	// Command is the Bash command each call runs, in bypass mode (default
	// "true", which takes the local fast path; "touch f" a regular
	// activity).
	Command string
}

// ThroughputReport is the throughput scenario's result.
type ThroughputReport struct {
	Turns        int     `json:"turns"`
	CallsPerTurn int     `json:"calls_per_turn"`
	Calls        int     `json:"calls"`
	Command      string  `json:"command"`
	WallMS       float64 `json:"wall_ms"`
	CallsPerSec  float64 `json:"calls_per_sec"`
	// Turn is each turn's start-to-result time.
	Turn Stats `json:"turn"`
	// Call is each call's tool_call → tool_result time.
	Call   Stats   `json:"call"`
	Worker Memory  `json:"worker_rss"`
	Server *Memory `json:"server_rss,omitempty"`
}

// Throughput runs Turns turns at once, each making Calls sequential Bash
// calls of Command in bypass mode, and reports tool calls per second and the
// worker's (and an external server's) memory before, at peak and after.
func (r *Runner) Throughput(ctx context.Context, cfg ThroughputConfig) (ThroughputReport, error) {
	m, k := cfg.Turns, cfg.Calls
	if m <= 0 {
		m = 20
	}
	if k <= 0 {
		k = 10
	}
	command := cfg.Command
	if command == "" {
		command = "true"
	}
	r.logf("throughput: %d turns x %d calls of %q", m, k, command)
	rep := ThroughputReport{Turns: m, CallsPerTurn: k, Calls: m * k, Command: command}
	ws, ss := sample(r.WorkerPID), sample(r.ServerPID)
	in := r.turnInput(bashScript(command, k), permission.ModeBypass)
	// The scripted model answers at once: its steps run as local
	// activities unless the run measures the regular path.
	in.Model.Local = !r.RegularModel
	var mu sync.Mutex
	var turns []time.Duration
	ids := make([]string, m)
	t0 := time.Now()
	err := pool(ctx, m, m, func(ctx context.Context, i int) error {
		ids[i] = fmt.Sprintf("%s-throughput-%d", r.prefix(), i)
		s := time.Now()
		res, err := r.runTurn(ctx, ids[i], in)
		if err != nil {
			return err
		}
		if res.ToolCalls != k {
			return fmt.Errorf("turn %s made %d calls, want %d", ids[i], res.ToolCalls, k)
		}
		mu.Lock()
		turns = append(turns, time.Since(s))
		mu.Unlock()
		return nil
	})
	wall := time.Since(t0)
	rep.Worker = ws.finish()
	if sm := ss.finish(); r.ServerPID != 0 {
		rep.Server = &sm
	}
	if err != nil {
		return rep, fmt.Errorf("throughput: %w", err)
	}
	rep.WallMS, rep.Turn = ms(wall), Summarize(turns)
	rep.CallsPerSec = math.Round(float64(m*k)/wall.Seconds()*10) / 10
	var calls []time.Duration
	for _, id := range ids {
		evs, err := r.events(ctx, id)
		if err != nil {
			return rep, fmt.Errorf("throughput: %w", err)
		}
		ds, _ := callTimes(evs)
		calls = append(calls, ds...)
	}
	rep.Call = Summarize(calls)
	return rep, nil
}
