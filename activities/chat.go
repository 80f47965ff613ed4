package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/wardenhq/warden/chat"
	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/workflows"
)

// Error types of the chat activities' failures (retried, a few times:
// a chat outage never blocks a turn).
const (
	// ErrTypeChatRateLimited is the error type of a chat call Slack
	// answered 429: the activity is retried after its Retry-After.
	ErrTypeChatRateLimited = "ChatRateLimited"
	// ErrTypeChatFailed is the error type of any other failed chat call
	// (Slack unreachable, an error answer): its message is one line,
	// what failed and why (chat.Describe).
	ErrTypeChatFailed = "ChatFailed"
)

// Chat posts waiting calls to Slack.
type Chat struct {
	// Service posts the messages: Slack (chat.Slack) today; another
	// chat service is one Messenger away.
	Service Messenger
	// Channel receives the calls no route matches.
	Channel string
	// Routes send the calls they match to their channel instead.
	Routes []ChatRoute
	// StepUp are tool patterns whose calls are never allowed from Slack
	// (chat.StepUp).
	StepUp []string
}

// Messenger is the one interface a chat service implements for the
// worker's side of a channel: post a waiting call to a channel, keep the
// message in step while it waits (an allow short of its quorum, a new
// hash after a policy change: the message as it is now, its buttons
// live), and say how it was answered (no buttons left). The answers
// come back through the inbox's answer core (inbox.Answerer).
type Messenger interface {
	Post(ctx context.Context, channel, workflowID string, p workflows.Pending, inboxURL, stepUp string) (workflows.ChatRef, error)
	Progress(ctx context.Context, ref workflows.ChatRef, workflowID string, p workflows.Pending, inboxURL, stepUp string) error
	Answered(ctx context.Context, ref workflows.ChatRef, workflowID string, p workflows.Pending, a workflows.AnswerNote) error
}

var _ Messenger = (*chat.Slack)(nil)

// ChatRoute sends the calls it matches to Channel.
type ChatRoute struct {
	Match   notify.Match
	Channel string
}

// channels lists the channels of a call: those of the matching routes,
// else the default.
func (c *Chat) channels(in workflows.ChatInput) []string {
	ev := notify.Event{Namespace: in.Namespace, Agent: in.Agent, Tool: in.Pending.Tool, Roles: in.Roles}
	var out []string
	for _, r := range c.Routes {
		if r.Match.Matches(ev) && !slices.Contains(out, r.Channel) {
			out = append(out, r.Channel)
		}
	}
	if len(out) == 0 && c.Channel != "" {
		out = append(out, c.Channel)
	}
	return out
}

// chatProgress is ChatPost's heartbeat detail: the messages posted so
// far, so a retry posts only to the channels still missing.
type chatProgress struct {
	Refs []workflows.ChatRef `json:"refs"`
}

// ChatPost posts a waiting call's message to each of its channels and
// returns where they are. Messages posted by an earlier attempt (its
// heartbeat) are not posted again. An attempt that posted but died
// before it heartbeat posts again: a duplicate message in that narrow
// case.
func (a *Activities) ChatPost(ctx context.Context, in workflows.ChatInput) ([]workflows.ChatRef, error) {
	c := a.Chat
	if c == nil || c.Service == nil {
		return nil, nil
	}
	var prog chatProgress
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &prog)
	}
	why := chat.StepUp(in.Pending, c.StepUp)
	for _, ch := range c.channels(in) {
		if slices.ContainsFunc(prog.Refs, func(r workflows.ChatRef) bool { return r.Channel == ch }) {
			continue
		}
		ref, err := c.Service.Post(ctx, ch, in.WorkflowID, in.Pending, chat.InboxLink(a.InboxURL, in.WorkflowID, in.Pending.CallID), why)
		if err != nil {
			return nil, a.chatFailed(ctx, metrics.ChatPost, fmt.Sprintf("slack: call %s of turn %s not posted to %s", in.Pending.CallID, in.WorkflowID, ch), err)
		}
		// Routes name channels as the config says; Slack answers with ids.
		ref.Channel = firstNonEmpty(ref.Channel, ch)
		prog.Refs = append(prog.Refs, ref)
		activity.RecordHeartbeat(ctx, prog)
	}
	return prog.Refs, nil
}

// ChatUpdate updates a call's messages once it is answered.
func (a *Activities) ChatUpdate(ctx context.Context, in workflows.ChatInput) error {
	c := a.Chat
	if c == nil || c.Service == nil || in.Answer == nil {
		return nil
	}
	var errs []error
	for _, r := range in.Refs {
		if in.Answer.Partial {
			// An allow short of the quorum: the call still waits.
			err := c.Service.Progress(ctx, r, in.WorkflowID, in.Pending, chat.InboxLink(a.InboxURL, in.WorkflowID, in.Pending.CallID), chat.StepUp(in.Pending, c.StepUp))
			if err != nil {
				errs = append(errs, a.chatFailed(ctx, metrics.ChatUpdate, fmt.Sprintf("slack: message of call %s of turn %s in %s not updated", in.Pending.CallID, in.WorkflowID, r.Channel), err))
			}
			continue
		}
		if err := c.Service.Answered(ctx, r, in.WorkflowID, in.Pending, *in.Answer); err != nil {
			errs = append(errs, a.chatFailed(ctx, metrics.ChatUpdate, fmt.Sprintf("slack: message of call %s of turn %s in %s not updated", in.Pending.CallID, in.WorkflowID, r.Channel), err))
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// chatFailed counts a failed Slack call of op (metrics.ChatPost,
// metrics.ChatUpdate), logs it as one line (what failed, chat.Describe's
// why, the attempt) and returns the activity's error with that line as
// its message: a retryable ApplicationError of type ErrTypeChatFailed,
// or ErrTypeChatRateLimited retried after Slack's Retry-After. The
// transport's error chain is left out of the message (the log's error
// attribute keeps it) so that the turn's "chat message not posted"
// event reads as one line.
func (a *Activities) chatFailed(ctx context.Context, op, what string, err error) error {
	a.ChatMetrics.Failed(op)
	msg := what + ": " + chat.Describe(err)
	attempt := int32(1)
	if activity.IsActivity(ctx) {
		attempt = activity.GetInfo(ctx).Attempt
	}
	a.logger().Warn(fmt.Sprintf("%s (attempt %d; retried)", msg, attempt), "op", op, "error", err)
	var rl *chat.RateLimited
	if errors.As(err, &rl) {
		return temporal.NewApplicationErrorWithOptions(msg, ErrTypeChatRateLimited,
			temporal.ApplicationErrorOptions{NextRetryDelay: rl.RetryAfter})
	}
	return temporal.NewApplicationError(msg, ErrTypeChatFailed)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
