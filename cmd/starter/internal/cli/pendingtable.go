package cli

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/workflows"
)

// TableWidth is the width WritePendingTable keeps every line within.
const TableWidth = 120

// WritePendingTable writes pending entries as a table of at most
// TableWidth columns: per entry one line with the call, how long it has
// waited at now, its deadline (relative, and the local time with its
// zone) and its input; the whole workflow id and call id on a line of
// their own when the first cut them; and an indented line with its hash (what
// `approve --hash` takes),  that it waits for an external result, why it
// asks, its suggested rules and what the agent said (cut to fit; `list
// --json` has them whole).
func WritePendingTable(w io.Writer, entries []client.PendingEntry, now time.Time) error {
	head := []string{"WORKFLOW", "CALL", "TOOL", "WAITING", "DEADLINE", "INPUT"}
	caps := []int{24, 10, 10, 7, 26}
	rows := make([][]string, 0, len(entries))
	for _, e := range entries {
		rows = append(rows, []string{e.WorkflowID, e.CallID, e.Tool,
			now.Sub(e.RequestedAt).Round(time.Second).String(), Deadline(e.Deadline, now), e.Preview})
	}
	widths := make([]int, len(caps))
	for i := range caps {
		widths[i] = utf8.RuneCountInString(head[i])
		for _, r := range rows {
			widths[i] = max(widths[i], min(utf8.RuneCountInString(r[i]), caps[i]))
		}
	}
	line := func(cells []string) string {
		var b strings.Builder
		for i, c := range cells[:len(caps)] {
			c = oneLine(c, widths[i])
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
		}
		rest := TableWidth - utf8.RuneCountInString(b.String())
		return strings.TrimRight(b.String()+oneLine(cells[len(caps)], max(rest, 10)), " ")
	}
	var b strings.Builder
	b.WriteString(line(head) + "\n")
	for i, e := range entries {
		b.WriteString(line(rows[i]) + "\n")
		if utf8.RuneCountInString(e.WorkflowID) > widths[0] || utf8.RuneCountInString(e.CallID) > widths[1] {
			b.WriteString("    " + oneLine("workflow "+e.WorkflowID+" call "+e.CallID, TableWidth-4) + "\n")
		}
		more := []string{"hash " + e.Hash}
		if e.Kind == workflows.PendingExternal {
			more = append(more, "waits for an external result")
		} else if k := kind(e); k != string(workflows.PendingApproval) {
			// A budget approval, or a call short of its quorum ("approval
			// (1 of 2)").
			more = append(more, k)
		}
		if s := why(e); s != "" {
			more = append(more, s)
		}
		if len(e.Suggestions) > 0 {
			more = append(more, "suggests "+strings.Join(e.Suggestions, ", "))
		}
		if e.Context != "" {
			more = append(more, "agent: "+e.Context)
		}
		b.WriteString("    " + oneLine(strings.Join(more, " · "), TableWidth-4) + "\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// Deadline says when a wait ends, as seen at now: "in 6d23h (12-09
// 05:04 UTC)", "passed (…)", or "none".
func Deadline(at, now time.Time) string {
	if at.IsZero() {
		return "none"
	}
	abs := at.Local().Format("01-02 15:04 MST")
	d := at.Sub(now)
	if d <= 0 {
		return "passed (" + abs + ")"
	}
	return "in " + shortDuration(d) + " (" + abs + ")"
}

// shortDuration prints d in its two largest units: 6d23h, 4h05m, 3m20s.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	days, h, m, sec := int(d/(24*time.Hour)), int(d/time.Hour)%24, int(d/time.Minute)%60, int(d/time.Second)%60
	switch {
	case days > 0:
		return fmt.Sprintf("%dd%dh", days, h)
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, sec)
	}
	return fmt.Sprintf("%ds", sec)
}

// kind is the entry's kind, with how many of the approvers it needs
// have allowed it ("approval (1 of 2)") when it needs more than one.
func kind(e client.PendingEntry) string {
	if q := workflows.QuorumText(e.Pending, len(e.Approvals)); q != "" {
		return fmt.Sprintf("%s (%s)", e.Kind, q)
	}
	return string(e.Kind)
}

// why says what an entry asks about. Its reason may name only the
// layer that decided ("Mode: default"); the message then says why ("not
// read-only: `touch` ..."), without the "Permission required for TOOL"
// preamble every message starts with.
func why(e client.PendingEntry) string {
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

// oneLine shows s on one line of at most n characters, cut at a word
// boundary when one is near, with "…", inert (client.Inert).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(client.Inert(s)), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:max(n-1, 0)]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > len(cut)*2/3 {
		cut = cut[:i]
	}
	return cut + "…"
}
