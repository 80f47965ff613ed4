package metrics

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/middleware/middlewaretest"
	"github.com/wardenhq/warden/tools"
)

// histograms gathers the named histogram family keyed by its label
// values joined with "/".
func histograms(t *testing.T, reg *prometheus.Registry, name string) map[string]*dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Histogram{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += "/"
				}
				key += l.GetValue()
			}
			out[key] = m.GetHistogram()
		}
	}
	return out
}

func TestMetricsMiddleware(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	mw, err := New(Config{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(middleware.Terminal)
	calls := []struct {
		tool    middlewaretest.Tool
		wantErr bool
	}{
		{tool: middlewaretest.Tool{Name: "Read", Chunks: []tools.Chunk{{Text: "hello"}, {Text: " world"}}}},
		{tool: middlewaretest.Tool{Name: "Read", Chunks: []tools.Chunk{{Text: "abc"}}}},
		{tool: middlewaretest.Tool{Name: "Read", Chunks: []tools.Chunk{{Text: "no such file", IsError: true}}}},
		{tool: middlewaretest.Tool{Name: "Bash", Chunks: []tools.Chunk{{Text: "part"}}, Err: errors.New("backend down")}, wantErr: true},
		{tool: middlewaretest.Tool{Name: "Bash", Chunks: []tools.Chunk{{Data: []tools.DataBlock{{Data: make([]byte, 1000)}}}}}},
	}
	for _, c := range calls {
		_, err := tools.Collect(h(context.Background(), middleware.Call{Tool: c.tool}))
		if (err != nil) != c.wantErr {
			t.Fatalf("%s: err = %v", c.tool.Name, err)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "warden_tool_duration_seconds"); err != nil || n != 0 {
		t.Errorf("warden_tool_duration_seconds series = %d, %v; want none (the activity times calls)", n, err)
	}
	size := histograms(t, reg, "warden_tool_output_bytes")
	for key, want := range map[string][2]float64{"Read": {3, 11 + 3 + 12}, "Bash": {2, 4 + 1000}} {
		if got := size[key]; float64(got.GetSampleCount()) != want[0] || got.GetSampleSum() != want[1] {
			t.Errorf("output_bytes{tool=%s} count, sum = %d, %g; want %g, %g", key, got.GetSampleCount(), got.GetSampleSum(), want[0], want[1])
		}
	}
}

func TestMetricsNew(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err != nil {
		t.Errorf("zero config: %v", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := New(Config{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Registerer: reg}); err == nil {
		t.Error("second registration on one registry accepted")
	}
}
