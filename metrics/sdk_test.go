package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSDKHandler(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := NewSDKHandler(reg)
	base := h.WithTags(map[string]string{"namespace": "default", "client_name": "temporal_go"})
	wt := base.WithTags(map[string]string{"workflow_type": "AgentTurn", "namespace": "other"})

	base.Counter("temporal_request").Inc(2)
	base.Counter("temporal_request").Inc(3)
	base.Counter("temporal_request").Inc(-7) // ignored: counters only go up
	wt.Counter("temporal_workflow_completed").Inc(1)
	// The same name with another tag set is a separate series.
	wt.WithTags(map[string]string{"task_queue": "warden"}).Counter("temporal_request").Inc(4)
	base.Gauge("temporal.worker-task slots").Update(5)
	base.Gauge("temporal.worker-task slots").Update(3)
	wt.Timer("temporal_activity_execution_latency").Record(1500 * time.Millisecond)
	wt.Timer("temporal_activity_execution_latency").Record(500 * time.Millisecond)

	want := `
# HELP temporal_request_total Temporal SDK metric temporal_request_total.
# TYPE temporal_request_total counter
temporal_request_total{client_name="temporal_go",namespace="default"} 5
temporal_request_total{client_name="temporal_go",namespace="other",task_queue="warden",workflow_type="AgentTurn"} 4
# HELP temporal_workflow_completed_total Temporal SDK metric temporal_workflow_completed_total.
# TYPE temporal_workflow_completed_total counter
temporal_workflow_completed_total{client_name="temporal_go",namespace="other",workflow_type="AgentTurn"} 1
# HELP temporal_worker_task_slots Temporal SDK metric temporal_worker_task_slots.
# TYPE temporal_worker_task_slots gauge
temporal_worker_task_slots{client_name="temporal_go",namespace="default"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"temporal_request_total", "temporal_workflow_completed_total", "temporal_worker_task_slots"); err != nil {
		t.Error(err)
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, mf := range mfs {
		if mf.GetName() != "temporal_activity_execution_latency_seconds" {
			continue
		}
		found = true
		if got := mf.GetType().String(); got != "HISTOGRAM" {
			t.Errorf("timer type = %s, want HISTOGRAM", got)
		}
		m := mf.GetMetric()[0]
		if n, s := m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum(); n != 2 || s != 2 {
			t.Errorf("timer count, sum = %d, %g; want 2, 2 (seconds)", n, s)
		}
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["workflow_type"] != "AgentTurn" || labels["namespace"] != "other" || len(labels) != 3 {
			t.Errorf("timer labels = %v", labels)
		}
	}
	if !found {
		t.Error("temporal_activity_execution_latency_seconds not gathered")
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		metric bool
		want   string
	}{
		{"temporal_request", true, "temporal_request"},
		{"temporal.request.latency", true, "temporal_request_latency"},
		{"a:b-c", true, "a:b_c"},
		{"a:b-c", false, "a_b_c"},
		{"9lives", false, "_9lives"},
		{"", false, "_"},
		{"héllo", true, "h_llo"},
	} {
		if got := sanitize(tc.in, tc.metric); got != tc.want {
			t.Errorf("sanitize(%q, %v) = %q, want %q", tc.in, tc.metric, got, tc.want)
		}
	}
}
