package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/audit"
)

const approvalsHistoryLong = `List the answered entries of the approval queue, newest first: approvals
and denials, budget raises and denials, external results and AskUser answers,
escalations that allowed or denied at the deadline, and waiting calls a
policy change decided. Each line says who answered, by which channel (via:
inbox, slack, key for a person's own key, deadline, policy, or unsigned on a
server without keys), when and why.

The answers are read from the turns' histories (as starter audit reads them),
from the server or, past retention, from the archive. The inbox shows the same
list at /history.`

// newApprovalsHistoryCmd builds `starter approvals history`: the queue's
// answered entries (audit.Answers), filtered, as a table or JSON.
func newApprovalsHistoryCmd(cn *conn) *cobra.Command {
	var since, workflow string
	var f audit.AnswerFilter
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List answered approvals and external calls (who, via which channel, when, why), newest first",
		Long:  approvalsHistoryLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, err := parseSince(since, time.Now())
			if err != nil {
				return err
			}
			if limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (all) or more", limit)
			}
			ctx := cmd.Context()
			c, _, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			all, err := audit.Answers(ctx, c, audit.Query{Since: from, Prefix: workflow})
			if err != nil {
				return err
			}
			recs := []audit.Record{}
			for _, r := range all {
				if limit > 0 && len(recs) == limit {
					break
				}
				if f.Keeps(r) {
					recs = append(recs, r)
				}
			}
			if asJSON {
				type answer struct {
					audit.Record
					Via string `json:"via"`
				}
				out := make([]answer, len(recs))
				for i, r := range recs {
					out[i] = answer{Record: r, Via: audit.Channel(r)}
				}
				return jsonEncoder(cmd.OutOrStdout()).Encode(out)
			}
			return audit.WriteAnswers(cmd.OutOrStdout(), recs)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&since, "since", "24h", "answers since a duration ago (24h, 7d) or a time (RFC 3339)")
	fl.StringVar(&workflow, "workflow", "", "only turns whose workflow id starts with this")
	fl.StringVar(&f.By, "by", "", "only answers by this approver")
	fl.StringVar(&f.Via, "via", "", "only answers by this channel: inbox, slack, key, deadline, policy or unsigned")
	fl.StringVar(&f.Decision, "decision", "", "only this decision: allow, always_allow, deny, raise, completed, error")
	fl.StringVar(&f.Tool, "tool", "", "only this tool (Budget for budget approvals)")
	fl.StringVar(&f.Kind, "kind", "", "only this kind: approval, budget, external, escalation or live_policy")
	fl.IntVar(&limit, "limit", 200, "at most this many answers (0: all)")
	fl.BoolVar(&asJSON, "json", false, "print JSON: the audit records, each with its via")
	return cmd
}
