package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/cmd/starter/internal/cli"
	"github.com/wardenhq/warden/workflows"
)

const batchLong = `Each line is {"id": "job-1", "script": "path.yaml" | "script_inline": {...},
"prompt": "...", "mode": "...", "workdir": "...", "backend": "..."}. The turn of job ID
has workflow id batch-ID. Re-running the same batch starts no turn twice: running turns
are waited for, finished ones collected. Results are JSON lines
{id, workflow_id, status, answer, error, existing, tool_calls, tool_errors},
written to --results (default stdout) in the file's order once all jobs ended.
Script paths are relative to the jobs file's directory.`

// batchFlags are the flags of `starter batch`.
type batchFlags struct {
	file, results, livePolicy string
	concurrency               int
	quiet, noLivePolicy       bool
}

func newBatchCmd(cn *conn) *cobra.Command {
	var f batchFlags
	cmd := &cobra.Command{
		Use:   "batch --file jobs.jsonl [--concurrency N] [--results FILE]",
		Short: "Run one scripted turn per line of a JSON-lines file; safe to re-run after a crash",
		Long:  batchLong,
		RunE:  func(cmd *cobra.Command, _ []string) error { return f.run(cmd, cn) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.file, "file", "", "jobs file, JSON lines")
	fl.StringVar(&f.results, "results", "", "write results here as JSON lines (default stdout)")
	fl.IntVar(&f.concurrency, "concurrency", 10, "turns in flight at once")
	fl.StringVar(&f.livePolicy, "live-policy", workflows.DefaultPolicyStore, "the policy store every job's turn follows unless its input names one (made if missing)")
	fl.BoolVar(&f.noLivePolicy, "no-live-policy", false, "jobs whose input names no store follow none: they keep the policy they start with")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress lines on stderr")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

// run reads the jobs, runs them, writes the results and fails when a
// job did not complete.
func (f batchFlags) run(cmd *cobra.Command, cn *conn) error {
	ctx := cmd.Context()
	c, cl, cfg, err := cn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	jobs, err := cli.ReadJobs(f.file, cfg.Policy())
	if err != nil {
		return err
	}
	// The client makes each store before the first turn that follows it.
	cl.LivePolicy = livePolicy(f.livePolicy, f.noLivePolicy)
	opts := client.BatchOptions{Concurrency: f.concurrency}
	if !f.quiet {
		errOut := cmd.ErrOrStderr()
		opts.Progress = func(p client.BatchProgress) { fmt.Fprintf(errOut, "batch: %s\n", p) }
	}
	res, runErr := cl.RunBatch(ctx, jobs, opts)
	if res != nil {
		if err := cli.WriteResults(cmd.OutOrStdout(), f.results, res); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	if failed := cli.FailedJobs(res); failed > 0 {
		return fmt.Errorf("%d of %d jobs failed", failed, len(res))
	}
	return nil
}
