package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/content"
)

func TestContentConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ yaml, want string }{
		{"content: {store: s3}", "content.s3.bucket: required"},
		{"content: {store: nfs}", `content.store: "nfs" is not fs or s3`},
		{"content: {compaction: {gpt: {context_window: 1000}}}", "content.compaction.gpt: no model provider"},
		{"content: {compaction: {scripted: {context_window: 0}}}", "content.compaction.scripted: context_window must be a positive"},
		{"content: {compaction: {scripted: {context_window: 100, strategy: fold}}}", `unknown strategy "fold"`},
		{"content: {compaction: {scripted: {context_window: 100, trigger: 0.4, target: 0.6}}}", "target (0.60) must be below trigger (0.40)"},
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
	s, err := cfg.ContentStore()
	if err != nil {
		t.Fatal(err)
	}
	fs, ok := s.(*content.FS)
	if !ok || fs.Dir != filepath.Join(cfg.Server.DataDir, "content") {
		t.Fatalf("store %v, want an fs store in the data directory", s)
	}
}
