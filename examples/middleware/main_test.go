package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/tools"
)

// TestMiddlewaresOnRealBash runs the real Bash tool on the local backend
// through the example's chain and checks what reaches the result.
func TestMiddlewaresOnRealBash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := middleware.Chain(timing(slog.New(slog.NewTextHandler(io.Discard, nil))), redaction())(middleware.Terminal)
	env := &tools.Env{Backend: local.New(dir), Workdir: dir}
	tests := []struct {
		name    string
		tool    tools.Tool
		command string
		want    string
		hidden  []string
	}{
		{"aws key", tools.Bash{}, "echo key AKIAIOSFODNN7EXAMPLE end", "key [REDACTED] end", []string{"AKIA"}},
		{"github token", tools.Bash{}, "echo ghp_" + strings.Repeat("a1B2", 9), "[REDACTED]", []string{"ghp_"}},
		{"key=value", tools.Bash{}, "printf 'user=bob PASSWORD=hunter2\\napi_key: s3cr3t\\n'", "user=bob PASSWORD=[REDACTED]\napi_key: [REDACTED]", []string{"hunter2", "s3cr3t"}},
		{"clean output", tools.Bash{}, "echo nothing to hide", "nothing to hide", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			input, err := json.Marshal(tools.BashInput{Command: tc.command})
			if err != nil {
				t.Fatal(err)
			}
			res, err := tools.Collect(h(context.Background(), middleware.Call{ID: "c1", Tool: tc.tool, Input: input, Env: env, Attempt: 1}))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Content, tc.want) {
				t.Errorf("content = %q, want it to contain %q", res.Content, tc.want)
			}
			for _, s := range tc.hidden {
				if strings.Contains(res.Content, s) {
					t.Errorf("content = %q still contains %q", res.Content, s)
				}
			}
			if _, ok := res.Metadata["duration_ms"]; !ok {
				t.Errorf("metadata = %v, want duration_ms from the timing middleware", res.Metadata)
			}
		})
	}
}

// TestRedactionSkipsOtherTools checks that only shell output is rewritten.
func TestRedactionSkipsOtherTools(t *testing.T) {
	t.Parallel()
	echo, err := tools.Func("Echo", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h := redaction()(middleware.Terminal)
	res, err := tools.Collect(h(context.Background(), middleware.Call{ID: "c1", Tool: echo, Input: json.RawMessage(`{"text":"token=abc"}`), Env: &tools.Env{}}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "token=abc" {
		t.Errorf("content = %q, want it untouched", res.Content)
	}
}
