package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/workflows"
)

func newWatchCmd(cn *conn) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "watch WORKFLOW",
		Short: "Follow a turn live: its events and the output of running tools",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, cl, _, err := cn.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := follow(cmd.Context(), cl, args[0], cmd.OutOrStdout(), asJSON)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"result": res})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "final answer: %s\n", res.Answer)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per event or output piece")
	return cmd
}

// follow prints a turn's events and running tools' output until it ends.
func follow(ctx context.Context, cl *client.Client, id string, out io.Writer, asJSON bool) (workflows.TurnResult, error) {
	enc := json.NewEncoder(out)
	return cl.Follow(ctx, id, func(e workflows.Event) {
		if asJSON {
			_ = enc.Encode(map[string]any{"event": e})
			return
		}
		fmt.Fprint(out, client.FormatEvent(e))
	}, func(rc client.RunningCall, fresh string) {
		if asJSON {
			_ = enc.Encode(map[string]any{"output": map[string]any{"call_id": rc.CallID, "tool": rc.Tool, "text": fresh}})
			return
		}
		for _, line := range strings.Split(strings.TrimRight(fresh, "\n"), "\n") {
			fmt.Fprintf(out, "  %s │ %s\n", rc.CallID, line)
		}
	})
}
