package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	wmodel "github.com/wardenhq/warden/model"
)

// Models are the metrics of model calls. A nil *Models records nothing.
// Their labels (provider, model) come from configuration, never from
// free text.
type Models struct {
	calls    *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	cost     *prometheus.CounterVec
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
			Help: "Model tokens by provider, model and kind (input, cache_read, cache_write, output).",
		}, []string{"provider", "model", "kind"}),
		cost: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_model_cost_total",
			Help: "Cost of model calls by provider and model, in the currency of the worker's price table (priced models only).",
		}, []string{"provider", "model"}),
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

// Observe records one model call: its duration, its token counts by
// kind (input, cache_read, cache_write, output), its cost when it was
// priced, and its outcome (error when err is not nil).
func (m *Models) Observe(provider, model string, d time.Duration, u wmodel.Usage, err error) {
	if m == nil {
		return
	}
	outcome := "success"
	if err != nil {
		outcome = "error"
	}
	m.calls.WithLabelValues(provider, model, outcome).Inc()
	for _, k := range []struct {
		kind string
		n    int
	}{{"input", u.InputTokens}, {"cache_read", u.CacheReadTokens}, {"cache_write", u.CacheWriteTokens}, {"output", u.OutputTokens}} {
		if k.n > 0 {
			m.tokens.WithLabelValues(provider, model, k.kind).Add(float64(k.n))
		}
	}
	if u.Cost != nil {
		m.cost.WithLabelValues(provider, model).Add(*u.Cost)
	}
	m.duration.WithLabelValues(provider, model).Observe(d.Seconds())
}
