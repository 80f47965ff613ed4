package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

func newAskCmd(cn *conn) *cobra.Command {
	root := &cobra.Command{Use: "ask", Short: "Show and answer pending AskUser questions"}
	root.AddCommand(newAskShowCmd(cn), newAskAnswerCmd(cn))
	return root
}

func newAskShowCmd(cn *conn) *cobra.Command {
	return &cobra.Command{
		Use:   "show WORKFLOW CALL",
		Short: "Print a pending AskUser call's questions and options",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, cl, _, err := cn.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			p, err := cl.PendingCall(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if p.Tool != client.AskUserTool {
				return fmt.Errorf("call %s is a %s call, not an AskUser question", args[1], p.Tool)
			}
			text, err := client.FormatAskUserQuestions(p.Input)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), text)
			return nil
		},
	}
}

func newAskAnswerCmd(cn *conn) *cobra.Command {
	var selects, other []string
	var by, jsonFile string
	cmd := &cobra.Command{
		Use:   "answer WORKFLOW CALL (--select LABEL... [--other TEXT] | --json-answer FILE)",
		Short: "Answer a pending AskUser call; the answer is checked against the questions before it is sent",
		Long: "With one question, --select takes option labels and --other free text.\n" +
			"With several, write --select 'QUESTION=LABEL' and --other 'QUESTION=TEXT', where\n" +
			"QUESTION is the question's text or header; or give the whole answer as JSON\n" +
			`({"answers": [{"question": "...", "selected": ["..."], "other": "..."}]}, "-" for stdin).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if jsonFile != "" && (len(selects) > 0 || len(other) > 0) {
				return errors.New("give --json-answer or --select/--other, not both")
			}
			if jsonFile == "" && len(selects) == 0 && len(other) == 0 {
				return errors.New("give --select, --other or --json-answer")
			}
			ctx := cmd.Context()
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			wf, call := args[0], args[1]
			var ans tools.AskUserAnswer
			if jsonFile != "" {
				if ans, err = client.ReadAskUserAnswer(jsonFile, cmd.InOrStdin()); err != nil {
					return err
				}
			} else {
				p, err := cl.PendingCall(ctx, wf, call)
				if err != nil {
					return err
				}
				if p.Tool != client.AskUserTool {
					return fmt.Errorf("call %s is a %s call, not an AskUser question (use: starter external complete)", call, p.Tool)
				}
				if ans, err = client.AskUserAnswerFrom(p.Input, selects, other); err != nil {
					return err
				}
			}
			ack, err := cl.AnswerAskUser(ctx, wf, call, ans, cn.by(by))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %s\n%s\n", wf, ack.CallID, ack.Status, client.FormatAskUserAnswer(ans))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&selects, "select", nil, "selected option label (repeatable; QUESTION=LABEL with several questions)")
	f.StringArrayVar(&other, "other", nil, "free-text answer (QUESTION=TEXT with several questions)")
	f.StringVar(&by, "by", "", "who answers (default the key's name, else the OS user)")
	f.StringVar(&jsonFile, "json-answer", "", `answer as JSON {"answers": [...]} or [...] ("-" reads stdin)`)
	return cmd
}

func newExternalCmd(cn *conn) *cobra.Command {
	root := &cobra.Command{Use: "external", Short: "Complete pending external tool calls"}
	var output, file, by string
	var isError bool
	complete := &cobra.Command{
		Use:   "complete WORKFLOW CALL (--output TEXT | --file F) [--error]",
		Short: "Deliver an external tool call's result (use 'ask answer' for AskUser)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("output") == (file != "") {
				return errors.New("give exactly one of --output or --file")
			}
			content := output
			if file != "" {
				var data []byte
				var err error
				if file == "-" {
					data, err = io.ReadAll(cmd.InOrStdin())
				} else {
					data, err = os.ReadFile(file)
				}
				if err != nil {
					return fmt.Errorf("read result: %w", err)
				}
				content = string(data)
			}
			ctx := cmd.Context()
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			wf, call := args[0], args[1]
			p, err := cl.PendingCall(ctx, wf, call)
			if err != nil {
				return err
			}
			if p.Kind != workflows.PendingExternal {
				return fmt.Errorf("call %s waits for an approval (use: starter approvals approve|deny)", call)
			}
			if p.Tool == client.AskUserTool {
				return errors.New("AskUser answers are checked against the questions: use starter ask answer")
			}
			ack, err := cl.CompleteExternal(ctx, wf, workflows.ExternalResult{CallID: call, Hash: p.Hash, Content: content, IsError: isError, By: cn.by(by)})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %s\n", wf, ack.CallID, ack.Status)
			return nil
		},
	}
	f := complete.Flags()
	f.StringVar(&output, "output", "", "the tool's output text")
	f.StringVar(&file, "file", "", `read the output from this file ("-" for stdin)`)
	f.BoolVar(&isError, "error", false, "the call failed: the output is an error for the model")
	f.StringVar(&by, "by", "", "who completes it (default the key's name, else the OS user)")
	root.AddCommand(complete)
	return root
}
