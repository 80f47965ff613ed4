package stream

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the audit stream's: records sent and their lag, batches
// the sink refused, whether it is up, and records found changed after
// they were sent. A nil *Metrics records nothing.
type Metrics struct {
	records, failures, mismatches prometheus.Counter
	lag                           prometheus.Histogram
	sinkUp                        prometheus.Gauge
}

// NewMetrics registers the stream's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		records: f.NewCounter(prometheus.CounterOpts{
			Name: "warden_audit_stream_records_total",
			Help: "Audit records the live audit stream's sink took.",
		}),
		failures: f.NewCounter(prometheus.CounterOpts{
			Name: "warden_audit_stream_failures_total",
			Help: "Batches of audit records the sink refused (they wait and are sent again).",
		}),
		mismatches: f.NewCounter(prometheus.CounterOpts{
			Name: "warden_audit_stream_mismatches_total",
			Help: "Turns whose records read back differed from those already sent (never expected).",
		}),
		lag: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "warden_audit_stream_lag_seconds",
			Help:    "From a record's time in the turn's history to its sink taking it.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
		}),
		sinkUp: f.NewGauge(prometheus.GaugeOpts{
			Name: "warden_audit_stream_sink_up",
			Help: "1 while the audit stream's sink takes records, 0 while it refuses them.",
		}),
	}
	m.sinkUp.Set(1)
	return m
}

func (m *Metrics) sent(lag time.Duration) {
	if m == nil {
		return
	}
	m.records.Inc()
	m.lag.Observe(lag.Seconds())
}

func (m *Metrics) failed() {
	if m != nil {
		m.failures.Inc()
	}
}

func (m *Metrics) mismatch() {
	if m != nil {
		m.mismatches.Inc()
	}
}

func (m *Metrics) up(up bool) {
	if m == nil {
		return
	}
	if up {
		m.sinkUp.Set(1)
	} else {
		m.sinkUp.Set(0)
	}
}
