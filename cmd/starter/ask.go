package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/cmd/starter/internal/cli"
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
			p, err := cl.AskUserCall(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			text, err := cli.FormatAskUserQuestions(p.Input)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), client.Inert(text))
			return nil
		},
	}
}

// askAnswerFlags are the flags of `ask answer`.
type askAnswerFlags struct {
	selects, other []string
	by, jsonFile   string
}

const askAnswerLong = "With one question, --select takes option labels and --other free text.\n" +
	"With several, write --select 'QUESTION=LABEL' and --other 'QUESTION=TEXT', where\n" +
	"QUESTION is the question's text or header; or give the whole answer as JSON\n" +
	`({"answers": [{"question": "...", "selected": ["..."], "other": "..."}]}, "-" for stdin).`

func newAskAnswerCmd(cn *conn) *cobra.Command {
	var f askAnswerFlags
	cmd := &cobra.Command{
		Use:   "answer WORKFLOW CALL (--select LABEL... [--other TEXT] | --json-answer FILE)",
		Short: "Answer a pending AskUser call; the answer is checked against the questions before it is sent",
		Long:  askAnswerLong,
		Args:  cobra.ExactArgs(2),
		RunE:  func(cmd *cobra.Command, args []string) error { return f.run(cmd, cn, args[0], args[1]) },
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.selects, "select", nil, "selected option label (repeatable; QUESTION=LABEL with several questions)")
	fl.StringArrayVar(&f.other, "other", nil, "free-text answer (QUESTION=TEXT with several questions)")
	fl.StringVar(&f.by, "by", "", "who answers (default the key's name, else the OS user)")
	fl.StringVar(&f.jsonFile, "json-answer", "", `answer as JSON {"answers": [...]} or [...] ("-" reads stdin)`)
	return cmd
}

// run answers the AskUser call of the turn wf and prints the answer sent.
func (f askAnswerFlags) run(cmd *cobra.Command, cn *conn, wf, call string) error {
	if f.jsonFile != "" && (len(f.selects) > 0 || len(f.other) > 0) {
		return errors.New("give --json-answer or --select/--other, not both")
	}
	if f.jsonFile == "" && len(f.selects) == 0 && len(f.other) == 0 {
		return errors.New("give --select, --other or --json-answer")
	}
	ctx := cmd.Context()
	c, cl, _, err := cn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	ans, err := f.answer(ctx, cl, cmd.InOrStdin(), wf, call)
	if err != nil {
		return err
	}
	ack, err := cl.AnswerAskUser(ctx, wf, call, ans, cn.by(f.by))
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %s\n%s\n", wf, ack.CallID, ack.Status, client.FormatAskUserAnswer(ans))
	return nil
}

// answer is the answer of --json-answer, or the one --select and --other
// make of the call's questions.
func (f askAnswerFlags) answer(ctx context.Context, cl *client.Client, stdin io.Reader, wf, call string) (tools.AskUserAnswer, error) {
	if f.jsonFile != "" {
		return cli.ReadAskUserAnswer(f.jsonFile, stdin)
	}
	p, err := cl.AskUserCall(ctx, wf, call)
	if errors.Is(err, client.ErrNotAskUser) {
		return tools.AskUserAnswer{}, fmt.Errorf("%w (use: starter external complete)", err)
	}
	if err != nil {
		return tools.AskUserAnswer{}, err
	}
	return client.AskUserAnswerFrom(p.Input, f.selects, f.other)
}

func newExternalCmd(cn *conn) *cobra.Command {
	root := &cobra.Command{Use: "external", Short: "Complete pending external tool calls"}
	root.AddCommand(newExternalCompleteCmd(cn))
	return root
}

// externalFlags are the flags of `external complete`.
type externalFlags struct {
	output, file, by string
	isError          bool
}

func newExternalCompleteCmd(cn *conn) *cobra.Command {
	var f externalFlags
	complete := &cobra.Command{
		Use:   "complete WORKFLOW CALL (--output TEXT | --file F) [--error]",
		Short: "Deliver an external tool call's result (use 'ask answer' for AskUser)",
		Args:  cobra.ExactArgs(2),
		RunE:  func(cmd *cobra.Command, args []string) error { return f.run(cmd, cn, args[0], args[1]) },
	}
	fl := complete.Flags()
	fl.StringVar(&f.output, "output", "", "the tool's output text")
	fl.StringVar(&f.file, "file", "", `read the output from this file ("-" for stdin)`)
	fl.BoolVar(&f.isError, "error", false, "the call failed: the output is an error for the model")
	fl.StringVar(&f.by, "by", "", "who completes it (default the key's name, else the OS user)")
	return complete
}

// run delivers the result to the external call of the turn wf.
func (f externalFlags) run(cmd *cobra.Command, cn *conn, wf, call string) error {
	content, err := f.content(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	c, cl, _, err := cn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
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
	ack, err := cl.CompleteExternal(ctx, wf, workflows.ExternalResult{CallID: call, Hash: p.Hash, Content: content, IsError: f.isError, By: cn.by(f.by)})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %s\n", wf, ack.CallID, ack.Status)
	return nil
}

// content is the result's text: --output, or read from --file ("-":
// stdin).
func (f externalFlags) content(cmd *cobra.Command) (string, error) {
	if cmd.Flags().Changed("output") == (f.file != "") {
		return "", errors.New("give exactly one of --output or --file")
	}
	if f.file == "" {
		return f.output, nil
	}
	var data []byte
	var err error
	if f.file == "-" {
		data, err = io.ReadAll(cmd.InOrStdin())
	} else {
		data, err = os.ReadFile(f.file)
	}
	if err != nil {
		return "", fmt.Errorf("read result: %w", err)
	}
	return string(data), nil
}
