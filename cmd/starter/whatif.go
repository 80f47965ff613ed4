package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/audit"
)

func newPolicyWhatIfCmd(cn *conn) *cobra.Command {
	var rules, since, prefix, home, workdir string
	var asJSON bool
	var parallel, workers int
	cmd := &cobra.Command{
		Use:   "what-if --rules NEW.yaml [--since 7d] [--workflow PREFIX] [--json]",
		Short: "Re-decide every recorded call under a proposed policy and show what would change",
		Long: `what-if reads the same turn histories as "starter audit" and re-decides
every call the engine decided there (the calls it allowed, denied or
asked, those approvers answered, and the inputs approvers edited) with
the worker's decision function under the policy in --rules (a policy,
or a config file whose permission section it reads; its rule examples
must pass).

The proposed policy's rules replace each turn's; the settings it sets
(mode, working_dirs, sensitive_paths, dangerous_files/dirs, sandbox)
replace the turn's, and those it leaves unset keep the turn's. Rules a
turn's approvers added with always allow stay, as they do when the live
policy changes. A call a remembered approval allowed stays allowed where
the proposal would merely ask.

It prints each change of decision (allow→ask, ask→allow, allow→deny,
...) with counts per change, per rule and per tool, and the calls; a
change that would newly allow a call a human once denied is marked
DENIED-BY-HUMAN. Without --since and --workflow it reads the last 7 days.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rules == "" {
				return errors.New("--rules NEW.yaml is required")
			}
			p, err := loadPolicy(rules)
			if err != nil {
				return err
			}
			q := audit.Query{Prefix: prefix, Parallel: parallel}
			if since == "" && prefix == "" {
				since = "7d"
			}
			if since != "" {
				if q.Since, err = parseSince(since, time.Now()); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			c, _, cfg, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			if workdir == "" {
				workdir = cfg.Worker.Workdir
			}
			if workdir, err = filepath.Abs(workdir); err != nil {
				return fmt.Errorf("workdir: %w", err)
			}
			if home == "" {
				home, _ = os.UserHomeDir()
			}
			read := time.Now()
			calls, turns, err := audit.RecordedCalls(ctx, c, q)
			if err != nil {
				return err
			}
			readTook := time.Since(read)
			w, err := audit.Redecide(ctx, calls, audit.WhatIfOptions{Policy: p, Workdir: workdir, Home: home,
				Protected: cfg.Permission.Protected, Workers: workers})
			if err != nil {
				return err
			}
			w.Turns = turns
			out := cmd.OutOrStdout()
			if asJSON {
				if err := newEncoder(out).Encode(w); err != nil {
					return fmt.Errorf("write report: %w", err)
				}
				return nil
			}
			return writeWhatIf(out, filepath.Base(rules), w, readTook)
		},
	}
	f := cmd.Flags()
	f.StringVar(&rules, "rules", "", "the proposed policy (YAML or JSON; a config file's permission section)")
	f.StringVar(&since, "since", "", "turns since a duration ago (24h, 7d) or a time (RFC 3339); default 7d without --workflow")
	f.StringVar(&prefix, "workflow", "", "only turns whose workflow id starts with this prefix")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&home, "home", "", "the backend home ~ resolves to (default the current user's)")
	f.StringVar(&workdir, "workdir", "", "the workdir of turns that recorded none (default the config's worker.workdir)")
	f.IntVar(&parallel, "parallel", 8, "histories read at once")
	f.IntVar(&workers, "workers", 0, "calls decided at once (default the number of CPUs)")
	return cmd
}

// writeWhatIf prints the report: the summary, the counts per change,
// rule and tool, and the changed calls.
func writeWhatIf(w io.Writer, name string, r audit.WhatIf, read time.Duration) error {
	same := 0
	var parts []string
	for _, d := range []string{"allow", "ask", "deny", "invalid"} {
		if n := r.Unchanged[d]; n > 0 {
			same += n
			parts = append(parts, fmt.Sprintf("%d %s", n, d))
		}
	}
	fmt.Fprintf(w, "what-if %s: %d calls of %d turns re-decided in %s (%.0f calls/s; histories read in %s)\n",
		name, r.Calls, r.Turns, r.Elapsed.Round(time.Microsecond), r.PerSecond, read.Round(time.Millisecond))
	fmt.Fprintf(w, "%d would change, %d would not", len(r.Changes), same)
	if len(parts) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	for why, n := range r.Skipped {
		fmt.Fprintf(w, "skipped %d: %s\n", n, why)
	}
	if r.DeniedByHuman > 0 {
		fmt.Fprintf(w, "%d change(s) would newly allow a call a human once denied (DENIED-BY-HUMAN below)\n", r.DeniedByHuman)
	}
	if len(r.Changes) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCHANGE\tCALLS")
	keys := make([]string, 0, len(r.ByChange))
	for k := range r.ByChange {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%d\n", k, r.ByChange[k])
	}
	if len(r.ByRule) > 0 {
		fmt.Fprintln(tw, "\nRULE\tNOW DECIDES\tDECIDED BEFORE")
		for _, rc := range r.ByRule {
			fmt.Fprintf(tw, "%s\t%d\t%d\n", rc.Rule, rc.Now, rc.Was)
		}
	}
	fmt.Fprintln(tw, "\nTOOL\tCHANGES")
	tools := make([]string, 0, len(r.ByTool))
	for k := range r.ByTool {
		tools = append(tools, k)
	}
	slices.Sort(tools)
	for _, k := range tools {
		fmt.Fprintf(tw, "%s\t%d\n", k, r.ByTool[k])
	}
	fmt.Fprintln(tw, "\nTIME\tWORKFLOW\tCALL\tTOOL\tCHANGE\tNOW DECIDED BY\tHUMAN\tMARK\tINPUT")
	for _, c := range r.Changes {
		mark := ""
		if c.DeniedByHuman {
			mark = "DENIED-BY-HUMAN"
		}
		by := c.NowReason
		if len(by) > 80 {
			by = by[:80] + "…"
		}
		in := string(c.Input)
		if len(in) > 100 {
			in = in[:100] + "…"
		}
		human := c.Human
		if human == "" {
			human = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Time.Local().Format("2006-01-02 15:04:05"), c.WorkflowID, c.CallID,
			c.Tool, c.Change, by, human, mark, in)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
