package activities

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the worker's tool and permission metrics. A nil *Metrics
// records nothing.
type Metrics struct {
	toolCalls    *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec
	decisions    *prometheus.CounterVec
}

// NewMetrics registers warden's metrics on reg (never the global registry).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		toolCalls: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_tool_calls_total",
			Help: "Tool call activity attempts by tool and outcome (success, error, failure).",
		}, []string{"tool", "outcome"}),
		toolDuration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "warden_tool_call_duration_seconds",
			Help:    "Wall time of tool call activity attempts.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"tool"}),
		decisions: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_permission_decisions_total",
			Help: "Permission engine decisions by tool and behavior.",
		}, []string{"tool", "behavior"}),
	}
}

func (m *Metrics) toolCall(tool, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
	m.toolDuration.WithLabelValues(tool).Observe(d.Seconds())
}

func (m *Metrics) decision(tool, behavior string) {
	if m == nil {
		return
	}
	m.decisions.WithLabelValues(tool, behavior).Inc()
}
