package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/wardenhq/warden/workflows"
)

// FilterRemembered returns the remembered approvals active at now, in
// their order, or all of them when all is set.
func FilterRemembered(rs []workflows.Remembered, now time.Time, all bool) []workflows.Remembered {
	if all {
		return rs
	}
	var out []workflows.Remembered
	for _, r := range rs {
		if r.Status(now) == "active" {
			out = append(out, r)
		}
	}
	return out
}

// WriteRememberedTable writes remembered approvals as an aligned table:
// each one's status at now, its scope and where it applies (the turn,
// the agent, "-" for everywhere), its rule ("exact INPUT" for an input),
// who approved it in which call, when it expires and whether it is
// single-use.
func WriteRememberedTable(w io.Writer, rs []workflows.Remembered, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tSCOPE\tWHERE\tTOOL\tRULE\tBY\tFROM\tEXPIRES\tSINGLE-USE")
	for _, r := range rs {
		rule, where, exp := r.What(), "-", "-"
		switch r.Scope {
		case workflows.ScopeTurn:
			where = r.WorkflowID
		case workflows.ScopeAgent:
			where = r.Agent
		}
		if !r.ExpiresAt.IsZero() {
			exp = r.ExpiresAt.Local().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s/%s\t%s\t%v\n", r.ID, r.Status(now), r.Scope, where, r.Tool, rule, r.By,
			r.FromWorkflow, r.CallID, exp, r.SingleUse)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}
