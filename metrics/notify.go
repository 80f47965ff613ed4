package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// MetricWebhookFailures counts failed webhook deliveries: each attempt
// of the Notify activity that left an event undelivered to one of its
// URLs or more.
const MetricWebhookFailures = "warden_webhook_failures_total"

// Notify is the metrics of webhook notifications. A nil *Notify records
// nothing.
type Notify struct {
	failures prometheus.Counter
}

// NewNotify registers the webhook metrics on reg.
func NewNotify(reg prometheus.Registerer) *Notify {
	return &Notify{failures: promauto.With(reg).NewCounter(prometheus.CounterOpts{
		Name: MetricWebhookFailures,
		Help: "Failed webhook deliveries: each attempt that left a notification undelivered to one of its URLs or more.",
	})}
}

// Failed counts a failed delivery attempt.
func (n *Notify) Failed() {
	if n == nil {
		return
	}
	n.failures.Inc()
}
