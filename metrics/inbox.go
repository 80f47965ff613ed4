package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Names of the approvals inbox's metrics.
const (
	// MetricInboxUnauthorized counts inbox answers refused because the
	// user's roles do not cover the call.
	MetricInboxUnauthorized = "warden_inbox_unauthorized_total"
	// MetricInboxSigninFailures counts requests whose credentials were
	// refused, by how they were presented (label "method": link, bearer,
	// basic or cookie). Requests without credentials are not counted.
	MetricInboxSigninFailures = "warden_inbox_signin_failures_total"
	// MetricInboxRefusals counts answers the inbox did not get taken, by
	// the channel they came by (label "channel": inbox for its answer
	// endpoints, slack for Slack's buttons): refused by the inbox
	// (roles, a bad request, a stale hash, step-up) or by the turn.
	MetricInboxRefusals = "warden_inbox_refusals_total"
)

// Inbox is the approvals inbox's counters.
type Inbox struct {
	Unauthorized   prometheus.Counter
	SigninFailures *prometheus.CounterVec
	Refusals       *prometheus.CounterVec
}

// NewInbox builds the inbox's counters, registered with reg unless it is
// nil (then they count but are not exported).
func NewInbox(reg prometheus.Registerer) *Inbox {
	f := promauto.With(reg) // a nil Registerer registers nothing
	refusals := f.NewCounterVec(prometheus.CounterOpts{
		Name: MetricInboxRefusals,
		Help: "Answers the inbox did not get taken (refused by the inbox or by the turn), by channel (inbox, slack).",
	}, []string{"channel"})
	for _, ch := range []string{"inbox", "slack"} {
		refusals.WithLabelValues(ch)
	}
	return &Inbox{
		Refusals: refusals,
		Unauthorized: f.NewCounter(prometheus.CounterOpts{
			Name: MetricInboxUnauthorized,
			Help: "Inbox answers refused because the user's roles do not cover the call.",
		}),
		SigninFailures: f.NewCounterVec(prometheus.CounterOpts{
			Name: MetricInboxSigninFailures,
			Help: "Inbox requests whose credentials (token link, bearer token, basic auth or cookie) were refused.",
		}, []string{"method"}),
	}
}
