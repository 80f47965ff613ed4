// The queue's history: the answers to waiting calls (approvals, budget
// approvals, external results, escalations and live-policy decisions),
// with the channel each came by, as the inbox's history and `starter
// approvals history` list them.

package audit

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	tclient "go.temporal.io/sdk/client"
)

// Channels an answer came by (Channel).
const (
	// ChannelInbox: a delegate key (the inbox's) answered for a user it
	// signed in.
	ChannelInbox = "inbox"
	// ChannelSlack: a Slack button, through the inbox (its reason starts
	// "from Slack").
	ChannelSlack = "slack"
	// ChannelKey: a person's own key (starter approvals, the client
	// library).
	ChannelKey = "key"
	// ChannelDeadline: the approval's deadline passed (an escalation).
	ChannelDeadline = "deadline"
	// ChannelPolicy: the policy store changed and decided the call.
	ChannelPolicy = "policy"
	// ChannelUnsigned: a server without keys, where nobody checked who
	// sent the answer.
	ChannelUnsigned = "unsigned"
)

// IsAnswer reports whether r answered a waiting entry: an approval or
// denial, a budget raise or deny, an external result, an escalation
// that allowed or denied, or a live-policy decision that did.
func IsAnswer(r Record) bool {
	switch r.Kind {
	case KindApproval, KindBudget, KindExternal:
		return true
	case KindEscalation, KindLivePolicy:
		return r.Decision == "allow" || r.Decision == "deny"
	}
	return false
}

// Channel names the channel an answer came by (ChannelInbox, ...): an
// escalation's is the deadline, a live-policy decision's the policy; an
// answer the inbox sent with a reason that says Slack came from a Slack
// button (fromSlack); one whose by
// differs from the key it was sent with came from a delegate, the
// inbox (any other key answers only as itself).
func Channel(r Record) string {
	switch {
	case r.Kind == KindEscalation || r.Path == PathEscalation:
		return ChannelDeadline
	case r.Kind == KindLivePolicy:
		return ChannelPolicy
	case fromSlack(r):
		return ChannelSlack
	case r.Identity == "":
		return ChannelUnsigned
	case r.By != r.Identity:
		return ChannelInbox
	}
	return ChannelKey
}

// fromSlack reports whether r came from a Slack button: the inbox (a
// delegate, or a server without keys) sends its clicks with a reason
// that starts "from Slack", which a budget answer's reason quotes after
// what it raised.
func fromSlack(r Record) bool {
	if r.Identity != "" && r.By == r.Identity {
		return false
	}
	return strings.HasPrefix(r.Reason, "from Slack") || strings.Contains(r.Reason, ": from Slack")
}

// Answers reads the turns q selects (q.Parallel at a time) and returns
// their answers (IsAnswer) not older than q.Since, newest first.
func Answers(ctx context.Context, c tclient.Client, q Query) ([]Record, error) {
	per, err := readTurns(ctx, c, q, func(ctx context.Context, id string) ([]Record, error) {
		recs, _, err := WorkflowFrom(ctx, c, id)
		if err != nil {
			return nil, err
		}
		return AnswersOf(recs, q), nil
	})
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, rs := range per {
		out = append(out, rs...)
	}
	slices.SortStableFunc(out, func(a, b Record) int { return b.Time.Compare(a.Time) })
	return out, nil
}

// AnswersOf keeps the answers of recs not older than q.Since, in their
// order.
func AnswersOf(recs []Record, q Query) []Record {
	var out []Record
	for _, r := range recs {
		if IsAnswer(r) && (q.Since.IsZero() || !r.Time.Before(q.Since)) {
			out = append(out, r)
		}
	}
	return out
}

// AnswerFilter selects answers: each field set must equal the record's
// (case aside; Via the record's Channel).
type AnswerFilter struct {
	By, Via, Decision, Tool, Kind string
}

// Keeps reports whether r passes the filter.
func (f AnswerFilter) Keeps(r Record) bool {
	eq := func(want, got string) bool { return want == "" || strings.EqualFold(want, got) }
	return eq(f.By, r.By) && eq(f.Via, Channel(r)) && eq(f.Decision, r.Decision) && eq(f.Tool, r.Tool) && eq(f.Kind, r.Kind)
}

// WriteAnswers writes answers as an aligned table, one line per answer
// (local times with their zone; the reason, which for a budget answer
// says what it raised, cut to 80 bytes), and "no answers found" when there are none.
func WriteAnswers(w io.Writer, recs []Record) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tDECISION\tBY\tVIA\tTOOL\tWORKFLOW\tCALL\tREASON")
	for _, r := range recs {
		d := r.Decision
		if r.Kind != KindApproval {
			d += " (" + r.Kind + ")"
		}
		via := Channel(r)
		if r.Identity != "" && r.Identity != via && via != ChannelKey {
			via += " (" + r.Identity + ")"
		}
		why := r.Reason
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format(TimeLayout), d, r.By, via, r.Tool,
			r.WorkflowID, r.CallID, cut(strings.ReplaceAll(why, "\n", " "), 80))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if len(recs) == 0 {
		fmt.Fprintln(w, "no answers found")
	}
	return nil
}
