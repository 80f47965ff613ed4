package tests

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// TestFollowStreamsRunningOutput: a long Bash call reports its output
// through heartbeats, and Follow shows it before the call finishes.
func TestFollowStreamsRunningOutput(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: slow, name: Bash, input: {command: \"for i in 1 2 3 4; do echo line$i; sleep 1; done\"}}]\n  - text: ok\n")
	id := "stream-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	res, err := cl.Follow(ctx, id, func(e workflows.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Type == workflows.EventResult {
			order = append(order, "result")
		}
	}, func(rc client.RunningCall, fresh string) {
		mu.Lock()
		defer mu.Unlock()
		if rc.CallID != "slow" || rc.Tool != "Bash" {
			t.Errorf("running call = %+v", rc)
		}
		order = append(order, "output:"+strings.TrimSpace(fresh))
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "ok" {
		t.Fatalf("answer = %q", res.Answer)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) < 2 || !strings.HasPrefix(order[0], "output:line1") || order[len(order)-1] != "result" {
		t.Errorf("output was not seen live before the result: %q", order)
	}
}

// TestFollowReportsQuietCalls: a call that prints nothing is still
// reported while it runs (empty output, with its start time), so
// `starter watch` can say for how long.
func TestFollowReportsQuietCalls(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: quiet, name: Bash, input: {command: \"sleep 7\"}}]\n  - text: ok\n")
	id := "quiet-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ticks []client.RunningCall
	if _, err := cl.Follow(ctx, id, nil, func(rc client.RunningCall, fresh string) {
		mu.Lock()
		defer mu.Unlock()
		if fresh == "" {
			ticks = append(ticks, rc)
		}
	}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ticks) == 0 || ticks[0].CallID != "quiet" || ticks[0].Started.IsZero() {
		t.Fatalf("quiet reports = %+v, want the running call with its start time", ticks)
	}
}
