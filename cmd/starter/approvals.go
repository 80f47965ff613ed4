package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/workflows"
)

func newApprovalsCmd(cn *conn) *cobra.Command {
	root := &cobra.Command{Use: "approvals", Short: "List and answer pending permission approvals"}
	root.AddCommand(newApprovalsListCmd(cn), newDecideCmd(cn, true), newDecideCmd(cn, false))
	return root
}

func newApprovalsListCmd(cn *conn) *cobra.Command {
	var f client.Filter
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List pending approvals and external calls across all turns, oldest first",
		Long: `List pending approvals and external calls across all turns, oldest first.

Entries come from the index each waiting turn keeps in its memo, read with
visibility listings alone; --tool, --older-than and --workflow filter on the
server. With --limit, only the first visibility page of that many turns is
read, in the server's order (turns started last first).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cl, _, err := cn.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			var entries []client.PendingEntry
			if limit > 0 {
				var page client.PendingPage
				page, err = cl.ListPendingPage(cmd.Context(), f, limit, nil)
				entries = page.Entries
			} else {
				entries, err = cl.ListPending(cmd.Context(), f)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := newEncoder(out)
				enc.SetIndent("", "  ")
				if entries == nil {
					entries = []client.PendingEntry{}
				}
				return enc.Encode(entries)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKFLOW\tCALL\tKIND\tTOOL\tWAITING\tHASH\tINPUT\tREASON\tSUGGESTED\tAGENT SAID")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\t%s\n", e.WorkflowID, e.CallID, e.Kind, e.Tool,
					time.Since(e.RequestedAt).Round(time.Second), e.Hash, oneLine(e.Preview, 60), why(e), e.Suggestions,
					oneLine(e.Context, 60))
			}
			return tw.Flush()
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
	var always, all, signal bool
	var rules []string
	var by, reason, tool, input, hash, scope, agent string
	var olderThan, ttl time.Duration
	var once bool
	use, short := "approve WORKFLOW CALL", "Allow a pending call (once, or always with --always)"
	if !allow {
		use, short = "deny WORKFLOW CALL --reason TEXT", "Deny a pending call with a reason the model will read"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args: func(_ *cobra.Command, args []string) error {
			if all && len(args) != 0 || !all && len(args) != 2 {
				return errors.New("give WORKFLOW CALL, or --all with filters")
			}
			if all && hash != "" {
				return errors.New("--hash answers one call; --all answers each entry with the hash it lists")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !allow && reason == "" {
				return errors.New("--reason is required")
			}
			a := workflows.Approval{Decision: workflows.DecisionAllow, Rules: rules, Reason: reason}
			if always {
				a.Decision = workflows.DecisionAlwaysAllow
			}
			if scope != "" || ttl != 0 || once || agent != "" {
				if !always {
					return errors.New("--scope, --ttl, --once and --agent remember an --always approval: add --always")
				}
				if scope == "" {
					return errors.New("--ttl, --once and --agent need --scope input|turn|agent|namespace")
				}
				switch sc := workflows.RememberScope(scope); sc {
				case workflows.ScopeInput, workflows.ScopeTurn, workflows.ScopeAgent, workflows.ScopeNamespace:
					a.Scope, a.TTL, a.SingleUse, a.Agent = sc, ttl, once, agent
				default:
					return fmt.Errorf("--scope %q: want input, turn, agent or namespace", scope)
				}
			}
			if !allow {
				a.Decision = workflows.DecisionDeny
			}
			if input != "" {
				if !json.Valid([]byte(input)) {
					return errors.New("--input is not valid JSON")
				}
				a.Input = json.RawMessage(input)
			}
			c, cl, cfg, err := cn.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			a.By = cn.by(by)
			// With inbox users configured, CLI decisions follow the same
			// rules: --by must name a user whose roles cover the call.
			var allowed func(by, tool string, input json.RawMessage) error
			if len(cfg.Inbox.Users) > 0 {
				authz, err := inbox.NewPolicy(cfg.Inbox.Users, cfg.Inbox.Roles)
				if err != nil {
					return err
				}
				allowed = func(by, tool string, input json.RawMessage) error {
					if !authz.Allows(by, tool, input) {
						return fmt.Errorf("%q may not answer %s calls like this one (inbox users and roles in the config)", by, tool)
					}
					return nil
				}
			}
			sel := client.Selection{All: all, Filter: client.Filter{Tool: tool, OlderThan: olderThan}, Hash: hash, FullInput: allowed != nil}
			if !all {
				sel.WorkflowID, sel.CallID = args[0], args[1]
			}
			targets, err := cl.Targets(cmd.Context(), sel)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var failed int
			for _, r := range cl.AnswerAll(cmd.Context(), targets, a, signal, allowed) {
				if r.Err != nil {
					failed++
					fmt.Fprintf(cmd.ErrOrStderr(), "%s %s: %v\n", r.WorkflowID, r.Pending.CallID, r.Err)
					continue
				}
				fmt.Fprintf(out, "%s %s: %s\n", r.WorkflowID, r.Pending.CallID, a.Decision)
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d answers failed", failed, len(targets))
			}
			if all {
				fmt.Fprintf(out, "%d answered\n", len(targets))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&by, "by", "", "who decides (default the key's name, else the OS user)")
	f.StringVar(&hash, "hash", "", "the call's hash as listed by `approvals list` (default: the call as read now); refused if the call or policy changed since")
	f.BoolVar(&signal, "signal", false, "send a signal instead of an update (accepted while no worker runs)")
	f.BoolVar(&all, "all", false, "answer every pending approval matching --tool/--older-than")
	f.StringVar(&tool, "tool", "", "with --all: only this tool")
	f.DurationVar(&olderThan, "older-than", 0, "with --all: only entries waiting longer than this")
	if allow {
		f.BoolVar(&always, "always", false, "also add a rule so similar calls are allowed from now on")
		f.StringArrayVar(&rules, "rule", nil, "rule to add with --always (default the suggested rules)")
		f.StringVar(&input, "input", "", "run with this edited JSON input instead (re-checked)")
		f.StringVar(&scope, "scope", "", "with --always: remember it in the policy store for input (this exact input), turn, agent or namespace, instead of this turn only")
		f.StringVar(&agent, "agent", "", "with --scope agent: the turn label or workflow-id prefix (default the turn's label)")
		f.DurationVar(&ttl, "ttl", 0, "with --scope: forget it after this long")
		f.BoolVar(&once, "once", false, "with --scope: forget it after the first call it allows")
	} else {
		f.StringVar(&reason, "reason", "", "why (the model reads it)")
	}
	return cmd
}

// oneLine shows s on one line of at most n bytes.
// why says what an entry asks about. Its reason may name only the
// layer that decided ("Mode: default"); the message then says why ("not
// read-only: `touch` ..."), without the "Permission required for TOOL"
// preamble every message starts with.
func why(e client.PendingEntry) string {
	msg := e.Message
	if rest, ok := strings.CutPrefix(msg, "Permission required for "+e.Tool); ok {
		if _, after, found := strings.Cut(rest, "): "); found && strings.HasPrefix(rest, " (") {
			msg = after
		} else {
			msg = strings.TrimPrefix(rest, ": ")
		}
	}
	if strings.TrimSpace(msg) == "" {
		return e.Reason
	}
	return oneLine(msg, 100)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}
