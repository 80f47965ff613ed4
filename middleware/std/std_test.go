package std

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"gopkg.in/yaml.v3"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/middleware/middlewaretest"
	"github.com/wardenhq/warden/tools"
)

// text is a tool that returns a fixed text.
const sample = `
logging:
  level: info
  preview_chars: 50
  secret_env: [GITHUB_TOKEN]
  secrets: [hunter2hunter2]
  tools:
    Read: {off: true}
metrics: true
limits:
  Bash: 2
  "*": 8
reduce:
  "*": {max_chars: 100}
  Bash: {max_chars: 40, head_fraction: 0.25}
`

func TestBuildFromYAML(t *testing.T) {
	t.Parallel()
	dec := yaml.NewDecoder(strings.NewReader(sample))
	dec.KnownFields(true)
	var cfg config.Middleware
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	mws, err := Build(cfg, reg, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(mws) != 4 {
		t.Fatalf("middlewares = %d, want 4", len(mws))
	}
	h := middleware.Chain(mws...)(middleware.Terminal)
	out := strings.Repeat("a", 100) + "hunter2hunter2" + strings.Repeat("z", 100)
	res, err := tools.Collect(h(context.Background(), middleware.Call{ID: "c1", Tool: middlewaretest.Text("Bash", out), Input: json.RawMessage(`{}`)}))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("a", 10) + "\n\n[... 174 of 214 characters cut ...]\n\n" + strings.Repeat("z", 30)
	if res.Content != want {
		t.Errorf("content = %q, want %q", res.Content, want)
	}
	// Logging is outermost: it logs the reduced output, which is shorter
	// than its 50-character preview plus note.
	var rec map[string]any
	if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	if rec["tool"] != "Bash" || rec["output_bytes"] != float64(len(want)) {
		t.Errorf("log record = %v", rec)
	}
	// Metrics sit inside logging and outside reduce.
	if n := testutil.CollectAndCount(reg, "warden_tool_output_bytes"); n != 1 {
		t.Errorf("metric series = %d, want 1", n)
	}
	// Read has logging off and the "*" reduction.
	logs.Reset()
	res, err = tools.Collect(h(context.Background(), middleware.Call{ID: "c2", Tool: middlewaretest.Text("Read", strings.Repeat("r", 150))}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Content, "[... 50 of 150 characters cut ...]") {
		t.Errorf("Read content = %q", res.Content)
	}
	if logs.Len() != 0 {
		t.Errorf("Read logged: %s", logs.String())
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	neg := -1
	tests := []struct {
		name    string
		cfg     config.Middleware
		reg     bool
		wantN   int
		wantErr bool
	}{
		{name: "zero", cfg: config.Middleware{}, wantN: 0},
		{name: "logging only", cfg: config.Middleware{Logging: &config.Logging{}}, wantN: 1},
		{name: "metrics without registry", cfg: config.Middleware{Metrics: true}, wantErr: true},
		{name: "metrics", cfg: config.Middleware{Metrics: true}, reg: true, wantN: 1},
		{name: "bad level", cfg: config.Middleware{Logging: &config.Logging{Level: "loud"}}, wantErr: true},
		{name: "negative limit", cfg: config.Middleware{Limits: map[string]int{"Bash": neg}}, wantErr: true},
		{name: "bad reduce", cfg: config.Middleware{Reduce: map[string]config.Reduce{"*": {MaxChars: neg}}}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var reg prometheus.Registerer
			if tc.reg {
				reg = prometheus.NewRegistry()
			}
			mws, err := Build(tc.cfg, reg, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if len(mws) != tc.wantN {
				t.Errorf("middlewares = %d, want %d", len(mws), tc.wantN)
			}
		})
	}
}
