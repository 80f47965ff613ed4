// The queue's history: the answers to waiting calls (approvals, budget
// approvals, external results, escalations and live-policy decisions),
// with the channel each came by, as the inbox's history and `starter
// approvals history` list them.

package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	tclient "go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"
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
// answer whose reason says Slack came from a Slack button; one whose by
// differs from the key it was sent with came from a delegate, the
// inbox (any other key answers only as itself).
func Channel(r Record) string {
	switch {
	case r.Kind == KindEscalation || r.Path == PathEscalation:
		return ChannelDeadline
	case r.Kind == KindLivePolicy:
		return ChannelPolicy
	case strings.HasPrefix(r.Reason, "from Slack"):
		return ChannelSlack
	case r.Identity == "":
		return ChannelUnsigned
	case r.By != r.Identity:
		return ChannelInbox
	}
	return ChannelKey
}

// Answers reads the turns q selects (q.Parallel at a time) and returns
// their answers (IsAnswer) not older than q.Since, newest first.
func Answers(ctx context.Context, c tclient.Client, q Query) ([]Record, error) {
	ids, err := turnIDs(ctx, c, q)
	if err != nil {
		return nil, err
	}
	n := q.Parallel
	if n <= 0 {
		n = 8
	}
	per := make([][]Record, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(n)
	for i, id := range ids {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			recs, _, err := WorkflowFrom(gctx, c, id)
			if err != nil {
				return err
			}
			per[i] = AnswersOf(recs, q)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read histories: %w", err)
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
