package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/cmd/starter/internal/cli"
	"github.com/wardenhq/warden/workflows"
)

func newSessionCmd(cn *conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Long-running agents: start a session, message it while it works, pause, resume or cancel it",
		Long: "A session is one durable conversation of many turns. When a turn answers, the session waits for the\n" +
			"next message, which opens the next turn with the whole conversation. While a turn works, a message\n" +
			"can be queued (delivered when it answers), steer it (delivered at its next model call; nothing is\n" +
			"stopped) or interrupt it (running tool processes are stopped, waiting approvals withdrawn, then the\n" +
			"message is delivered). A message is user content for the model: it never changes the policy, the\n" +
			"mode or the budget. steer, interrupt, pause, resume and cancel also work on a turn started with run.",
	}
	cmd.AddCommand(newSessionStartCmd(cn), newSessionSendCmd(cn), newSessionInterruptCmd(cn),
		newSessionControlCmd(cn, workflows.ControlPause, "Pause a session: no model call or tool call starts until resumed; what runs finishes"),
		newSessionControlCmd(cn, workflows.ControlResume, "Resume a paused session where it stopped"),
		newSessionControlCmd(cn, workflows.ControlCancel, "End a session with a reason, stopping what runs"),
		newSessionShowCmd(cn), newSessionListCmd(cn))
	return cmd
}

func newSessionStartCmd(cn *conn) *cobra.Command {
	f := runFlags{session: true}
	cmd := &cobra.Command{
		Use:   "start --script FILE | --provider NAME --prompt TEXT",
		Short: "Start a session with its first message and follow its first turn to the answer",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cl, _, id, err := f.start(cmd, cn)
			if err != nil {
				return err
			}
			defer c.Close()
			if f.detach {
				return nil
			}
			return followAnswer(cmd, cl, id, 0, f.asJSON)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.id, "session", "", "session id, the workflow id (default generated)")
	fl.BoolVar(&f.asJSON, "json", false, "print events as JSON lines")
	fl.BoolVar(&f.detach, "detach", false, "start the session and return without following its first turn")
	fl.StringSliceVar(&f.senders, "sender", nil, "a user who may message, pause, resume or cancel the session besides you (repeatable; default: you and the approvers)")
	f.register(cmd, "session")
	return cmd
}

// followAnswer follows the session's turn from cursor until it answers
// and prints where to go next.
func followAnswer(cmd *cobra.Command, cl *client.Client, id string, cursor int, asJSON bool) error {
	out := cmd.OutOrStdout()
	enc := newEncoder(out)
	var last workflows.Event
	_, err := cl.FollowTurn(cmd.Context(), id, cursor, func(e workflows.Event) {
		last = e
		if asJSON {
			_ = enc.Encode(map[string]any{"event": e})
			return
		}
		fmt.Fprint(out, client.FormatEvent(e))
	}, func(rc client.RunningCall, fresh string) {
		if !asJSON {
			fmt.Fprint(out, cli.FormatOutput(rc, fresh, time.Now()))
		}
	})
	if err != nil {
		return err
	}
	if last.Type == workflows.EventFailed {
		return fmt.Errorf("session %s stopped: %s", id, last.Text)
	}
	if !asJSON {
		fmt.Fprintf(out, "session %s waits for a message: starter session send %s TEXT\n", id, id)
	}
	return nil
}

func newSessionSendCmd(cn *conn) *cobra.Command {
	var steer, interrupt, follow bool
	var by string
	cmd := &cobra.Command{
		Use:   "send SESSION TEXT",
		Short: "Send a message: queued for after the current turn (default), or --steer, or --interrupt",
		Long: "Sends TEXT to the session. A session waiting for a message starts its next turn with it. While a\n" +
			"turn works, the message is queued for after its answer (the default), delivered at its next model\n" +
			"call (--steer), or delivered after stopping its current step (--interrupt).",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode := workflows.MessageQueue
			switch {
			case steer && interrupt:
				return errors.New("--steer and --interrupt exclude each other")
			case steer:
				mode = workflows.MessageSteer
			case interrupt:
				mode = workflows.MessageInterrupt
			}
			return sendMessage(cmd, cn, args[0], workflows.SessionMessage{Text: args[1], Mode: mode, By: by}, follow)
		},
	}
	cmd.Flags().BoolVar(&steer, "steer", false, "deliver at the current turn's next model call, stopping nothing")
	cmd.Flags().BoolVar(&interrupt, "interrupt", false, "stop the current step (running tools, waiting approvals), then deliver")
	cmd.Flags().BoolVar(&follow, "follow", false, "follow the turn the message reaches until it answers")
	cmd.Flags().StringVar(&by, "by", "", "who sends it (default the key's name): only a delegate key may name another user")
	return cmd
}

func newSessionInterruptCmd(cn *conn) *cobra.Command {
	var follow bool
	var by string
	cmd := &cobra.Command{
		Use:   "interrupt SESSION TEXT",
		Short: "Stop the current step (running tool processes, waiting approvals) and deliver TEXT to the model",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sendMessage(cmd, cn, args[0], workflows.SessionMessage{Text: args[1], Mode: workflows.MessageInterrupt, By: by}, follow)
		},
	}
	cmd.Flags().BoolVar(&follow, "follow", false, "follow the turn until it answers")
	cmd.Flags().StringVar(&by, "by", "", "who sends it (default the key's name)")
	return cmd
}

// sendMessage sends m and prints where it went; with follow, it then
// follows the turn until it answers.
func sendMessage(cmd *cobra.Command, cn *conn, id string, m workflows.SessionMessage, follow bool) error {
	ctx := cmd.Context()
	c, cl, _, err := cn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	cursor := 0
	if follow {
		page, err := cl.Events(ctx, id, 0)
		if err != nil {
			return err
		}
		cursor = page.Next
	}
	m.By = cn.by(m.By)
	ack, err := cl.Send(ctx, id, m)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %s (turn %d)\n", id, ack.Status, ack.Turn)
	if !follow {
		return nil
	}
	return followAnswer(cmd, cl, id, cursor, false)
}

func newSessionControlCmd(cn *conn, action workflows.ControlAction, short string) *cobra.Command {
	var reason, by string
	cmd := &cobra.Command{
		Use:   string(action) + " SESSION",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			ack, err := cl.Control(ctx, args[0], workflows.SessionControl{Action: action, Reason: reason, By: cn.by(by)})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", args[0], ack.Status)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (shown in the session's events and the audit)")
	cmd.Flags().StringVar(&by, "by", "", "who (default the key's name)")
	return cmd
}

func newSessionShowCmd(cn *conn) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show SESSION",
		Short: "Show a session: its state, turns, what it waits for, and its recent messages and answers",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			st, err := cl.State(ctx, args[0])
			if err != nil {
				return err
			}
			page, err := cl.Events(ctx, args[0], 0)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return newEncoder(out).Encode(map[string]any{"state": st, "events": page.Events})
			}
			printSession(out, args[0], st, page.Events)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the state and events as JSON")
	return cmd
}

// printSession prints a session's summary and its conversation as its
// events tell it (messages, answers, stops).
func printSession(out io.Writer, id string, st workflows.Summary, events []workflows.Event) {
	s := st.Session
	if s == nil {
		s = &workflows.SessionSummary{State: "running"}
		if st.Done {
			s.State = "ended"
		}
	}
	kind := "session"
	if !s.Session {
		kind = "turn"
	}
	fmt.Fprintf(out, "%s %s: %s; %d turns answered, %d model calls, %d tool calls\n", kind, id, s.State, s.Turns, st.Iterations, st.ToolCalls)
	if p := s.Paused; p != nil {
		fmt.Fprintf(out, "paused by %s at %s", p.By, p.At.Format(time.RFC3339))
		if p.Reason != "" {
			fmt.Fprintf(out, ": %s", p.Reason)
		}
		fmt.Fprintln(out)
	}
	if s.Queued > 0 || s.Steers > 0 {
		fmt.Fprintf(out, "messages waiting: %d queued for later turns, %d for the next model call\n", s.Queued, s.Steers)
	}
	for _, p := range st.Pending {
		fmt.Fprintf(out, "waiting: %s %s (%s)\n", p.CallID, p.Tool, p.Kind)
	}
	for _, e := range events {
		switch e.Type {
		case workflows.EventMessage, workflows.EventControl, workflows.EventFinal, workflows.EventFailed:
			fmt.Fprint(out, client.FormatEvent(e))
		case workflows.EventModel:
			if strings.TrimSpace(e.Text) != "" {
				fmt.Fprint(out, client.FormatEvent(e))
			}
		}
	}
}

func newSessionListCmd(cn *conn) *cobra.Command {
	var state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sessions, latest first (--state running, waiting, paused, idle or ended)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			rows, err := cl.ListSessions(ctx, state)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return newEncoder(out).Encode(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(out, "no sessions")
			}
			for _, r := range rows {
				fmt.Fprintf(out, "%-40s %-8s started %s\n", r.WorkflowID, r.State, r.Started.Local().Format(time.DateTime))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only sessions in this state")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
