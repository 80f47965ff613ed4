package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Escalation actions, the values of warden_approval_escalations_total's
// action label.
const (
	ActionDeny   = "deny"
	ActionAllow  = "allow"
	ActionNotify = "notify"
)

// Approvals are the metrics of human approvals. A nil *Approvals records
// nothing.
type Approvals struct {
	pending     prometheus.Gauge
	wait        prometheus.Histogram
	escalations *prometheus.CounterVec
	answers     *prometheus.CounterVec
	pollErrors  prometheus.Counter
	windows     *prometheus.CounterVec
}

// NewApprovals registers the approval metrics on reg. Every series
// exists from the start (escalations for each action at zero), so they
// are exposed with their HELP before the first event.
func NewApprovals(reg prometheus.Registerer) *Approvals {
	f := promauto.With(reg)
	a := &Approvals{
		pending: f.NewGauge(prometheus.GaugeOpts{
			Name: "warden_approvals_pending",
			Help: "Pending approvals and external results across running turns, as last counted.",
		}),
		wait: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "warden_approval_wait_seconds",
			Help:    "Time from an approval request to its answer.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 3 * 24 * 3600, 7 * 24 * 3600},
		}),
		escalations: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_approval_escalations_total",
			Help: "Approvals whose deadline passed, by escalation action (deny, allow, notify).",
		}, []string{"action"}),
		answers: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_approval_answers_total",
			Help: "Answered waits by kind (approval, external, budget), how they were answered (the channel: the answer's via such as inbox or a key's name, or escalation, remembered, rule, policy_change, external) and decision.",
		}, []string{"kind", "how", "decision"}),
		pollErrors: f.NewCounter(prometheus.CounterOpts{
			Name: "warden_approvals_poll_errors_total",
			Help: "Failed counts of pending approvals (the gauge keeps its last value).",
		}),
		windows: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_window_limits_reached_total",
			Help: "Calls a window limit (permission.limits) found at its bound, by scope (turn, agent) and whether the limit is enforced (the call asked) or log-only (it ran).",
		}, []string{"scope", "enforced"}),
	}
	for _, act := range []string{ActionDeny, ActionAllow, ActionNotify} {
		a.escalations.WithLabelValues(act)
	}
	return a
}

// SetPending sets the number of pending approvals.
func (a *Approvals) SetPending(n int) {
	if a == nil {
		return
	}
	a.pending.Set(float64(n))
}

// ObserveWait records how long an approval waited for its answer.
func (a *Approvals) ObserveWait(d time.Duration) {
	if a == nil {
		return
	}
	a.wait.Observe(d.Seconds())
}

// Escalated counts an approval whose deadline passed; action is one of
// ActionDeny, ActionAllow and ActionNotify (anything else counts as
// ActionDeny, the default escalation, to keep the label bounded).
func (a *Approvals) Escalated(action string) {
	if a == nil {
		return
	}
	switch action {
	case ActionAllow, ActionNotify:
	default:
		action = ActionDeny
	}
	a.escalations.WithLabelValues(action).Inc()
}

// Answered counts n answered waits of kind, answered how, with decision.
func (a *Approvals) Answered(kind, how, decision string, n int64) {
	if a == nil || n <= 0 {
		return
	}
	a.answers.WithLabelValues(kind, how, decision).Add(float64(n))
}

// Poll sets the pending gauge from count now and then every interval
// (default 30 s) until ctx ends. A failed count leaves the gauge as it
// was and increments warden_approvals_poll_errors_total. Run it in its
// own goroutine.
func (a *Approvals) Poll(ctx context.Context, count func(ctx context.Context) (int, error), every time.Duration) {
	if a == nil {
		return
	}
	if every <= 0 {
		every = 30 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if n, err := count(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			a.pollErrors.Inc()
		} else {
			a.SetPending(n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// WindowReached counts n calls a window limit found at its bound.
func (a *Approvals) WindowReached(scope, enforced string, n int64) {
	if a == nil {
		return
	}
	a.windows.WithLabelValues(scope, enforced).Add(float64(n))
}
