package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// chatOptions bound the chat activities: a few attempts (a 429's
// Retry-After is the activity's next retry delay), then the turn goes on
// without the message. A chat outage never blocks or fails a turn.
func chatOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: time.Minute, MaximumAttempts: 5},
	})
}

// chatInput is the chat activities' input about p.
func (t *turn) chatInput(ctx workflow.Context, p Pending) ChatInput {
	n := t.notifyInput(ctx, "", p)
	return ChatInput{WorkflowID: n.WorkflowID, Pending: p, Namespace: n.Namespace, Agent: n.Agent, Roles: n.Roles}
}

// chatPost posts the message of a call that starts waiting, keyed by the
// call: the activity's result (channel and ts of each message) goes into
// the entry's Chat, which continue-as-new carries. The post runs beside
// the turn; if the call is answered before it returns, the message is
// updated as soon as it does. Runs recorded before versionChatSlack post
// nothing.
func (t *turn) chatPost(ctx workflow.Context, p Pending) {
	if !p.ChatOn || workflow.GetVersion(ctx, versionChatSlack, workflow.DefaultVersion, 1) < 1 {
		return
	}
	f := workflow.ExecuteActivity(chatOptions(ctx), ActivityChatPost, t.chatInput(ctx, p))
	t.chats = append(t.chats, f)
	workflow.Go(ctx, func(gctx workflow.Context) {
		var refs []ChatRef
		if err := f.Get(gctx, &refs); err != nil {
			t.emit(gctx, Event{Type: EventCustom, CallID: p.CallID, Tool: p.Tool, Text: "chat message not posted: " + chatFailure(err)})
			return
		}
		posted := p
		if i := t.pendingIndex(p.CallID); i >= 0 {
			t.pending[i].Chat = refs
			p = t.pending[i]
		}
		if a, ok := t.chatNotes[p.CallID]; ok {
			p.Chat = refs
			t.chatUpdate(gctx, p, a)
			return
		}
		// The call changed while its post was in flight (a new hash, an
		// allow short of its quorum): the message is drawn again.
		changed := p.Hash != posted.Hash || len(p.Approvals) != len(posted.Approvals)
		if _, err := t.findOpen(p.CallID); err == nil && changed &&
			workflow.GetVersion(gctx, versionChatRefresh, workflow.DefaultVersion, 1) >= 1 {
			t.chatUpdate(gctx, p, AnswerNote{Partial: true, At: workflow.Now(gctx)})
		}
	})
}

// chatFailure is the one line a failed chat activity reports (the
// activity's own message, such as "slack: call c1 of turn t not posted
// to #ops: Slack unreachable: connection refused"), without the
// activity error's ids and error type around it.
func chatFailure(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Message() != "" {
		return ae.Message()
	}
	return err.Error()
}

// chatAnswered updates the messages of p once it is answered (or, while
// its post is still in flight, once that returns).
func (t *turn) chatAnswered(ctx workflow.Context, p Pending, a AnswerNote) {
	if !p.ChatOn {
		return
	}
	if len(p.Chat) == 0 {
		if t.chatNotes == nil {
			t.chatNotes = map[string]AnswerNote{}
		}
		t.chatNotes[p.CallID] = a
		return
	}
	t.chatUpdate(ctx, p, a)
}

func (t *turn) chatUpdate(ctx workflow.Context, p Pending, a AnswerNote) {
	in := t.chatInput(ctx, p)
	in.Answer, in.Refs = &a, p.Chat
	t.chats = append(t.chats, workflow.ExecuteActivity(chatOptions(ctx), ActivityChatUpdate, in))
}

// chatsSettled reports whether every chat activity of this run is done.
func (t *turn) chatsSettled() bool {
	for _, f := range t.chats {
		if !f.IsReady() {
			return false
		}
	}
	return true
}
