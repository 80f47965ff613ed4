package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Tool call outcomes, the values of the outcome label of
// warden_tool_calls_total and warden_tool_call_duration_seconds.
const (
	// OutcomeSuccess: the tool ran and reported no error.
	OutcomeSuccess = "success"
	// OutcomeError: the tool ran and reported an error to the model.
	OutcomeError = "error"
	// OutcomeFailure: an infrastructure error (a Go error, retried by
	// the activity's RetryPolicy).
	OutcomeFailure = "failure"
)

// Tools are the metrics of tool call activities and permission
// decisions. A nil *Tools records nothing. Tool names are those of
// registered tools, so the labels stay bounded.
type Tools struct {
	calls     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	decisions *prometheus.CounterVec
	wouldBe   *prometheus.CounterVec
	session   *prometheus.CounterVec
}

// NewTools registers the tool and permission metrics on reg. It panics,
// like promauto, if they are registered twice.
func NewTools(reg prometheus.Registerer) *Tools {
	f := promauto.With(reg)
	return &Tools{
		calls: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_tool_calls_total",
			Help: "Tool call activity attempts by tool and outcome (success, error, failure).",
		}, []string{"tool", "outcome"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "warden_tool_call_duration_seconds",
			Help:    "Wall time of tool call activity attempts (the middleware chain included) by tool and outcome (success, error, failure).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"tool", "outcome"}),
		decisions: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_permission_decisions_total",
			Help: "Permission engine decisions by tool and behavior.",
		}, []string{"tool", "behavior"}),
		wouldBe: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_permission_log_only_total",
			Help: "Verdicts a log-only rule (enforce: false) would have given and did not, by layer (log-only deny rule, session, window) and the behavior it would have given.",
		}, []string{"layer", "would"}),
		session: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_permission_session_total",
			Help: "Calls a session rule (trifecta, rule_of_two) asked about or denied, by rule and behavior.",
		}, []string{"rule", "behavior"}),
	}
}

// WouldBe counts one verdict a log-only rule would have given.
func (m *Tools) WouldBe(layer, would string) {
	if m == nil {
		return
	}
	m.wouldBe.WithLabelValues(layer, would).Inc()
}

// Session counts one call a session rule asked about or denied.
func (m *Tools) Session(rule, behavior string) {
	if m == nil {
		return
	}
	m.session.WithLabelValues(rule, behavior).Inc()
}

// Call records one tool call activity attempt: its outcome (one of
// OutcomeSuccess, OutcomeError and OutcomeFailure) and how long it took.
func (m *Tools) Call(tool, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(tool, outcome).Inc()
	m.duration.WithLabelValues(tool, outcome).Observe(d.Seconds())
}

// Decision counts one permission decision.
func (m *Tools) Decision(tool, behavior string) {
	if m == nil {
		return
	}
	m.decisions.WithLabelValues(tool, behavior).Inc()
}

// ToolOutput is the size of tool outputs as the output middleware sees
// them (after any reduction inside it). A nil *ToolOutput records
// nothing.
type ToolOutput struct {
	size *prometheus.HistogramVec
}

// NewToolOutput registers warden_tool_output_bytes on reg. Registering
// twice on one registry is an error.
func NewToolOutput(reg prometheus.Registerer) (*ToolOutput, error) {
	size := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "warden_tool_output_bytes",
		Help:    "Size of tool call outputs (text and data blocks) in bytes.",
		Buckets: prometheus.ExponentialBuckets(64, 4, 10),
	}, []string{"tool"})
	if err := reg.Register(size); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &ToolOutput{size: size}, nil
}

// Observe records the size in bytes of one call's output.
func (m *ToolOutput) Observe(tool string, n int) {
	if m == nil {
		return
	}
	m.size.WithLabelValues(tool).Observe(float64(n))
}
