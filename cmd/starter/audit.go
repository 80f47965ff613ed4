package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/audit"
)

// newAuditCmd builds `starter audit`: the decisions recorded in turn
// histories (every run of each continue-as-new chain), as a table or
// JSON lines.
func newAuditCmd(cn *conn) *cobra.Command {
	var workflow, since string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "audit (--workflow ID | --since DURATION|RFC3339) [--jsonl]",
		Short: "List permission decisions, approvals, escalations, external results and executions from turn histories",
		Long: `List permission decisions, approvals, escalations, external results and
executions from turn histories. A turn is read from the server while it has
it and, past the namespace's retention, from the namespace's history archive
(on by default on the embedded server); stderr says which.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (workflow == "") == (since == "") {
				return errors.New("give exactly one of --workflow and --since")
			}
			ctx := cmd.Context()
			c, _, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			var recs []audit.Record
			if workflow != "" {
				var src audit.Source
				recs, src, err = audit.WorkflowFrom(ctx, c, workflow)
				if err == nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "read %s from the %s\n", workflow, src)
				}
			} else {
				var from time.Time
				from, err = parseSince(since, time.Now())
				if err != nil {
					return err
				}
				var turns audit.Turns
				recs, turns, err = audit.SinceFrom(ctx, c, from)
				if err == nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "read %s\n", turns)
				}
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeAuditJSON(cmd.OutOrStdout(), recs)
			}
			return audit.WriteTable(cmd.OutOrStdout(), recs)
		},
	}
	f := cmd.Flags()
	f.StringVar(&workflow, "workflow", "", "audit one turn (workflow id)")
	f.StringVar(&since, "since", "", "audit turns since a duration ago (24h, 7d) or a time (RFC 3339)")
	f.BoolVar(&asJSON, "jsonl", false, "print one JSON record per line (JSONL)")
	f.BoolVar(&asJSON, "json", false, "same as --jsonl")
	_ = f.MarkHidden("json")
	return cmd
}

// parseSince reads a duration before now (24h, or days: 7d) or an
// RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since %q: negative duration", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since %q: want a duration (24h, 7d) or an RFC 3339 time: %w", s, err)
	}
	return t, nil
}

func writeAuditJSON(w io.Writer, recs []audit.Record) error {
	enc := newEncoder(w)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("write record: %w", err)
		}
	}
	return nil
}
