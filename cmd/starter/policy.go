package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// newPolicyCmd is "starter policy": checking a policy change before it
// ships (its rules' examples, what it would have decided), and the live
// policy store (apply, show, remembered approvals).
func newPolicyCmd(cn *conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Test a permission policy and see what a change would do",
	}
	cmd.AddCommand(newPolicyTestCmd(), newPolicyWhatIfCmd(cn))
	addLivePolicyCmds(cmd, cn)
	return cmd
}

func newPolicyTestCmd() *cobra.Command {
	var workdir, home string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test FILE",
		Short: "Run the match/not_match examples of a policy's rules and print what each rule matched",
		Long: `test runs the examples of the rules of FILE (a policy, or a config file
such as temporal-dev.yaml, whose permission section it reads), offline.

A rule carries examples in its long form:

  allow:
    - rule: Bash(npm run:*)
      match: ["npm run build"]
      not_match: ["npm install"]

Examples of Bash rules and of dangerous_commands are commands, of the
path tools (Read, Write, Edit, Glob, Grep) paths, of other tools their
JSON input. Relative paths resolve against --workdir. A policy whose
examples fail does not load in the worker or any other command; test
prints every rule and what it matched, and exits non-zero when an
example fails.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := config.ReadPolicy(args[0])
			if err != nil {
				return err
			}
			rs, err := tools.TestExamples(cmd.Context(), p, tools.ExampleOptions{Workdir: workdir, Home: home})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if rs == nil {
					rs = []tools.ExampleResult{}
				}
				if err := newEncoder(out).Encode(rs); err != nil {
					return fmt.Errorf("write results: %w", err)
				}
			} else {
				writeExamples(out, filepath.Base(args[0]), p, rs)
			}
			failed := 0
			for _, r := range rs {
				if !r.OK() {
					failed++
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d rule examples fail", failed, len(rs))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&workdir, "workdir", "", "the workspace relative paths resolve against (default the current directory)")
	f.StringVar(&home, "home", "", "the home directory ~ resolves to in commands (default unknown)")
	f.BoolVar(&asJSON, "json", false, "print the results as a JSON array")
	return cmd
}

// writeExamples prints every rule of p, in its list's order, with what
// it matched of its examples.
func writeExamples(w io.Writer, name string, p permission.Policy, rs []tools.ExampleResult) {
	failed, rules := 0, 0
	for _, r := range rs {
		if !r.OK() {
			failed++
		}
	}
	lists := []struct {
		name  string
		rules []string
	}{{permission.ListDeny, p.Deny}, {permission.ListAsk, p.Ask}, {permission.ListAllow, p.Allow}, {permission.ListDangerousCommands, p.DangerousCommands}}
	for _, l := range lists {
		for i, rule := range l.rules {
			rules++
			fmt.Fprintf(w, "%s rule %d  %s\n", l.name, i+1, rule)
			n := 0
			for _, r := range rs {
				if r.List != l.name || r.Index != i+1 {
					continue
				}
				n++
				status := "ok  "
				if !r.OK() {
					status = "FAIL"
				}
				what := "matches       "
				if !r.Matched {
					what = "does not match"
				}
				want := "match"
				if !r.Want {
					want = "not_match"
				}
				line := fmt.Sprintf("  %s  %s %q (%s example)", status, what, r.Example, want)
				if r.Err != "" {
					line = fmt.Sprintf("  %s  %q (%s example): %s", status, r.Example, want, r.Err)
				}
				fmt.Fprintln(w, line)
			}
			if n == 0 {
				fmt.Fprintln(w, "  (no examples)")
			}
		}
	}
	fmt.Fprintf(w, "%s: %d rules, %d examples, %d failed\n", name, rules, len(rs), failed)
}

// loadPolicy reads a permission policy file (config.ReadPolicy) and
// refuses one whose rules' examples fail (tools.CheckExamples, a
// *tools.ExampleError naming each failing rule and example). Relative
// paths of path rules and examples resolve against the current
// directory, as `starter permission check` resolves them.
func loadPolicy(path string) (permission.Policy, error) {
	p, err := config.ReadPolicy(path)
	if err != nil {
		return p, err
	}
	if err := tools.CheckExamples(context.Background(), p, tools.ExampleOptions{}); err != nil {
		return p, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}
