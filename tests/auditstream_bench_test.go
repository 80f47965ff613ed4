package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/bench"
)

// BenchmarkAuditStream runs `starter bench throughput` (20 turns of 10
// Bash calls at once) against the built worker on its embedded server,
// with the live audit stream on (an HTTP sink) and off, alternated, each
// on a fresh worker. It reports the stream's lag, from a record's time
// in the turn's history to the sink's receipt (median and p99 over every
// record of the runs with the stream on), and the stream's overhead on a
// step as the ratio of the median call time (tool_call to tool_result),
// the median turn time and the calls per second, on over off, from the
// same run.
//
//	go test -run x -bench BenchmarkAuditStream -benchtime 3x ./tests/
func BenchmarkAuditStream(b *testing.B) {
	wbin, sbin := buildWorker(b), buildStarter(b)
	sink := &siem{}
	addr := serve(b, sink)

	run := func(stream bool) bench.ThroughputReport {
		more := ""
		if stream {
			more = fmt.Sprintf("audit:\n  stream: {sink: \"http://%s/ingest\"}\n", addr)
		}
		dir, cfg, _ := sinkWorkerConfig(b, "bench", "off", more)
		cmd, _ := startEmbedded(b, wbin, dir, "--config", cfg)
		defer killProcess(b, cmd)
		out, err := runStarter(b, sbin, dir, "--config", cfg, "bench", "throughput", "--turns", "20", "--turn-calls", "10", "--json")
		if err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		var rep bench.Report
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil || rep.Throughput == nil {
			b.Fatalf("bench throughput printed %v:\n%s", err, out)
		}
		if stream {
			// Every record is in once no line has come for 6 s (the
			// sweep that finds closed turns runs every 2 s).
			last, n := time.Now(), -1
			for time.Since(last) < 6*time.Second {
				time.Sleep(200 * time.Millisecond)
				sink.mu.Lock()
				if len(sink.lines) != n {
					n, last = len(sink.lines), time.Now()
				}
				sink.mu.Unlock()
			}
		}
		return *rep.Throughput
	}

	var on, off []bench.ThroughputReport
	i := 0
	for b.Loop() {
		// Alternate which goes first, so that neither always runs on
		// a machine warmed by the other.
		if i%2 == 0 {
			on, off = append(on, run(true)), append(off, run(false))
		} else {
			off, on = append(off, run(false)), append(on, run(true))
		}
		i++
	}
	b.StopTimer()

	sink.mu.Lock()
	var lags []float64
	for j, l := range sink.lines {
		var r struct {
			Time time.Time `json:"time"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			b.Fatalf("a line the sink got is not a record: %q", l)
		}
		lags = append(lags, float64(sink.at[j].Sub(r.Time).Microseconds())/1000)
	}
	sink.mu.Unlock()
	if len(lags) == 0 {
		b.Fatal("no record reached the sink")
	}
	slices.Sort(lags)
	q := func(p float64) float64 { return lags[min(len(lags)-1, int(p*float64(len(lags))))] }
	med := func(rs []bench.ThroughputReport, f func(bench.ThroughputReport) float64) float64 {
		var v []float64
		for _, r := range rs {
			v = append(v, f(r))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	call := func(r bench.ThroughputReport) float64 { return r.Call.MedianMS }
	turn := func(r bench.ThroughputReport) float64 { return r.Turn.MedianMS }
	rate := func(r bench.ThroughputReport) float64 { return r.CallsPerSec }
	for j := range on {
		b.Logf("pair %d: on  %.1f calls/s, call median %.2f ms, turn median %.1f ms", j+1, on[j].CallsPerSec, on[j].Call.MedianMS, on[j].Turn.MedianMS)
		b.Logf("pair %d: off %.1f calls/s, call median %.2f ms, turn median %.1f ms", j+1, off[j].CallsPerSec, off[j].Call.MedianMS, off[j].Turn.MedianMS)
	}
	b.Logf("%d records streamed; lag median %.0f ms, p99 %.0f ms, max %.0f ms", len(lags), q(0.5), q(0.99), lags[len(lags)-1])
	b.ReportMetric(q(0.5), "ms/lag-p50")
	b.ReportMetric(q(0.99), "ms/lag-p99")
	b.ReportMetric(med(on, call)/med(off, call), "call-median-on/off")
	b.ReportMetric(med(on, turn)/med(off, turn), "turn-median-on/off")
	b.ReportMetric(med(on, rate)/med(off, rate), "calls-per-s-on/off")
}
