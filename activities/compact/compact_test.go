package compact_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wardenhq/warden/activities/compact"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/model"
)

// session is a task, then n steps of an assistant call and its 8 KB result.
func session(n int) []model.Message {
	msgs := []model.Message{{Role: model.RoleUser, Content: "the task"}}
	for i := range n {
		id := string(rune('a' + i%26))
		msgs = append(msgs,
			model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "Bash", Input: []byte(`{}`)}}},
			model.Message{Role: model.RoleTool, ToolCallID: id, Content: strings.Repeat("x", 8000)})
	}
	return msgs
}

// pairsIntact checks every tool result follows the call that asked for it.
func pairsIntact(t *testing.T, msgs []model.Message) {
	t.Helper()
	for i, m := range msgs {
		if m.Role != model.RoleTool {
			continue
		}
		if i == 0 || (msgs[i-1].Role != model.RoleAssistant && msgs[i-1].Role != model.RoleTool) {
			t.Fatalf("tool result %d lost its call: previous is %s", i, msgs[i-1].Role)
		}
	}
}

func TestUnderTriggerNothingHappens(t *testing.T) {
	t.Parallel()
	out, info, err := compact.Config{Compaction: config.Compaction{ContextWindow: 100_000}}.Compact(context.Background(), model.Scripted{}, model.Request{Messages: session(3)})
	if err != nil || info != nil || out != nil {
		t.Fatalf("%v %v %v", out, info, err)
	}
}

func TestStrategies(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{compact.Trim, compact.Drop, compact.Summarize} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			c := compact.Config{Compaction: config.Compaction{ContextWindow: 20_000, Strategy: strategy, KeepRecent: 4}}
			req := model.Request{Messages: session(20)}
			out, info, err := c.Compact(context.Background(), model.Scripted{}, req)
			if err != nil || info == nil {
				t.Fatalf("no compaction: %v", err)
			}
			if info.TokensAfter > 10_000 || info.TokensAfter >= info.TokensBefore || info.Strategy != strategy {
				t.Fatalf("compaction %+v: want at most the target of 10,000 tokens", info)
			}
			if out[0].Content != "the task" {
				t.Fatalf("the task was not kept: %q", out[0].Content)
			}
			n := len(req.Messages)
			if got := out[len(out)-4:]; got[3].Content != req.Messages[n-1].Content || got[0].ToolCalls[0].ID != req.Messages[n-4].ToolCalls[0].ID {
				t.Fatal("the most recent messages changed")
			}
			pairsIntact(t, out)
			all := ""
			for _, m := range out {
				all += m.Content
			}
			want := map[string]string{compact.Trim: "trimmed to save context", compact.Drop: "earlier messages were dropped", compact.Summarize: "Summary of"}[strategy]
			if !strings.Contains(all, want) {
				t.Fatalf("no %q in the compacted conversation", want)
			}
		})
	}
}
