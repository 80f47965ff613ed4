package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestToolsRecord(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := NewTools(reg)
	m.Call("Bash", OutcomeSuccess, 2*time.Second)
	m.Call("Bash", OutcomeFailure, time.Second)
	m.Decision("Bash", "allow")
	want := `
# HELP warden_tool_calls_total Tool call activity attempts by tool and outcome (success, error, failure).
# TYPE warden_tool_calls_total counter
warden_tool_calls_total{outcome="failure",tool="Bash"} 1
warden_tool_calls_total{outcome="success",tool="Bash"} 1
# HELP warden_permission_decisions_total Permission engine decisions by tool and behavior.
# TYPE warden_permission_decisions_total counter
warden_permission_decisions_total{behavior="allow",tool="Bash"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "warden_tool_calls_total", "warden_permission_decisions_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "warden_tool_call_duration_seconds"); err != nil || n != 2 {
		t.Errorf("duration series = %d, %v; want 2 (one per outcome)", n, err)
	}
	out, err := NewToolOutput(reg)
	if err != nil {
		t.Fatal(err)
	}
	out.Observe("Bash", 100)
	if _, err := NewToolOutput(reg); err == nil {
		t.Error("second NewToolOutput on one registry accepted")
	}
	var nilT *Tools // a nil *Tools or *ToolOutput records nothing
	nilT.Call("Bash", OutcomeSuccess, time.Second)
	nilT.Decision("Bash", "deny")
	var nilO *ToolOutput
	nilO.Observe("Bash", 1)
}
