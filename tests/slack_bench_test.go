package tests

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/activities"
	"github.com/wardenhq/warden/chat"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/workflows"
)

// BenchmarkSlackApproval measures, through a real server and worker with
// the local Slack stand-in, how long a call that starts waiting takes to
// have its Slack message posted (park → post, from the entry's
// RequestedAt to the stand-in's receipt), and how long a signed Slack
// allow takes to have the tool run (click → the file the call creates).
// Medians are reported as ms/park-to-post and ms/allow-to-tool.
//
//	go test -run x -bench BenchmarkSlackApproval -benchtime 15x ./tests/
func BenchmarkSlackApproval(b *testing.B) {
	const secret = "slack-signing-secret-bench"
	si := &slackStandIn{}
	srv := httptest.NewServer(si)
	defer srv.Close()
	workdir := b.TempDir()
	cl := startWorker(b, warden.Options{Workdir: workdir, Chat: &activities.Chat{Service: chat.New("xoxb-tests", srv.URL, nil), Channel: "C0BENCH"}})
	ib, err := inbox.New(inbox.Config{Client: cl, Registerer: prometheus.NewRegistry(), SlackSecret: secret,
		Users: map[string]config.InboxUser{"bob": {Token: "tb", Slack: "U0BOB"}}})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(ib)
	defer hs.Close()
	ctx := ctxT(b, 10*time.Minute)
	var toPost, toTool []time.Duration
	i := 0
	for b.Loop() {
		i++
		file := fmt.Sprintf("bench-%d", i)
		s := script(b, "steps:\n  - tool_calls: [{id: b1, name: Bash, input: {command: \"touch "+file+"\"}}]\n  - text: ok\n")
		id := fmt.Sprintf("slack-bench-%d-%d", time.Now().UnixNano(), i)
		if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
			b.Fatal(err)
		}
		p := waitPending(b, cl, id, 1)[0]
		n := i
		waitFor(b, ctx, func() bool { posts, _, _ := si.snapshot(); return len(posts) >= n })
		posts, _, _ := si.snapshot()
		toPost = append(toPost, posts[n-1].at.Sub(p.RequestedAt))
		clicked := time.Now()
		slackClickReason(b, hs.URL, secret, clicked, "U0BOB", chat.ActionAllow, chat.Value(id, p), "", "")
		for {
			if _, err := os.Stat(filepath.Join(workdir, file)); err == nil {
				break
			}
			if ctx.Err() != nil {
				b.Fatal("the allowed call never ran")
			}
			time.Sleep(time.Millisecond)
		}
		toTool = append(toTool, time.Since(clicked))
		if _, err := cl.Result(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(median(toPost), "ms/park-to-post")
	b.ReportMetric(median(toTool), "ms/allow-to-tool")
}

// median is the median of ds in milliseconds.
func median(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}
