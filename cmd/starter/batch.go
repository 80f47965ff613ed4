package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
)

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
			jobs, err := client.ReadJobs(file, cfg.Permission)
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
				if err := client.WriteResults(cmd.OutOrStdout(), results, res); err != nil {
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
