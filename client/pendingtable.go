package client

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wardenhq/warden/workflows"
)

// ListPendingLimit lists pending entries as ListPending does or, when
// limit is positive, only those of the first visibility page of at most
// limit turns (ListPendingPage), in the server's order.
func (cl *Client) ListPendingLimit(ctx context.Context, f Filter, limit int) ([]PendingEntry, error) {
	if limit <= 0 {
		return cl.ListPending(ctx, f)
	}
	page, err := cl.ListPendingPage(ctx, f, limit, nil)
	return page.Entries, err
}

// WritePendingTable writes pending entries as an aligned table, one line
// each: the call, how long it has waited at now, its hash, its input and
// what it asks about on one line each, its suggested rules and what the
// agent said.
func WritePendingTable(w io.Writer, entries []PendingEntry, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKFLOW\tCALL\tKIND\tTOOL\tWAITING\tHASH\tINPUT\tREASON\tSUGGESTED\tAGENT SAID")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\t%s\n", e.WorkflowID, e.CallID, kind(e), e.Tool,
			now.Sub(e.RequestedAt).Round(time.Second), e.Hash, oneLine(e.Preview, 60), why(e), e.Suggestions,
			oneLine(e.Context, 60))
	}
	return tw.Flush()
}

// kind is the entry's kind, with how many of the approvers it needs
// have allowed it ("approval (1 of 2)") when it needs more than one.
func kind(e PendingEntry) string {
	if q := workflows.QuorumText(e.Pending, len(e.Approvals)); q != "" {
		return fmt.Sprintf("%s (%s)", e.Kind, q)
	}
	return string(e.Kind)
}

// why says what an entry asks about. Its reason may name only the
// layer that decided ("Mode: default"); the message then says why ("not
// read-only: `touch` ..."), without the "Permission required for TOOL"
// preamble every message starts with.
func why(e PendingEntry) string {
	msg := e.Message
	if rest, ok := strings.CutPrefix(msg, "Permission required for "+e.Tool); ok {
		if _, after, found := strings.Cut(rest, "): "); found && strings.HasPrefix(rest, " (") {
			msg = after
		} else {
			msg = strings.TrimPrefix(rest, ": ")
		}
	}
	if strings.TrimSpace(msg) == "" {
		return e.Reason
	}
	return oneLine(msg, 100)
}

// oneLine shows s on one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}
