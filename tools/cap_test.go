package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCapResult(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", 100_000) + "MIDDLE" + strings.Repeat("z", 100_000)
	cases := []struct {
		name   string
		r      Result
		budget int
		check  func(t *testing.T, r Result)
	}{
		{"small unchanged", Result{Content: "hi"}, 0, func(t *testing.T, r Result) {
			if r.Content != "hi" {
				t.Errorf("content %q", r.Content)
			}
		}},
		{"head and tail", Result{Content: big}, 0, func(t *testing.T, r Result) {
			if !strings.HasPrefix(r.Content, "aaa") || !strings.HasSuffix(r.Content, "zzz") || strings.Contains(r.Content, "MIDDLE") {
				t.Errorf("did not keep head and tail")
			}
			if !strings.Contains(r.Content, "bytes truncated: the output was 200006 bytes") {
				t.Errorf("no note: %.200s", r.Content[DefaultResultBudget/2:])
			}
		}},
		{"utf8 safe", Result{Content: strings.Repeat("é", 50_000)}, 1001, func(t *testing.T, r Result) {
			if !json.Valid([]byte(`"`+strings.ReplaceAll(r.Content, "\n", `\n`)+`"`)) || strings.ContainsRune(r.Content, '\uFFFD') {
				t.Errorf("cut inside a rune")
			}
		}},
		{"data dropped", Result{Content: "img", Data: []DataBlock{{MediaType: "image/png", Data: make([]byte, 10_000)}, {MediaType: "image/png", Data: make([]byte, 100_000)}}}, 0, func(t *testing.T, r Result) {
			if len(r.Data) != 1 || !strings.Contains(r.Content, "1 data block(s) of 100000 bytes omitted") {
				t.Errorf("data %d, content %q", len(r.Data), r.Content)
			}
		}},
		{"metadata shrunk", Result{Content: "ok", Metadata: map[string]any{"diff": strings.Repeat("+line\n", 50_000), "file_path": "/x"}}, 0, func(t *testing.T, r Result) {
			if r.Metadata["file_path"] != "/x" || r.Metadata["metadata_truncated"] != true {
				t.Errorf("metadata %v", r.Metadata["file_path"])
			}
		}},
		{"max budget", Result{Content: strings.Repeat("x", 5<<20)}, 10 << 20, func(t *testing.T, r Result) {
			if len(r.Content) > MaxResultBudget+1024 {
				t.Errorf("len %d above MaxResultBudget", len(r.Content))
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := CapResult(c.r, c.budget)
			budget := c.budget
			if budget <= 0 {
				budget = DefaultResultBudget
			}
			budget = min(budget, MaxResultBudget)
			if b, _ := json.Marshal(r); len(b) > budget+1024 {
				t.Errorf("serialised size %d > budget %d + slack", len(b), budget)
			}
			c.check(t, r)
		})
	}
}
