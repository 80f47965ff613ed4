package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/workflows"
)

// newBudgetCmd is `starter budget list|show|set`: agent budgets across
// turns, kept in one budget store per agent.
func newBudgetCmd(cn *conn) *cobra.Command {
	b := &cobra.Command{Use: "budget", Short: "Agent budgets across turns (daily and total): list, show, set"}
	b.AddCommand(newBudgetListCmd(cn), newBudgetShowCmd(cn), newBudgetSetCmd(cn))
	return b
}

// agentArg reads an AGENT argument: "-" is the namespace's budget (turns
// without an agent label).
func agentArg(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

func agentName(s string) string {
	if s == "" {
		return "- (no agent label)"
	}
	return s
}

func newBudgetListCmd(cn *conn) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the agents with a budget: bounds, spent today and in all, share used",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			sts, err := cl.AgentBudgets(ctx)
			if err != nil {
				return err
			}
			now := time.Now()
			for i := range sts {
				sts[i] = sts[i].At(now)
			}
			if asJSON {
				return newEncoder(cmd.OutOrStdout()).Encode(sts)
			}
			return writeBudgets(cmd.OutOrStdout(), sts)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the stores' states as JSON")
	return cmd
}

// writeBudgets prints one line per agent and window.
func writeBudgets(w io.Writer, sts []workflows.AgentBudgetState) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tWINDOW\tBOUND\tSPENT\tUSED")
	for _, st := range sts {
		for _, l := range budgetLines(st) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", agentName(st.Agent), l.window, l.bound, l.spent, l.used)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

type budgetLine struct{ window, bound, spent, used string }

// budgetLines are a store's windows: today's (UTC) and the total.
func budgetLines(st workflows.AgentBudgetState) []budgetLine {
	line := func(window string, b *workflows.Budget, sp workflows.Spend) budgetLine {
		l := budgetLine{window: window, bound: "none", spent: sp.String(), used: "-"}
		if b != nil {
			l.bound, l.used = b.String(), fmt.Sprintf("%.0f%%", 100*sp.Used(b))
		}
		return l
	}
	return []budgetLine{line(workflows.WindowDaily+" "+st.Day+" UTC", st.DailyBound(), st.Today), line(workflows.WindowTotal, st.Total, st.All)}
}

func newBudgetShowCmd(cn *conn) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show AGENT [--json]",
		Short: "Print an agent's budget: bounds, today's raises, spent today and in all (AGENT -: turns without an agent label)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			st, err := cl.AgentBudget(ctx, agentArg(args[0]))
			if err != nil {
				return err
			}
			st = st.At(time.Now())
			if asJSON {
				return newEncoder(cmd.OutOrStdout()).Encode(st)
			}
			return writeBudget(cmd.OutOrStdout(), st)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the store's state as JSON")
	return cmd
}

// writeBudget prints one agent's budget for people.
func writeBudget(w io.Writer, st workflows.AgentBudgetState) error {
	var b strings.Builder
	fmt.Fprintf(&b, "agent %s (budget store %s)\n", agentName(st.Agent), workflows.AgentBudgetStore(st.Agent))
	for _, l := range budgetLines(st) {
		fmt.Fprintf(&b, "%s: bound %s; spent %s; used %s\n", l.window, l.bound, l.spent, l.used)
	}
	if st.DailyRaised != nil {
		fmt.Fprintf(&b, "today's bound was raised by %s (approvals)\n", st.DailyRaised.String())
	}
	if st.SetBy != "" || !st.SetAt.IsZero() {
		fmt.Fprintf(&b, "set by %s at %s\n", orDash(st.SetBy), st.SetAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func newBudgetSetCmd(cn *conn) *cobra.Command {
	return &cobra.Command{
		Use:   "set AGENT daily|total BUDGET|none",
		Short: "Set (or, with none, clear) an agent's daily (UTC day) or total bound, e.g. set ops daily cost=5,tokens=2M",
		Long: "BUDGET is written as for `starter run --budget` (tokens, input_tokens, output_tokens, cost, tool_calls, TOOL=N; no time).\n" +
			"AGENT - is the namespace's budget, which turns without an agent label charge. Turns of the agent started from then on charge its budget.",
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			window := args[1]
			if window != workflows.WindowDaily && window != workflows.WindowTotal {
				return fmt.Errorf("window %q: want daily or total", window)
			}
			var b *workflows.Budget
			if args[2] != "none" {
				nb, err := client.ParseBudget(args[2], false)
				if err != nil {
					return err
				}
				b = &nb
			}
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			st, err := cl.SetAgentBudget(ctx, agentArg(args[0]), window, b, cn.by(""))
			if err != nil {
				return err
			}
			return writeBudget(cmd.OutOrStdout(), st.At(time.Now()))
		},
	}
}
