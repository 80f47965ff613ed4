package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// batchLine is one line of a jobs file.
type batchLine struct {
	ID           string          `json:"id"`
	Script       string          `json:"script,omitempty"`
	ScriptInline json.RawMessage `json:"script_inline,omitempty"`
	Prompt       string          `json:"prompt,omitempty"`
	Mode         string          `json:"mode,omitempty"`
	Workdir      string          `json:"workdir,omitempty"`
	Backend      string          `json:"backend,omitempty"`
	MaxIter      int             `json:"max_iterations,omitempty"`
}

func newBatchCmd(cn *conn) *cobra.Command {
	var file, results string
	var concurrency int
	var quietProgress bool
	cmd := &cobra.Command{
		Use:   "batch --file jobs.jsonl [--concurrency N] [--results FILE]",
		Short: "Run one scripted turn per line of a JSON-lines file; safe to re-run after a crash",
		Long: `Each line is {"id": "job-1", "script": "path.yaml" | "script_inline": {...},
"prompt": "...", "mode": "...", "workdir": "...", "backend": "..."}. The turn of job ID
has workflow id batch-ID. Re-running the same batch starts no turn twice: running turns
are waited for, finished ones collected. Results are JSON lines
{id, workflow_id, status, answer, error, existing, tool_calls, tool_errors},
written to --results (default stdout) in the file's order once all jobs ended.
Script paths are relative to the jobs file's directory.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, cl, cfg, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			jobs, err := readJobs(file, cfg.Permission)
			if err != nil {
				return err
			}
			errOut := cmd.ErrOrStderr()
			opts := client.BatchOptions{Concurrency: concurrency}
			if !quietProgress {
				opts.Progress = func(p client.BatchProgress) {
					fmt.Fprintf(errOut, "batch: %d jobs: %d started, %d existing, %d running, %d done, %d failed\n",
						p.Total, p.Started, p.Existing, p.Running, p.Done, p.Failed)
				}
			}
			res, runErr := cl.RunBatch(ctx, jobs, opts)
			if res != nil {
				if err := writeResults(cmd.OutOrStdout(), results, res); err != nil {
					return err
				}
			}
			if runErr != nil {
				return runErr
			}
			var failed int
			for _, r := range res {
				if r.Status != client.JobCompleted {
					failed++
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d jobs failed", failed, len(res))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "file", "", "jobs file, JSON lines")
	f.StringVar(&results, "results", "", "write results here as JSON lines (default stdout)")
	f.IntVar(&concurrency, "concurrency", 10, "turns in flight at once")
	f.BoolVar(&quietProgress, "quiet", false, "no progress lines on stderr")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

// readJobs parses a jobs file; base is the permission policy a job's
// mode applies to.
func readJobs(path string, base permission.Policy) ([]client.Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	dir := filepath.Dir(path)
	var jobs []client.Job
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var l batchLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		j, err := l.job(dir, base)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs", path)
	}
	return jobs, nil
}

// job turns a line into a job.
func (l batchLine) job(dir string, base permission.Policy) (client.Job, error) {
	if l.ID == "" {
		return client.Job{}, errors.New("missing id")
	}
	var s *model.Script
	var err error
	switch {
	case l.Script != "" && len(l.ScriptInline) > 0:
		return client.Job{}, errors.New("give script or script_inline, not both")
	case l.Script != "":
		p := l.Script
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		s, err = model.LoadScript(p)
	case len(l.ScriptInline) > 0:
		s, err = model.ParseScript(l.ScriptInline) // JSON is YAML
	default:
		return client.Job{}, errors.New("missing script or script_inline")
	}
	if err != nil {
		return client.Job{}, err
	}
	policy := base
	if l.Mode != "" {
		policy.Mode = permission.Mode(l.Mode)
	}
	pc, err := policy.Context()
	if err != nil {
		return client.Job{}, err
	}
	prompt := l.Prompt
	if prompt == "" {
		prompt = s.Prompt
	}
	return client.Job{ID: l.ID, Input: workflows.TurnInput{Prompt: prompt, Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: pc, Workdir: l.Workdir, Backend: l.Backend, MaxIterations: l.MaxIter}}, nil
}

// writeResults writes JSON lines to path (atomically) or to out.
func writeResults(out io.Writer, path string, res []client.JobResult) error {
	var b bytes.Buffer
	enc := newEncoder(&b)
	for _, r := range res {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("results: %w", err)
		}
	}
	if path == "" {
		_, err := out.Write(b.Bytes())
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}
