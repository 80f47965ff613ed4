package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/workflows"
)

// FormatOutput renders what a running call printed since it was last
// shown (fresh) as lines for a terminal, each marked with the call's id;
// with nothing fresh, one line says how long the call has been running
// at now, or that it waits for a worker, and which attempt it is. The
// output is shown inert (client.Inert).
func FormatOutput(rc client.RunningCall, fresh string, now time.Time) string {
	fresh = client.Inert(fresh)
	if fresh == "" {
		return fmt.Sprintf("  %s │ … %s\n", rc.CallID, runningFor(rc, now))
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(fresh, "\n"), "\n") {
		fmt.Fprintf(&b, "  %s │ %s\n", rc.CallID, line)
	}
	return b.String()
}

// runningFor says how long a quiet call has been running, and which
// attempt it is when it is a retry.
func runningFor(rc client.RunningCall, now time.Time) string {
	s := "waiting for a worker"
	if !rc.Started.IsZero() {
		s = fmt.Sprintf("running for %s", now.Sub(rc.Started).Round(time.Second))
	}
	if rc.Attempt > 1 {
		s += fmt.Sprintf(" (attempt %d)", rc.Attempt)
	}
	return s
}

// FullAnswer is the answer of the finished turn workflowID: res.Answer,
// or, when the result holds only its preview (AnswerRef), the whole
// answer read from store. The preview stays when store is nil or cannot
// be read.
func FullAnswer(ctx context.Context, store content.Store, workflowID string, res workflows.TurnResult) string {
	if res.AnswerRef == "" || store == nil {
		return res.Answer
	}
	data, err := store.Get(ctx, workflowID, res.AnswerRef)
	if err != nil {
		return res.Answer
	}
	return string(data)
}
