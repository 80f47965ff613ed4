package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/decide"
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

const policyTestLong = `test runs the examples of the rules of FILE (a policy, or a config file
such as temporal-dev.yaml, whose permission section it reads), offline.

A rule carries examples in its long form:

  allow:
    - rule: Bash(npm run:*)
      match: ["npm run build"]
      not_match: ["npm install"]

Examples of Bash rules and of dangerous_commands are commands, of the
path tools (Read, Write, Edit, Glob, Grep) paths, of other tools their
JSON input. Relative paths resolve against --workdir. A policy whose
examples fail does not load in the worker or any other command, nor one
with a content rule for a tool that matches no content (PowerShell(...),
AskUser(...)); test prints every rule and what it matched, and exits
non-zero when an example fails or a rule cannot match.`

func newPolicyTestCmd() *cobra.Command {
	var o decide.ExampleOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test FILE",
		Short: "Run the match/not_match examples of a policy's rules and print what each rule matched",
		Long:  policyTestLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := config.ReadPolicy(args[0])
			if err != nil {
				return err
			}
			rs, err := decide.TestExamples(cmd.Context(), p, o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if rs == nil {
					rs = []decide.ExampleResult{}
				}
				if err := newEncoder(out).Encode(rs); err != nil {
					return fmt.Errorf("write results: %w", err)
				}
			} else {
				decide.WriteExamples(out, filepath.Base(args[0]), p, rs)
			}
			if failed := decide.FailedExamples(rs); failed > 0 {
				return fmt.Errorf("%d of %d rule examples fail", failed, len(rs))
			}
			// A rule no call can match does not load either.
			return decide.CheckPolicyRules(decide.ToolLookup(tools.Builtins()), p)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Workdir, "workdir", "", "the workspace relative paths resolve against (default the current directory)")
	f.StringVar(&o.Home, "home", "", "the home directory ~ resolves to in commands (default unknown)")
	f.BoolVar(&asJSON, "json", false, "print the results as a JSON array")
	return cmd
}
