package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// startThrottled is startWorker with the SDK's heartbeat throttle set as
// the worker binary sets it (node/tuning.go), or left at the SDK's
// default (0: 80% of the 10 s heartbeat timeout).
func startThrottled(b *testing.B, throttle time.Duration) *client.Client {
	b.Helper()
	queue := fmt.Sprintf("tq-%s-%s", b.Name(), tag())
	w := worker.New(env.c, queue, worker.Options{MaxHeartbeatThrottleInterval: throttle})
	if _, err := warden.Register(w, warden.Options{Client: env.c, Workdir: b.TempDir(), Content: env.store}); err != nil {
		b.Fatal(err)
	}
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	cl := client.New(env.c, queue)
	cl.PollInterval = 20 * time.Millisecond
	cl.LivePolicy = client.NoLivePolicy
	return cl
}

// BenchmarkSessionInterrupt measures the time from an interrupt sent to a
// session whose tool call runs (sleep, marked) to the call's process gone
// from /proc, with the worker's heartbeat throttle (1 s, as cmd/worker)
// and the SDK's default (8 s: 80% of the heartbeat timeout) in the same
// run. Reported as the median ms.
//
//	go test -run x -bench BenchmarkSessionInterrupt -benchtime 5x ./tests/
func BenchmarkSessionInterrupt(b *testing.B) {
	for _, c := range []struct {
		name     string
		throttle time.Duration
	}{{"throttle-1s", time.Second}, {"sdk-default", 0}} {
		b.Run(c.name, func(b *testing.B) {
			cl := startThrottled(b, c.throttle)
			ctx := ctxT(b, 10*time.Minute)
			var gone, acked []time.Duration
			for b.Loop() {
				marker := "BENCH-INTR-" + tag()
				id := "bench-interrupt-" + tag()
				s := script(b, fmt.Sprintf("steps:\n  - tool_calls: [{name: Bash, input: {command: \"sleep 60 # %s\"}}]\n  - text: stopped\n", marker))
				if _, err := cl.StartSession(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
					Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
					b.Fatal(err)
				}
				waitFor(b, ctx, func() bool { return len(markedPIDs(marker)) > 0 })
				time.Sleep(1500 * time.Millisecond) // a heartbeat or more went out
				start := time.Now()
				if _, err := cl.Send(ctx, id, workflows.SessionMessage{Text: "stop", Mode: workflows.MessageInterrupt}); err != nil {
					b.Fatal(err)
				}
				acked = append(acked, time.Since(start))
				if left := waitGone(marker, 30*time.Second); len(left) > 0 {
					b.Fatalf("still running: %s", cmdlines(left))
				}
				gone = append(gone, time.Since(start))
				if _, err := cl.Control(ctx, id, workflows.SessionControl{Action: workflows.ControlCancel, Reason: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(median(gone), "ms-to-gone")
			b.ReportMetric(median(acked), "ms-to-ack")
		})
	}
}

// BenchmarkSessionSteer measures a steer's delivery: from the message
// sent while a 300 ms tool call runs to the model call that sees it (the
// "delivered to the model" event), against the same turn without a steer
// (from the same moment to its next model call) in the same run, and
// the Update's round trip (sent to acknowledged). Medians, in ms.
//
//	go test -run x -bench BenchmarkSessionSteer -benchtime 10x ./tests/
func BenchmarkSessionSteer(b *testing.B) {
	cl := startThrottled(b, time.Second)
	ctx := ctxT(b, 10*time.Minute)
	s := script(b, "steps:\n  - tool_calls: [{name: Bash, input: {command: \"sleep 0.3\"}}]\n  - text: done\n    echo: true\n")
	run := func(steer bool) (toModel, ack time.Duration) {
		id := "bench-steer-" + tag()
		if _, err := cl.StartSession(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
			Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
			b.Fatal(err)
		}
		defer func() {
			_, _ = cl.Control(ctx, id, workflows.SessionControl{Action: workflows.ControlCancel, Reason: "bench"})
		}()
		var started time.Time
		cursor := 0
		for started.IsZero() {
			page, err := cl.Events(ctx, id, cursor)
			if err == nil {
				for _, e := range page.Events {
					if e.Type == workflows.EventToolCall {
						started = time.Now()
					}
				}
				cursor = page.Next
			}
			time.Sleep(5 * time.Millisecond)
		}
		if steer {
			if _, err := cl.Send(ctx, id, workflows.SessionMessage{Text: "also this", Mode: workflows.MessageSteer}); err != nil {
				b.Fatal(err)
			}
			ack = time.Since(started)
		}
		var model time.Time
		if _, err := cl.FollowTurn(ctx, id, cursor, func(e workflows.Event) {
			if model.IsZero() && (e.Type == workflows.EventModel || strings.HasPrefix(e.Text, "delivered to the model")) {
				model = e.Time
			}
		}, nil); err != nil {
			b.Fatal(err)
		}
		return model.Sub(started), ack
	}
	var with, without, acks []time.Duration
	for b.Loop() {
		d, a := run(true)
		with, acks = append(with, d), append(acks, a)
		d, _ = run(false)
		without = append(without, d)
	}
	b.ReportMetric(median(with), "ms-steer-to-model")
	b.ReportMetric(median(without), "ms-baseline-to-model")
	b.ReportMetric(median(acks), "ms-to-ack")
}

// BenchmarkSessionHistory runs a session of 100 turns (a message, a tool
// call, an answer each) and reports the history of each run (one per
// turn: continue-as-new between turns): events and bytes of the first,
// the 50th and the 99th run (the 100th still runs), and the largest, so
// a long session's history is seen to stay bounded (a run's input
// carries at most the latest 100 events).
//
//	go test -run x -bench BenchmarkSessionHistory -benchtime 1x ./tests/
func BenchmarkSessionHistory(b *testing.B) {
	cl := startThrottled(b, time.Second)
	ctx := ctxT(b, 20*time.Minute)
	s := script(b, "steps:\n  - tool_calls: [{name: Bash, input: {command: \"echo hi\"}}]\n  - text: ok\n    echo: true\n")
	const turns = 100
	for b.Loop() {
		id := "bench-history-" + tag()
		if _, err := cl.StartSession(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
			Permission: permission.Context{Mode: permission.ModeBypass}, Prompt: "turn 1"}); err != nil {
			b.Fatal(err)
		}
		cursor, err := cl.FollowTurn(ctx, id, 0, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		for i := 2; i <= turns; i++ {
			if _, err := cl.Send(ctx, id, workflows.SessionMessage{Text: fmt.Sprintf("turn %d", i), Mode: workflows.MessageQueue}); err != nil {
				b.Fatal(err)
			}
			if cursor, err = cl.FollowTurn(ctx, id, cursor, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
		st, err := cl.State(ctx, id)
		if err != nil || st.Session == nil || st.Session.Turns != turns {
			b.Fatalf("%+v, %v", st.Session, err)
		}
		resp, err := env.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = '%s'", id)})
		if err != nil {
			b.Fatal(err)
		}
		type size struct{ events, bytes int }
		var sizes []size
		for _, ex := range resp.GetExecutions() {
			it := env.c.GetWorkflowHistory(ctx, id, ex.GetExecution().GetRunId(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			var sz size
			for it.HasNext() {
				e, err := it.Next()
				if err != nil {
					b.Fatal(err)
				}
				sz.events++
				sz.bytes += e.Size()
			}
			sizes = append(sizes, sz)
		}
		slices.Reverse(sizes) // the listing is latest first
		largest := slices.MaxFunc(sizes, func(x, y size) int { return x.bytes - y.bytes })
		b.ReportMetric(float64(len(sizes)), "runs")
		b.ReportMetric(float64(sizes[0].events), "events-run-1")
		b.ReportMetric(float64(sizes[len(sizes)-2].events), "events-run-99")
		b.ReportMetric(float64(sizes[0].bytes), "bytes-run-1")
		b.ReportMetric(float64(sizes[49].bytes), "bytes-run-50")
		b.ReportMetric(float64(sizes[len(sizes)-2].bytes), "bytes-run-99")
		b.ReportMetric(float64(largest.bytes), "bytes-largest-run")
		if _, err := cl.Control(ctx, id, workflows.SessionControl{Action: workflows.ControlCancel, Reason: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}
