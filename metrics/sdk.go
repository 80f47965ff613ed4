package metrics

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden/workflows"
	"go.temporal.io/sdk/client"
)

// NewSDKHandler returns a Temporal SDK metrics handler that records into
// reg, for client.Options.MetricsHandler. Metric names keep the SDK's
// temporal_ prefix with characters Prometheus rejects (dots, dashes)
// turned into underscores; counters get a _total suffix and timers
// become histograms in seconds with a _seconds suffix; gauges keep their
// name. Tag keys become label names (sanitized the same way).
//
// Series are created lazily, one metric vector per (kind, name, sorted
// tag keys), so the SDK may use different tag sets for one name. The
// handler registers a single collector on reg; it panics, like
// promauto, if that registration fails.
//
// Timers named in routes are sent to those functions instead (warden's
// workflow reports approval waits this way, replay-safe, into a histogram
// registered up front with its HELP).
func NewSDKHandler(reg prometheus.Registerer, routes ...Route) client.MetricsHandler {
	c := &sdkCollector{vecs: map[vecKey]prometheus.Collector{}, routes: map[string]func(time.Duration){},
		counters: map[string]func(map[string]string, int64){}}
	for _, r := range routes {
		if r.Timer != "" {
			c.routes[r.Timer] = r.Observe
		}
		if r.Counter != "" {
			c.counters[r.Counter] = r.Add
		}
	}
	reg.MustRegister(c)
	return &sdkHandler{c: c}
}

// Route sends an SDK timer or counter to a function of warden's own
// metrics.
type Route struct {
	Timer   string
	Observe func(time.Duration)
	Counter string
	Add     func(tags map[string]string, n int64)
}

// ApprovalRoutes sends the agent-turn workflow's approval metrics
// (recorded replay-safe through workflow.GetMetricsHandler) to a.
func ApprovalRoutes(a *Approvals) []Route {
	return []Route{
		{Timer: workflows.MetricApprovalWait, Observe: a.ObserveWait},
		{Counter: workflows.MetricApprovalEscalation, Add: func(tags map[string]string, n int64) {
			for range n {
				a.Escalated(tags["action"])
			}
		}},
		{Counter: workflows.MetricApprovalAnswers, Add: func(tags map[string]string, n int64) {
			a.Answered(tags["kind"], tags["how"], tags["decision"], n)
		}},
		{Counter: workflows.MetricWindowReached, Add: func(tags map[string]string, n int64) {
			a.WindowReached(tags["scope"], tags["enforced"], n)
		}},
	}
}

type kind int

const (
	kindCounter kind = iota
	kindGauge
	kindTimer
)

type vecKey struct {
	kind kind
	name string
	// keys are the sorted label names joined by commas.
	keys string
}

// sdkCollector owns the lazily created vectors. It is an unchecked
// collector (Describe sends nothing), since its metrics are not known
// up front.
type sdkCollector struct {
	mu       sync.Mutex
	vecs     map[vecKey]prometheus.Collector
	routes   map[string]func(time.Duration)
	counters map[string]func(map[string]string, int64)
}

// Describe implements prometheus.Collector; it describes nothing, which
// makes the collector unchecked.
func (c *sdkCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c *sdkCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	vecs := slices.Collect(maps.Values(c.vecs))
	c.mu.Unlock()
	for _, v := range vecs {
		v.Collect(ch)
	}
}

// vec returns the vector for k, creating it on first use.
func (c *sdkCollector) vec(k vecKey, labels []string) prometheus.Collector {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.vecs[k]; ok {
		return v
	}
	help := "Temporal SDK metric " + k.name + "."
	var v prometheus.Collector
	switch k.kind {
	case kindCounter:
		v = prometheus.NewCounterVec(prometheus.CounterOpts{Name: k.name, Help: help}, labels)
	case kindGauge:
		v = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: k.name, Help: help}, labels)
	default:
		v = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: k.name, Help: help, Buckets: sdkBuckets()}, labels)
	}
	c.vecs[k] = v
	return v
}

// sdkHandler is a client.MetricsHandler bound to a tag set.
type sdkHandler struct {
	c *sdkCollector
	// labels are sanitized label names, sorted; values match by index.
	labels []string
	values []string
}

// WithTags returns a handler with tags laid over the current ones.
func (h *sdkHandler) WithTags(tags map[string]string) client.MetricsHandler {
	m := make(map[string]string, len(h.labels)+len(tags))
	for i, l := range h.labels {
		m[l] = h.values[i]
	}
	for k, v := range tags {
		m[sanitize(k, false)] = v
	}
	labels := slices.Sorted(maps.Keys(m))
	values := make([]string, len(labels))
	for i, l := range labels {
		values[i] = m[l]
	}
	return &sdkHandler{c: h.c, labels: labels, values: values}
}

func (h *sdkHandler) key(k kind, name string) vecKey {
	name = sanitize(name, true)
	switch k {
	case kindCounter:
		if !strings.HasSuffix(name, "_total") {
			name += "_total"
		}
	case kindTimer:
		if !strings.HasSuffix(name, "_seconds") {
			name += "_seconds"
		}
	}
	return vecKey{kind: k, name: name, keys: strings.Join(h.labels, ",")}
}

// Counter returns a counter; negative increments are ignored.
func (h *sdkHandler) Counter(name string) client.MetricsCounter {
	if fn, ok := h.c.counters[name]; ok {
		tags := make(map[string]string, len(h.labels))
		for i, l := range h.labels {
			tags[l] = h.values[i]
		}
		return counterFunc(func(d int64) {
			if d > 0 {
				fn(tags, d)
			}
		})
	}
	c := h.c.vec(h.key(kindCounter, name), h.labels).(*prometheus.CounterVec).WithLabelValues(h.values...)
	return counterFunc(func(d int64) {
		if d > 0 {
			c.Add(float64(d))
		}
	})
}

// Gauge returns a gauge.
func (h *sdkHandler) Gauge(name string) client.MetricsGauge {
	return gaugeFunc(h.c.vec(h.key(kindGauge, name), h.labels).(*prometheus.GaugeVec).WithLabelValues(h.values...).Set)
}

// Timer returns a timer recorded as a histogram in seconds.
func (h *sdkHandler) Timer(name string) client.MetricsTimer {
	if fn, ok := h.c.routes[name]; ok {
		return timerFunc(fn)
	}
	o := h.c.vec(h.key(kindTimer, name), h.labels).(*prometheus.HistogramVec).WithLabelValues(h.values...)
	return timerFunc(func(d time.Duration) { o.Observe(d.Seconds()) })
}

// sdkBuckets are the histogram buckets (seconds) of SDK timers: 1 ms to
// about 70 min.
func sdkBuckets() []float64 { return prometheus.ExponentialBuckets(0.001, 4, 12) }

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }

// sanitize maps s onto a valid Prometheus metric name
// ([a-zA-Z_:][a-zA-Z0-9_:]*) or, without colons, label name.
func sanitize(s string, metric bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r == ':' && metric:
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}
