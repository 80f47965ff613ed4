package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestChatFailures: failures count by operation, both series exist at
// zero from the start, an unknown operation counts as a post, and a nil
// *Chat records nothing.
func TestChatFailures(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c := NewChat(reg)
	if n, err := testutil.GatherAndCount(reg, MetricChatFailures); err != nil || n != 2 {
		t.Fatalf("%d series before any failure (%v), want 2", n, err)
	}
	c.Failed(ChatPost)
	c.Failed(ChatUpdate)
	c.Failed(ChatUpdate)
	c.Failed("delete")
	want := `# HELP warden_chat_failures_total Failed Slack calls by operation (post: a waiting call's message, update: the message once answered), each failed attempt counted.
# TYPE warden_chat_failures_total counter
warden_chat_failures_total{op="post"} 2
warden_chat_failures_total{op="update"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricChatFailures); err != nil {
		t.Error(err)
	}
	var none *Chat
	none.Failed(ChatPost)
}
