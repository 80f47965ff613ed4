package audit

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/calls"
)

// TimeLayout is how tables print times: local time with its zone.
const TimeLayout = "2006-01-02 15:04:05 MST"

// WriteTable writes records as an aligned table, one line per record
// (local times with their zone; "-" for a call without a recorded
// sandbox profile; the details column says what a live-policy
// re-decision decided and under which versions, the rules an answer
// added, what an always_allow remembered (scope, TTL, single use), an
// approver's edited input, the roles an escalation was routed to, and
// the reason: a budget answer's raise or denial), and "no decisions found"
// when there are none.
func WriteTable(w io.Writer, recs []Record) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tWORKFLOW\tCALL\tTOOL\tKIND\tDECISION\tBY\tPATH\tLAYER\tSANDBOX\tDETAILS")
	for _, r := range recs {
		sbx := r.Sandbox
		if sbx == "" {
			sbx = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format(TimeLayout),
			r.WorkflowID, r.CallID, r.Tool, r.Kind, r.Decision, r.By, r.Path, r.Layer, sbx, Details(r))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if len(recs) == 0 {
		fmt.Fprintln(w, "no decisions found")
	}
	return nil
}

// Details is what a table says of r beyond its columns: a live-policy
// re-decision ("released by policy v7 (was v6)"), the rules an answer
// added, what an always_allow remembered, an edited input, the roles an
// escalation was routed to, a remembered approval that allowed the call,
// and the reason; parts are joined by "; ".
func Details(r Record) string {
	var parts []string
	if r.Kind == KindLivePolicy {
		verb := "still waiting under"
		switch r.Decision {
		case "allow":
			verb = "released by"
		case "deny":
			verb = "denied by"
		}
		parts = append(parts, fmt.Sprintf("%s policy v%d (was v%d)", verb, r.PolicyVersion, r.FromVersion))
	}
	if len(r.Rules) > 0 {
		parts = append(parts, "rules "+strings.Join(r.Rules, ", "))
	}
	if r.Scope != "" {
		s := "remembered, " + r.Scope + " scope"
		if r.TTL > 0 {
			s += ", for " + r.TTL.String()
		} else {
			s += ", until revoked"
		}
		if r.SingleUse {
			s += ", once"
		}
		parts = append(parts, s)
	}
	if r.Edited {
		parts = append(parts, "edited input "+cut(calls.Unescaped(string(r.ApprovedInput)), 120))
	}
	if len(r.EscalatedTo) > 0 {
		parts = append(parts, "escalated to "+strings.Join(r.EscalatedTo, ", "))
	}
	if r.Remembered != "" {
		s := "remembered approval " + r.Remembered
		if r.RememberedBy != "" {
			s += " by " + r.RememberedBy
		}
		parts = append(parts, s)
	}
	if r.TeamVersion > 0 {
		parts = append(parts, fmt.Sprintf("approvers: team v%d", r.TeamVersion))
	}
	if r.Reason != "" {
		parts = append(parts, r.Reason)
	}
	parts = append(parts, r.WouldBe...)
	return strings.Join(parts, "; ")
}

// WhatIfOf reads the recorded calls q selects (RecordedCalls) and
// re-decides them under o (Redecide). It returns the report, with the
// number of turns read, and how long reading the histories took.
func WhatIfOf(ctx context.Context, c tclient.Client, q Query, o WhatIfOptions) (WhatIf, time.Duration, error) {
	start := time.Now()
	calls, turns, err := RecordedCalls(ctx, c, q)
	if err != nil {
		return WhatIf{}, 0, err
	}
	read := time.Since(start)
	w, err := Redecide(ctx, calls, o)
	if err != nil {
		return WhatIf{}, read, err
	}
	w.Turns = turns
	return w, read, nil
}

// WriteReport writes the report as text: a summary naming the proposed
// policy (name) and how long reading the histories took (read), the
// counts per change, rule and tool, and the changed calls, those that
// would newly allow a call a human denied marked DENIED-BY-HUMAN.
func (r WhatIf) WriteReport(w io.Writer, name string, read time.Duration) error {
	r.writeSummary(w, name, read)
	if len(r.Changes) == 0 && len(r.Connections) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(r.Changes) > 0 {
		r.writeCounts(tw)
		r.writeChanges(tw)
	}
	r.writeConnections(tw)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// writeConnections writes the table of recorded connections the
// proposed policy would decide otherwise, and why.
func (r WhatIf) writeConnections(tw io.Writer) {
	if len(r.Connections) == 0 {
		return
	}
	fmt.Fprintln(tw, "\nTIME\tWORKFLOW\tCALL\tTOOL\tCONNECTION\tCHANGE\tWHY")
	for _, c := range r.Connections {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Time.Local().Format(TimeLayout), c.WorkflowID, c.CallID,
			c.Tool, c.Host, c.Change, cut(c.Why, 100))
	}
}

// writeSummary writes the report's first lines: what was re-decided,
// how many calls would change, what was skipped and why.
func (r WhatIf) writeSummary(w io.Writer, name string, read time.Duration) {
	same := 0
	var parts []string
	for _, d := range []string{"allow", "ask", "deny", "invalid"} {
		if n := r.Unchanged[d]; n > 0 {
			same += n
			parts = append(parts, fmt.Sprintf("%d %s", n, d))
		}
	}
	fmt.Fprintf(w, "what-if %s: %d calls of %d turns re-decided in %s (%.0f calls/s; histories read in %s)\n",
		name, r.Calls, r.Turns, r.Elapsed.Round(time.Microsecond), r.PerSecond, read.Round(time.Millisecond))
	fmt.Fprintf(w, "%d would change, %d would not", len(r.Changes), same)
	if len(parts) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	for _, why := range slices.Sorted(maps.Keys(r.Skipped)) {
		fmt.Fprintf(w, "skipped %d: %s\n", r.Skipped[why], why)
	}
	if r.DeniedByHuman > 0 {
		fmt.Fprintf(w, "%d change(s) would newly allow a call a human once denied (DENIED-BY-HUMAN below)\n", r.DeniedByHuman)
	}
	if n := len(r.Connections) + r.ConnectionsUnchanged; n > 0 {
		fmt.Fprintf(w, "%d recorded connection(s) replayed: %d would be decided otherwise, %d would not\n", n, len(r.Connections), r.ConnectionsUnchanged)
	}
	if len(r.LogOnly) > 0 {
		fmt.Fprintf(w, "%d call(s) a log-only rule would decide otherwise (not applied):\n", len(r.LogOnly))
		for _, h := range r.LogOnly {
			fmt.Fprintf(w, "  %s %s %s %s: %s\n", h.WorkflowID, h.CallID, h.Tool, cut(calls.Unescaped(string(h.Input)), 80), strings.Join(h.Would, "; "))
		}
	}
}

// writeCounts writes the tables of changes per change, rule and tool.
func (r WhatIf) writeCounts(tw io.Writer) {
	fmt.Fprintln(tw, "\nCHANGE\tCALLS")
	for _, k := range slices.Sorted(maps.Keys(r.ByChange)) {
		fmt.Fprintf(tw, "%s\t%d\n", k, r.ByChange[k])
	}
	if len(r.ByRule) > 0 {
		fmt.Fprintln(tw, "\nRULE\tNOW DECIDES\tDECIDED BEFORE")
		for _, rc := range r.ByRule {
			fmt.Fprintf(tw, "%s\t%d\t%d\n", rc.Rule, rc.Now, rc.Was)
		}
	}
	fmt.Fprintln(tw, "\nTOOL\tCHANGES")
	for _, k := range slices.Sorted(maps.Keys(r.ByTool)) {
		fmt.Fprintf(tw, "%s\t%d\n", k, r.ByTool[k])
	}
}

// writeChanges writes the table of changed calls, their reasons and
// inputs cut short.
func (r WhatIf) writeChanges(tw io.Writer) {
	fmt.Fprintln(tw, "\nTIME\tWORKFLOW\tCALL\tTOOL\tCHANGE\tNOW DECIDED BY\tHUMAN\tMARK\tINPUT")
	for _, c := range r.Changes {
		mark := ""
		if c.DeniedByHuman {
			mark = "DENIED-BY-HUMAN"
		}
		human := c.Human
		if human == "" {
			human = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Time.Local().Format(TimeLayout), c.WorkflowID, c.CallID,
			c.Tool, c.Change, cut(c.NowReason, 80), human, mark, cut(calls.Unescaped(string(c.Input)), 100))
	}
}

// cut shortens s to at most its first n bytes, cut on a character
// boundary, and an ellipsis when it is longer.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
