package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wardenhq/warden/calls"
)

func TestEgress(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := NewEgress(reg)
	names := []string{"warden_egress_connections_total", "warden_egress_bytes_total"}
	if n, err := testutil.GatherAndCount(reg, names...); err != nil || n != 4 {
		t.Errorf("series before the first connection: %d, %v; want 4", n, err)
	}
	e.Connection(calls.Connection{Host: "a.example", Port: 443, Allowed: true, Sent: 100, Received: 5000})
	e.Connection(calls.Connection{Host: "b.example", Port: 443, Allowed: true, Sent: 1, Received: 2})
	e.Connection(calls.Connection{Host: "evil.example", Port: 443, Sent: 7})
	var nilE *Egress
	nilE.Connection(calls.Connection{Allowed: true})
	want := `
# HELP warden_egress_bytes_total Bytes carried by allowed egress connections, by direction (sent to the host, received from it).
# TYPE warden_egress_bytes_total counter
warden_egress_bytes_total{direction="received"} 5002
warden_egress_bytes_total{direction="sent"} 101
# HELP warden_egress_connections_total Connections tool calls asked the egress proxy for, by decision (allowed, refused).
# TYPE warden_egress_connections_total counter
warden_egress_connections_total{decision="allowed"} 2
warden_egress_connections_total{decision="refused"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}
