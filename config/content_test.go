package config

import (
	"strings"
	"testing"
)

func TestContentConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ yaml, want string }{
		{"content: {store: s3}", "content.s3.bucket: required"},
		{"content: {store: nfs}", `content.store: "nfs" is not fs or s3`},
		{"content: {compaction: {gpt: {context_window: 1000}}}", "content.compaction.gpt: no model provider"},
		{"turn: {max_iterations: -1}", "turn.max_iterations"},
	} {
		_, err := Parse([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.yaml, err, c.want)
		}
	}
	cfg, err := Parse([]byte("server: {data_dir: " + t.TempDir() + "}\ncontent: {compaction: {scripted: {context_window: 8000, strategy: summarize}}}\nturn: {max_iterations: 5000}"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Turn.MaxIterations != 5000 || cfg.Content.Compaction["scripted"].Strategy != "summarize" {
		t.Fatalf("parsed %+v %+v", cfg.Turn, cfg.Content)
	}
}
