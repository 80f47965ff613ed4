package workflows

import (
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/sdk/temporal"
)

// TestChatFailure: the turn's "chat message not posted" event carries
// the chat activity's one-line message, not the activity error around
// it.
func TestChatFailure(t *testing.T) {
	const msg = "slack: call c1 of turn wf not posted to C1: Slack unreachable: connection refused"
	ae := temporal.NewApplicationError(msg, "ChatFailed")
	if got := chatFailure(fmt.Errorf("activity error (type: ChatPost, scheduledEventID: 9): %w", ae)); got != msg {
		t.Errorf("got %q", got)
	}
	if got := chatFailure(errors.New("timeout")); got != "timeout" {
		t.Errorf("plain error: %q", got)
	}
}
