package bench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// LongConfig sizes the long-session scenario.
type LongConfig struct {
	// Steps is the number of model steps, each reading the output file
	// once (default 1000).
	Steps int
	// OutputKB is the size of each step's tool output (default 60).
	OutputKB int
	// DataDir is the worker's data directory, measured for growth (empty:
	// not measured).
	DataDir string
	// ContinueAsNewAfter is passed to the turn (0: the server's suggestion).
	ContinueAsNewAfter int
}

// LongReport is what a long session costs.
type LongReport struct {
	Steps    int `json:"steps"`
	OutputKB int `json:"output_kb"`
	// Runs counts the turn's runs (continue-as-new).
	Runs int `json:"runs"`
	// HistoryBytes is the size of all runs' histories.
	HistoryBytes        int64   `json:"history_bytes"`
	HistoryBytesPerStep float64 `json:"history_bytes_per_step"`
	// ModelInputBytes is the size of the first and last model call's
	// recorded input.
	ModelInputFirst int `json:"model_input_first_bytes"`
	ModelInputLast  int `json:"model_input_last_bytes"`
	// DataDir growth (bytes) over the session, and per step.
	DataDirGrowth  int64   `json:"data_dir_growth_bytes,omitempty"`
	DataDirPerStep float64 `json:"data_dir_per_step_bytes,omitempty"`
	// Step latency (model call to model call) over the first and last
	// tenth of the session, from history event times.
	FirstTenth Stats   `json:"first_tenth"`
	LastTenth  Stats   `json:"last_tenth"`
	Worker     Memory  `json:"worker_rss"`
	WallMS     float64 `json:"wall_ms"`
}

// Long runs one scripted session of Steps steps, each a Read of an
// OutputKB file, and measures history, data directory, latency and
// memory over it.
func (r *Runner) Long(ctx context.Context, cfg LongConfig) (LongReport, error) {
	if cfg.Steps <= 0 {
		cfg.Steps = 1000
	}
	if cfg.OutputKB <= 0 {
		cfg.OutputKB = 60
	}
	rep := LongReport{Steps: cfg.Steps, OutputKB: cfg.OutputKB}
	wd, err := filepath.Abs(r.Workdir)
	if err != nil {
		return rep, fmt.Errorf("long: %w", err)
	}
	// Every step reads a file of its own, so the store cannot share
	// content between steps (it is content-addressed). Read returns the
	// whole file (Bash keeps the first 30,000 characters of an output).
	dir, err := os.MkdirTemp(wd, "long-")
	if err != nil {
		return rep, fmt.Errorf("long: %w", err)
	}
	defer os.RemoveAll(dir)
	s, err := longScript(dir, cfg.Steps, cfg.OutputKB*1024)
	if err != nil {
		return rep, fmt.Errorf("long: %w", err)
	}
	in := r.turnInput(s, permission.ModeDefault)
	in.MaxIterations = cfg.Steps + 1
	in.ContinueAsNewAfter = cfg.ContinueAsNewAfter
	id, runID, err := r.runLong(ctx, cfg, in, &rep)
	if err != nil {
		return rep, err
	}
	times, inputs, err := r.walkLong(ctx, id, runID, &rep)
	if err != nil {
		return rep, err
	}
	rep.HistoryBytesPerStep = float64(rep.HistoryBytes) / float64(cfg.Steps)
	if len(inputs) > 1 {
		rep.ModelInputFirst, rep.ModelInputLast = inputs[1], inputs[len(inputs)-1]
	}
	var steps []time.Duration
	for i := 1; i < len(times); i++ {
		steps = append(steps, times[i].Sub(times[i-1]))
	}
	if tenth := len(steps) / 10; tenth > 0 {
		rep.FirstTenth, rep.LastTenth = Summarize(steps[:tenth]), Summarize(steps[len(steps)-tenth:])
	}
	return rep, nil
}

// longScript writes one file of size bytes per step into dir and returns
// the script that reads them in order, then answers "done".
func longScript(dir string, steps, size int) (*model.Script, error) {
	s := &model.Script{}
	for i := range steps {
		var b strings.Builder
		for j := 0; b.Len() < size; j++ {
			fmt.Fprintf(&b, "step %06d line %06d %s\n", i, j, strings.Repeat("x", 72))
		}
		file := filepath.Join(dir, fmt.Sprintf("output-%06d.txt", i))
		if err := os.WriteFile(file, []byte(b.String()[:size]), 0o644); err != nil {
			return nil, err
		}
		s.Steps = append(s.Steps, model.Step{ToolCalls: []model.ScriptedCall{{Name: "Read", Input: map[string]any{"file_path": file}}}})
	}
	s.Steps = append(s.Steps, model.Step{Text: "done"})
	return s, nil
}

// runLong runs the session's turn to its result, recording wall time,
// worker memory and data directory growth in rep, and returns the turn's
// workflow ID and first run ID.
func (r *Runner) runLong(ctx context.Context, cfg LongConfig, in workflows.TurnInput, rep *LongReport) (id, runID string, err error) {
	before := dirSize(cfg.DataDir)
	mem := sample(r.WorkerPID)
	id = r.prefix() + "-long"
	start := time.Now()
	run, err := r.Client.Start(ctx, id, in)
	if err != nil {
		mem.finish()
		return id, "", err
	}
	r.logf("long: %d steps × %d KB started as %s", cfg.Steps, cfg.OutputKB, id)
	res, err := r.Client.Result(ctx, id)
	rep.WallMS = ms(time.Since(start))
	rep.Worker = mem.finish()
	if err != nil {
		return id, "", fmt.Errorf("long session: %w", err)
	}
	if res.ToolCalls != cfg.Steps {
		return id, "", fmt.Errorf("long session made %d calls, want %d (stopped: %q)", res.ToolCalls, cfg.Steps, res.Stopped)
	}
	if cfg.DataDir != "" {
		rep.DataDirGrowth = dirSize(cfg.DataDir) - before
		rep.DataDirPerStep = float64(rep.DataDirGrowth) / float64(cfg.Steps)
	}
	return id, run.GetRunID(), nil
}

// walkLong reads the history of every run of turn id from runID on
// (continue-as-new), counting runs and history bytes in rep, and returns
// each model step's time and recorded input size.
func (r *Runner) walkLong(ctx context.Context, id, runID string, rep *LongReport) (times []time.Time, inputs []int, err error) {
	for runID != "" {
		rep.Runs++
		next := ""
		it := r.Temporal.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return times, inputs, fmt.Errorf("history: %w", err)
			}
			rep.HistoryBytes += int64(ev.Size())
			if m, ok := ModelStepOf(ev); ok {
				times = append(times, m.Time)
				inputs = append(inputs, m.Bytes)
			}
			if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
			}
		}
		runID = next
	}
	return times, inputs, nil
}

// dirSize is the total size of the files under dir (0 when dir is empty
// or unreadable).
func dirSize(dir string) int64 {
	if dir == "" {
		return 0
	}
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
