package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
(on by default on the embedded server); stderr says which. Each turn's
records are numbered and hash-chained (seq, prev, hash in --jsonl); audit
verify checks an export against the histories.`,
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
	cmd.AddCommand(newAuditVerifyCmd(cn))
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

// newAuditVerifyCmd builds `starter audit verify FILE`: an export of
// `audit --jsonl` (a file, or - for stdin) checked against the turns'
// histories on the server or in the archive.
func newAuditVerifyCmd(cn *conn) *cobra.Command {
	return &cobra.Command{
		Use:   "verify FILE",
		Short: "Check an exported audit (audit --jsonl) against the turns' histories and name the first record that does not match",
		Long: `Check an exported audit (audit --jsonl, a file or - for stdin) against the
turns' histories, read from the server or, past retention, from the archive.
Each record's hash must match its content, follow the turn's record before it
in the export, and equal the history's record of the same number: an edited,
removed or reordered record is named by its line. Records the history has
after a turn's last exported one are reported, not refused (an export made
while the turn ran).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			recs, lines, err := readAuditExport(cmd.InOrStdin(), args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			c, _, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			source := map[string][]audit.Record{}
			turns := audit.Turns{}
			var order []string
			for _, r := range recs {
				if _, ok := source[r.WorkflowID]; ok || r.WorkflowID == "" {
					continue
				}
				got, src, err := audit.WorkflowFrom(ctx, c, r.WorkflowID)
				if err != nil {
					return err
				}
				source[r.WorkflowID] = got
				turns[src]++
				order = append(order, r.WorkflowID)
			}
			if err := audit.Verify(recs, source); err != nil {
				var m *audit.Mismatch
				if errors.As(err, &m) {
					m.Line = lines[m.Line-1]
				}
				return err
			}
			last := map[string]int{}
			for _, r := range recs {
				last[r.WorkflowID] = r.Seq
			}
			out := cmd.OutOrStdout()
			for _, id := range order {
				if more := len(source[id]) - last[id]; more > 0 {
					fmt.Fprintf(out, "turn %s: the history has %d more records after record %d\n", id, more, last[id])
				}
			}
			fmt.Fprintf(out, "verified %d records of %d turn(s) (read %s)\n", len(recs), len(order), turns)
			return nil
		},
	}
}

// readAuditExport reads JSON-lines records from name (- for in), and
// the line each was on.
func readAuditExport(in io.Reader, name string) ([]audit.Record, []int, error) {
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		in = f
	}
	var recs []audit.Record
	var lines []int
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, nil, fmt.Errorf("%s line %d: %w", name, line, err)
		}
		recs = append(recs, r)
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", name, err)
	}
	return recs, lines, nil
}
