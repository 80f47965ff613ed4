package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/wardenhq/warden/calls"
)

// Egress are the metrics of the sandbox's egress proxy: the connections
// tool calls asked for and the bytes they carried. A nil *Egress
// records nothing. It is the local backend's egress observer.
type Egress struct {
	connections *prometheus.CounterVec
	bytes       *prometheus.CounterVec
}

// NewEgress registers the egress metrics on reg, every series at zero.
func NewEgress(reg prometheus.Registerer) *Egress {
	f := promauto.With(reg)
	e := &Egress{
		connections: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_egress_connections_total",
			Help: "Connections tool calls asked the egress proxy for, by decision (allowed, refused).",
		}, []string{"decision"}),
		bytes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_egress_bytes_total",
			Help: "Bytes carried by allowed egress connections, by direction (sent to the host, received from it).",
		}, []string{"direction"}),
	}
	for _, d := range []string{"allowed", "refused"} {
		e.connections.WithLabelValues(d)
	}
	for _, d := range []string{"sent", "received"} {
		e.bytes.WithLabelValues(d)
	}
	return e
}

// Connection counts one ended connection.
func (e *Egress) Connection(c calls.Connection) {
	if e == nil {
		return
	}
	if !c.Allowed {
		e.connections.WithLabelValues("refused").Inc()
		return
	}
	e.connections.WithLabelValues("allowed").Inc()
	e.bytes.WithLabelValues("sent").Add(float64(c.Sent))
	e.bytes.WithLabelValues("received").Add(float64(c.Received))
}
