package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/workflows"
)

func TestFormatOutput(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rc := client.RunningCall{Attempt: 1}
	rc.CallID = "c1"
	if got, want := FormatOutput(rc, "one\ntwo\n", now), "  c1 │ one\n  c1 │ two\n"; got != want {
		t.Errorf("fresh output = %q, want %q", got, want)
	}
	for _, c := range []struct {
		started time.Time
		attempt int32
		want    string
	}{
		{time.Time{}, 1, "  c1 │ … waiting for a worker\n"},
		{now.Add(-42 * time.Second), 1, "  c1 │ … running for 42s\n"},
		{now.Add(-3 * time.Second), 2, "  c1 │ … running for 3s (attempt 2)\n"},
	} {
		rc.Started, rc.Attempt = c.started, c.attempt
		if got := FormatOutput(rc, "", now); got != c.want {
			t.Errorf("quiet call %+v = %q, want %q", rc, got, c.want)
		}
	}
}

// TestFullAnswer: an answer kept in the content store is read from it;
// without a ref, or when it cannot be read, the result's answer stays.
func TestFullAnswer(t *testing.T) {
	ctx := context.Background()
	store, err := content.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.Repeat("ab", 32)
	if err := store.Put(ctx, "t1", ref, []byte("the whole answer")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		res  workflows.TurnResult
		want string
	}{
		{workflows.TurnResult{Answer: "the whole…", AnswerRef: ref}, "the whole answer"},
		{workflows.TurnResult{Answer: "short"}, "short"},
		{workflows.TurnResult{Answer: "preview…", AnswerRef: strings.Repeat("cd", 32)}, "preview…"},
	} {
		if got := FullAnswer(ctx, store, "t1", c.res); got != c.want {
			t.Errorf("FullAnswer(%+v) = %q, want %q", c.res, got, c.want)
		}
	}
}
