package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/content/stores"
)

func newShowCmd(cn *conn) *cobra.Command {
	var asJSON bool
	var head string
	cmd := &cobra.Command{
		Use:   "show WORKFLOW",
		Short: "Print a turn's conversation from the content store",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, cl, cfg, err := cn.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			store, err := stores.Open(cfg)
			if err != nil {
				return err
			}
			conv, err := cl.Conversation(cmd.Context(), store, args[0], head)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return jsonEncoder(out).Encode(conv)
			}
			_, err = fmt.Fprint(out, client.FormatConversation(conv))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the conversation as one JSON document")
	cmd.Flags().StringVar(&head, "head", "", "print the conversation ending at this head (e.g. the original of a compaction)")
	return cmd
}

func newGCCmd(cn *conn) *cobra.Command {
	var closed, dry, asJSON bool
	var older time.Duration
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove stored content of turns the server no longer has (or, with --closed, of closed turns)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cl, cfg, err := cn.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			store, err := stores.Open(cfg)
			if err != nil {
				return err
			}
			rep, err := cl.GC(cmd.Context(), store, client.GCOptions{Closed: closed, OlderThan: older, DryRun: dry})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return jsonEncoder(out).Encode(rep)
			}
			verb := "removed"
			if dry {
				verb = "would remove"
			}
			for _, t := range rep.Removed {
				fmt.Fprintf(out, "%s %s\n", verb, t)
			}
			fmt.Fprintf(out, "%d turns in %s: %s %d, kept %d\n", rep.Turns, store, verb, len(rep.Removed), rep.Kept)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&closed, "closed", false, "also remove the content of closed turns")
	f.DurationVar(&older, "older-than", 0, "with --closed, only turns closed at least this long ago")
	f.BoolVar(&dry, "dry-run", false, "report without removing")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// jsonEncoder writes indented JSON without HTML escaping.
func jsonEncoder(w io.Writer) *json.Encoder {
	enc := newEncoder(w)
	enc.SetIndent("", "  ")
	return enc
}

// newEncoder writes JSON without HTML escaping: operators read commands
// with && and > in it, not \u0026\u0026 and \u003e.
func newEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
