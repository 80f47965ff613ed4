package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/permission"
)

// OverheadConfig sizes the overhead scenario.
type OverheadConfig struct {
	// Calls is the number of sequential calls per variant (default 50).
	Calls int
}

// Variant is one command measured through a turn and directly.
type Variant struct {
	Name    string          `json:"name"`
	Command string          `json:"command"`
	Mode    permission.Mode `json:"mode"`
	Calls   int             `json:"calls"`
	// Call is each call's time from its tool_call event to its
	// tool_result event (workflow time of the two workflow tasks): the
	// permission check (local activity), the tool activity and the
	// workflow task that records its result.
	Call Stats `json:"call"`
	// TurnMS is the whole turn, start to result, on the bench's clock.
	TurnMS float64 `json:"turn_ms"`
	// StepMS is TurnMS / Calls: a call plus the scripted model activity
	// that requested it.
	StepMS float64 `json:"step_ms"`
	// Direct runs `/bin/sh -c Command` as a child of the bench process.
	Direct Stats `json:"direct"`
	// Ratio is Call.MedianMS / Direct.MedianMS.
	Ratio float64 `json:"ratio"`
	// Local is the command run Calls times through the local backend
	// without its sandbox, and Sandboxed through it with the sandbox, as
	// a worker runs a tool process, in this process; SandboxAdded is the
	// difference of their medians and p95s: what the sandbox adds per
	// call.
	Local        Stats `json:"local"`
	Sandboxed    Stats `json:"sandboxed"`
	SandboxAdded Added `json:"sandbox_added"`
	// ToolErrors counts calls whose result was an error.
	ToolErrors int `json:"tool_errors"`
}

// Added is what one way of running adds to another, in milliseconds.
type Added struct {
	MedianMS float64 `json:"median_ms"`
	P95MS    float64 `json:"p95_ms"`
}

// OverheadReport is the overhead scenario's result.
type OverheadReport struct {
	Variants []Variant `json:"variants"`
}

// overheadVariants are the commands measured: a no-op, a read-only
// command the policy allows in default mode, and a write (bypass mode).
var overheadVariants = [...]struct {
	name, command string
	mode          permission.Mode
}{
	{"noop", "true", permission.ModeBypass},
	{"read-only", "ls", permission.ModeDefault},
	{"side-effect", "touch f", permission.ModeBypass},
}

// Overhead runs, for each variant, one turn of Calls sequential Bash calls
// and the same command Calls times directly, in this run.
func (r *Runner) Overhead(ctx context.Context, cfg OverheadConfig) (OverheadReport, error) {
	n := cfg.Calls
	if n <= 0 {
		n = 50
	}
	dir := r.Workdir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	var rep OverheadReport
	for i, v := range overheadVariants {
		r.logf("overhead: %s (%q, %s), %d calls", v.name, v.command, v.mode, n)
		id := fmt.Sprintf("%s-overhead-%d", r.prefix(), i)
		t0 := time.Now()
		res, err := r.runTurn(ctx, id, r.turnInput(bashScript(v.command, n), v.mode))
		if err != nil {
			return rep, fmt.Errorf("overhead %s: %w", v.name, err)
		}
		turn := time.Since(t0)
		if res.ToolCalls != n {
			return rep, fmt.Errorf("overhead %s: turn made %d calls, want %d", v.name, res.ToolCalls, n)
		}
		evs, err := r.events(ctx, id)
		if err != nil {
			return rep, fmt.Errorf("overhead %s: %w", v.name, err)
		}
		calls, errs := callTimes(evs)
		ds, err := direct(ctx, dir, v.command, n)
		if err != nil {
			return rep, fmt.Errorf("overhead %s: %w", v.name, err)
		}
		out := Variant{Name: v.name, Command: v.command, Mode: v.mode, Calls: n,
			Call: Summarize(calls), TurnMS: ms(turn), StepMS: ms(turn / time.Duration(n)),
			Direct: Summarize(ds), ToolErrors: errs}
		out.Ratio = ratio(out.Call.MedianMS, out.Direct.MedianMS)
		if out.Local, out.Sandboxed, err = sandboxCost(ctx, dir, v.command, n); err != nil {
			return rep, fmt.Errorf("overhead %s: %w", v.name, err)
		}
		out.SandboxAdded = Added{MedianMS: out.Sandboxed.MedianMS - out.Local.MedianMS, P95MS: out.Sandboxed.P95MS - out.Local.P95MS}
		rep.Variants = append(rep.Variants, out)
	}
	return rep, nil
}

// sandboxCost runs `/bin/sh -c command` n times through the local
// backend unsandboxed and n times sandboxed, alternating, in dir.
func sandboxCost(ctx context.Context, dir, command string, n int) (plain, sandboxed Stats, err error) {
	off := &local.Backend{Workdir: dir, Unsandboxed: true}
	on := &local.Backend{Workdir: dir}
	defer on.Close()
	var ds [2][]time.Duration
	for i := range 2 * n {
		b := off
		if i%2 == 1 {
			b = on
		}
		t0 := time.Now()
		res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", command}, Dir: dir})
		if err != nil {
			return plain, sandboxed, fmt.Errorf("local exec %q: %w", command, err)
		}
		if res.ExitCode != 0 {
			return plain, sandboxed, fmt.Errorf("local exec %q (sandboxed %v): exit %d: %s", command, i%2 == 1, res.ExitCode, res.Stderr)
		}
		ds[i%2] = append(ds[i%2], time.Since(t0))
	}
	return Summarize(ds[0]), Summarize(ds[1]), nil
}
