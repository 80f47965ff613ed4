package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/cmd/starter/internal/cli"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content/stores"
	"github.com/wardenhq/warden/workflows"
)

func newWatchCmd(cn *conn) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "watch WORKFLOW",
		Short: "Follow a turn live: its events and the output of running tools",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, cl, cfg, err := cn.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := follow(cmd.Context(), cl, args[0], cmd.OutOrStdout(), asJSON)
			if err != nil {
				return err
			}
			return printResult(cmd.Context(), cmd.OutOrStdout(), cfg, args[0], res, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per event or output piece")
	return cmd
}

// printResult prints a finished turn's answer (read in full from the
// content store when the result holds only its preview). A turn that
// stopped early (the iteration bound) is an error, so the command's exit
// status says the turn did not finish: 0 means it answered.
func printResult(ctx context.Context, out io.Writer, cfg config.Config, id string, res workflows.TurnResult, asJSON bool) error {
	store, _ := stores.Open(cfg) // without a store the preview stays
	res.Answer = cli.FullAnswer(ctx, store, id, res)
	stopped := error(nil)
	if res.Stopped != "" {
		stopped = fmt.Errorf("turn %s stopped before answering: %s after %d model calls", id, res.Stopped, res.Iterations)
		if res.StopReason != "" {
			stopped = fmt.Errorf("%w: %s", stopped, res.StopReason)
		}
	}
	if asJSON {
		if err := newEncoder(out).Encode(map[string]any{"result": res}); err != nil {
			return err
		}
		return stopped
	}
	if stopped == nil {
		fmt.Fprintf(out, "final answer: %s\n", client.Inert(res.Answer))
	}
	return stopped
}

// follow prints a turn's events and running tools' output until it ends.
func follow(ctx context.Context, cl *client.Client, id string, out io.Writer, asJSON bool) (workflows.TurnResult, error) {
	enc := newEncoder(out)
	return cl.Follow(ctx, id, func(e workflows.Event) {
		if asJSON {
			_ = enc.Encode(map[string]any{"event": e})
			return
		}
		fmt.Fprint(out, client.FormatEvent(e))
	}, func(rc client.RunningCall, fresh string) {
		if asJSON {
			_ = enc.Encode(map[string]any{"output": map[string]any{"call_id": rc.CallID, "tool": rc.Tool, "text": fresh,
				"attempt": rc.Attempt, "started": rc.Started}})
			return
		}
		fmt.Fprint(out, cli.FormatOutput(rc, fresh, time.Now()))
	})
}
