package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestWebhookFailures: each failed delivery counts; a nil *Notify
// records nothing.
func TestWebhookFailures(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	n := NewNotify(reg)
	n.Failed()
	n.Failed()
	if got := testutil.ToFloat64(n.failures); got != 2 {
		t.Errorf("%s = %v, want 2", MetricWebhookFailures, got)
	}
	var none *Notify
	none.Failed()
}

// TestInboxRefusals: both channels' series exist at zero from the start.
func TestInboxRefusals(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := NewInbox(reg)
	if n, err := testutil.GatherAndCount(reg, MetricInboxRefusals); err != nil || n != 2 {
		t.Errorf("%d series (%v), want 2", n, err)
	}
	m.Refusals.WithLabelValues("slack").Inc()
	if got := testutil.ToFloat64(m.Refusals.WithLabelValues("slack")); got != 1 {
		t.Errorf("slack refusals = %v", got)
	}
}
