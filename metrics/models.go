package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Models are the metrics of model calls. A nil *Models records nothing.
// Their labels (provider, model) come from configuration, never from
// free text.
type Models struct {
	calls    *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewModels registers the model metrics on reg. Labelled series appear
// on the first Observe or Init of their provider and model; the metric
// families are registered (with HELP) at once.
func NewModels(reg prometheus.Registerer) *Models {
	f := promauto.With(reg)
	return &Models{
		calls: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_model_calls_total",
			Help: "Model calls by provider, model and outcome (success, error).",
		}, []string{"provider", "model", "outcome"}),
		tokens: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_model_tokens_total",
			Help: "Model tokens by provider, model and kind (input, output).",
		}, []string{"provider", "model", "kind"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "warden_model_duration_seconds",
			Help:    "Wall time of model calls.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}, []string{"provider", "model"}),
	}
}

// Init creates a provider and model's series at zero, so they are
// exposed before its first call.
func (m *Models) Init(provider, model string) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(provider, model, "success")
	m.calls.WithLabelValues(provider, model, "error")
	m.tokens.WithLabelValues(provider, model, "input")
	m.tokens.WithLabelValues(provider, model, "output")
	m.duration.WithLabelValues(provider, model)
}

// Observe records one model call: its duration, its input and output
// token counts and its outcome (error when err is not nil).
func (m *Models) Observe(provider, model string, d time.Duration, in, out int, err error) {
	if m == nil {
		return
	}
	outcome := "success"
	if err != nil {
		outcome = "error"
	}
	m.calls.WithLabelValues(provider, model, outcome).Inc()
	if in > 0 {
		m.tokens.WithLabelValues(provider, model, "input").Add(float64(in))
	}
	if out > 0 {
		m.tokens.WithLabelValues(provider, model, "output").Add(float64(out))
	}
	m.duration.WithLabelValues(provider, model).Observe(d.Seconds())
}
