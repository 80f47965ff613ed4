package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Chat operations, the values of warden_chat_failures_total's op label.
const (
	// ChatPost is posting a waiting call's message.
	ChatPost = "post"
	// ChatUpdate is updating it once the call is answered.
	ChatUpdate = "update"
)

// MetricChatFailures counts failed Slack calls by operation (ChatPost,
// ChatUpdate): each failed attempt, rate limits included.
const MetricChatFailures = "warden_chat_failures_total"

// Chat is the metrics of the Slack messages of waiting calls. A nil
// *Chat records nothing.
type Chat struct {
	failures *prometheus.CounterVec
}

// NewChat registers the chat metrics on reg. Both operations' series
// exist from the start, at zero, so an alert on them sees the worker
// before its first failure.
func NewChat(reg prometheus.Registerer) *Chat {
	c := &Chat{failures: promauto.With(reg).NewCounterVec(prometheus.CounterOpts{
		Name: MetricChatFailures,
		Help: "Failed Slack calls by operation (post: a waiting call's message, update: the message once answered), each failed attempt counted.",
	}, []string{"op"})}
	for _, op := range []string{ChatPost, ChatUpdate} {
		c.failures.WithLabelValues(op)
	}
	return c
}

// Failed counts a failed Slack call; op is ChatPost or ChatUpdate
// (anything else counts as ChatPost, to keep the label bounded).
func (c *Chat) Failed(op string) {
	if c == nil {
		return
	}
	if op != ChatUpdate {
		op = ChatPost
	}
	c.failures.WithLabelValues(op).Inc()
}
