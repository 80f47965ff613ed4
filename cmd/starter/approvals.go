package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/cmd/starter/internal/cli"
	"github.com/wardenhq/warden/workflows"
)

func newApprovalsCmd(cn *conn) *cobra.Command {
	root := &cobra.Command{Use: "approvals", Short: "List and answer pending permission approvals"}
	root.AddCommand(newApprovalsListCmd(cn), newDecideCmd(cn, true), newDecideCmd(cn, false), newApprovalsHistoryCmd(cn))
	return root
}

const approvalsListLong = `List pending approvals and external calls across all turns, oldest first.

Entries come from the index each waiting turn keeps in its memo, read with
visibility listings alone; --tool, --older-than and --workflow filter on the
server. With --limit, only the first visibility page of that many turns is
read, in the server's order (turns started last first).`

func newApprovalsListCmd(cn *conn) *cobra.Command {
	var f client.Filter
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List pending approvals and external calls across all turns, oldest first",
		Long:  approvalsListLong,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cl, _, err := cn.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			entries, err := cl.ListPendingLimit(cmd.Context(), f, limit)
			if err != nil {
				return err
			}
			if !asJSON {
				return cli.WritePendingTable(cmd.OutOrStdout(), entries, time.Now())
			}
			if entries == nil {
				entries = []client.PendingEntry{}
			}
			return jsonEncoder(cmd.OutOrStdout()).Encode(entries)
		},
	}
	cmd.Flags().StringVar(&f.Tool, "tool", "", "only this tool")
	cmd.Flags().DurationVar(&f.OlderThan, "older-than", 0, "only entries waiting longer than this")
	cmd.Flags().StringVar(&f.Workflow, "workflow", "", "only turns whose workflow id starts with this")
	cmd.Flags().IntVar(&limit, "limit", 0, "read only the first page: the entries of at most this many turns (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// newDecideCmd builds "approve" (allow=true) or "deny".
func newDecideCmd(cn *conn, allow bool) *cobra.Command {
	f := decideFlags{allow: allow}
	use, short := "approve WORKFLOW CALL", "Allow a pending call (once, or always with --always)"
	if !allow {
		use, short = "deny WORKFLOW CALL --reason TEXT", "Deny a pending call with a reason the model will read"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  func(_ *cobra.Command, args []string) error { return f.checkArgs(args) },
		RunE:  func(cmd *cobra.Command, args []string) error { return f.run(cmd, cn, args) },
	}
	f.declare(cmd)
	return cmd
}

// printAnswers prints each answer's outcome (refusals to errOut) and
// returns how many failed. An answer sent by signal is printed as sent,
// not as taken: the turn checks it later and only its events say
// whether it was refused.
func printAnswers(out, errOut io.Writer, rs []client.Answered, d workflows.Decision) int {
	failed := 0
	for _, r := range rs {
		if r.Err != nil {
			failed++
			fmt.Fprintf(errOut, "%s %s: %v\n", r.WorkflowID, r.Pending.CallID, r.Err)
			continue
		}
		if r.Signaled {
			fmt.Fprintf(out, "%s %s: %s sent by signal, not yet checked: the turn checks it when a worker runs it and records a refusal as a rejected event (starter watch %s)\n",
				r.WorkflowID, r.Pending.CallID, d, r.WorkflowID)
			continue
		}
		status := string(d)
		if r.Status != "" {
			status = r.Status
		}
		fmt.Fprintf(out, "%s %s: %s\n", r.WorkflowID, r.Pending.CallID, status)
	}
	return failed
}

// checkArgs wants WORKFLOW CALL, or --all (without --hash) and none.
func (f *decideFlags) checkArgs(args []string) error {
	if f.all && len(args) != 0 || !f.all && len(args) != 2 {
		return errors.New("give WORKFLOW CALL, or --all with filters")
	}
	if f.all && f.hash != "" {
		return errors.New("--hash answers one call; --all answers each entry with the hash it lists")
	}
	return nil
}
