package metrics

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	wmodel "github.com/wardenhq/warden/model"
)

func TestApprovalsExposedBeforeFirstEvent(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	NewApprovals(reg)
	NewModels(reg)
	want := `
# HELP warden_approval_escalations_total Approvals whose deadline passed, by escalation action (deny, allow, notify).
# TYPE warden_approval_escalations_total counter
warden_approval_escalations_total{action="allow"} 0
warden_approval_escalations_total{action="deny"} 0
warden_approval_escalations_total{action="notify"} 0
# HELP warden_approvals_pending Pending approvals and external results across running turns, as last counted.
# TYPE warden_approvals_pending gauge
warden_approvals_pending 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "warden_approval_escalations_total", "warden_approvals_pending"); err != nil {
		t.Error(err)
	}
	n, err := testutil.GatherAndCount(reg, "warden_approval_wait_seconds")
	if err != nil || n != 1 {
		t.Errorf("warden_approval_wait_seconds series = %d, %v; want 1", n, err)
	}
}

func TestApprovalsRecord(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a := NewApprovals(reg)
	a.ObserveWait(90 * time.Second)
	a.ObserveWait(30 * time.Second)
	a.Escalated(ActionNotify)
	a.Escalated("bogus")
	a.SetPending(4)

	for _, tc := range []struct {
		c    prometheus.Collector
		want float64
	}{
		{a.escalations.WithLabelValues(ActionNotify), 1},
		{a.escalations.WithLabelValues(ActionDeny), 1},
		{a.escalations.WithLabelValues(ActionAllow), 0},
		{a.pending, 4},
	} {
		if got := testutil.ToFloat64(tc.c); got != tc.want {
			t.Errorf("got %g, want %g", got, tc.want)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "warden_approval_wait_seconds" {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 2 || h.GetSampleSum() != 120 {
				t.Errorf("wait count, sum = %d, %g; want 2, 120", h.GetSampleCount(), h.GetSampleSum())
			}
		}
	}
	var nilA *Approvals
	nilA.SetPending(1) // a nil *Approvals records nothing and does not panic
	nilA.Escalated(ActionDeny)
	nilA.ObserveWait(time.Second)
}

func TestApprovalsPoll(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a := NewApprovals(reg)
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	count := func(context.Context) (int, error) {
		switch calls.Add(1) {
		case 1:
			return 7, nil
		case 2:
			return 0, errors.New("visibility unavailable")
		default:
			return 2, nil
		}
	}
	done := make(chan struct{})
	go func() { a.Poll(ctx, count, 5*time.Millisecond); close(done) }()

	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// Wait for the third count's value to land.
	for testutil.ToFloat64(a.pending) != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Poll did not return after cancel")
	}
	if got := testutil.ToFloat64(a.pending); got != 2 {
		t.Errorf("pending = %g, want 2", got)
	}
	if got := testutil.ToFloat64(a.pollErrors); got != 1 {
		t.Errorf("poll errors = %g, want 1", got)
	}
}

func TestModelsObserve(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := NewModels(reg)
	m.Init("anthropic", "claude-sonnet")
	cost := 0.0042
	m.Observe("anthropic", "claude-sonnet", 2*time.Second, wmodel.Usage{InputTokens: 60, CacheReadTokens: 30, CacheWriteTokens: 10, OutputTokens: 20, Cost: &cost}, nil)
	m.Observe("anthropic", "claude-sonnet", time.Second, wmodel.Usage{InputTokens: 50}, errors.New("overloaded"))
	m.Observe("openai", "gpt", 500*time.Millisecond, wmodel.Usage{InputTokens: 10, OutputTokens: 5}, nil)

	want := `
# HELP warden_model_calls_total Model calls by provider, model and outcome (success, error).
# TYPE warden_model_calls_total counter
warden_model_calls_total{model="claude-sonnet",outcome="error",provider="anthropic"} 1
warden_model_calls_total{model="claude-sonnet",outcome="success",provider="anthropic"} 1
warden_model_calls_total{model="gpt",outcome="success",provider="openai"} 1
# HELP warden_model_tokens_total Model tokens by provider, model and kind (input, cache_read, cache_write, output).
# TYPE warden_model_tokens_total counter
warden_model_tokens_total{kind="cache_read",model="claude-sonnet",provider="anthropic"} 30
warden_model_tokens_total{kind="cache_write",model="claude-sonnet",provider="anthropic"} 10
warden_model_tokens_total{kind="input",model="claude-sonnet",provider="anthropic"} 110
warden_model_tokens_total{kind="output",model="claude-sonnet",provider="anthropic"} 20
warden_model_tokens_total{kind="input",model="gpt",provider="openai"} 10
warden_model_tokens_total{kind="output",model="gpt",provider="openai"} 5
# HELP warden_model_cost_total Cost of model calls by provider and model, in the currency of the worker's price table (priced models only).
# TYPE warden_model_cost_total counter
warden_model_cost_total{model="claude-sonnet",provider="anthropic"} 0.0042
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "warden_model_calls_total", "warden_model_tokens_total", "warden_model_cost_total"); err != nil {
		t.Error(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "warden_model_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			sums[m.GetLabel()[0].GetValue()+"/"+m.GetLabel()[1].GetValue()] = m.GetHistogram().GetSampleSum()
		}
	}
	if sums["claude-sonnet/anthropic"] != 3 || sums["gpt/openai"] != 0.5 {
		t.Errorf("duration sums = %v", sums)
	}
}
