package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/middleware/middlewaretest"
	"github.com/wardenhq/warden/tools"
)

// run calls tool through the middleware built from cfg and returns the
// collected result and the decoded log records.
func run(t *testing.T, cfg Config, tool tools.Tool, input string) (tools.Result, []map[string]any, error) {
	t.Helper()
	var buf bytes.Buffer
	cfg.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, cerr := middlewaretest.Run(context.Background(), mw, middleware.Call{ID: "call-1", Tool: tool, Input: json.RawMessage(input), Attempt: 2})
	var recs []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		recs = append(recs, m)
	}
	return res, recs, cerr
}

func TestLoggingRedacts(t *testing.T) {
	t.Setenv("WARDEN_TEST_DB_PASS", "correct-horse-battery")
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabcdef\n-----END RSA PRIVATE KEY-----"
	secrets := []struct{ name, secret, text string }{
		{"aws access key", "AKIAIOSFODNN7EXAMPLE", "id=AKIAIOSFODNN7EXAMPLE ok"},
		{"aws secret", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		{"github classic", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 here"},
		{"github fine-grained", "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789", "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789"},
		{"openai", "sk-proj-abcdefghijklmnopqrstuvwxyz", "OPENAI=sk-proj-abcdefghijklmnopqrstuvwxyz"},
		{"anthropic", "sk-ant-api03-abcdefghijklmnop", "key sk-ant-api03-abcdefghijklmnop"},
		{"slack bot", "xoxb-123456789012-abcdefghij", "slack xoxb-123456789012-abcdefghij"},
		{"slack user", "xoxp-123456789012-abcdefghij", "slack xoxp-123456789012-abcdefghij"},
		{"bearer", "eyJhbGciOiJIUzI1NiJ9.payload.sig", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig"},
		{"password=", "hunter2hunter2", "mysql -u root password=hunter2hunter2 -h db"},
		{"json password", "s3cr3t-value", `{"user":"bob","password":"s3cr3t-value"}`},
		{"pem", "MIIEowIBAAKCAQEA7", pem},
		{"pem cut", "MIIEowIBAAKCAQEA7", "-----BEGIN PRIVATE KEY-----\nMIIEowIBAAKCAQEA7 and more"},
		{"literal", "plum-tree-42", "the word is plum-tree-42."},
		{"env value", "correct-horse-battery", "DB_PASS is correct-horse-battery"},
	}
	cfg := Config{Logging: config.Logging{Secrets: []string{"plum-tree-42", "abc"}, SecretEnv: []string{"WARDEN_TEST_DB_PASS"}, PreviewChars: 1000}}
	for _, tc := range secrets {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := json.Marshal(map[string]string{"command": tc.text})
			res, recs, err := run(t, cfg, middlewaretest.Tool{Name: "Bash", Chunks: []tools.Chunk{{Text: tc.text}}}, string(in))
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != tc.text {
				t.Errorf("the result itself must not be redacted: %q", res.Content)
			}
			if len(recs) != 1 {
				t.Fatalf("records = %d, want 1", len(recs))
			}
			for _, k := range []string{"input", "output_preview"} {
				v, _ := recs[0][k].(string)
				if strings.Contains(v, tc.secret) {
					t.Errorf("%s leaks the secret: %q", k, v)
				}
				if !strings.Contains(v, Redacted) {
					t.Errorf("%s has no %s marker: %q", k, Redacted, v)
				}
			}
		})
	}
	// Short literal secrets are ignored rather than blanking ordinary text.
	_, recs, _ := run(t, cfg, middlewaretest.Tool{Name: "Bash", Chunks: []tools.Chunk{{Text: "abc def"}}}, `{}`)
	if got := recs[0]["output_preview"]; got != "abc def" {
		t.Errorf("preview = %q, want abc def", got)
	}
}

func TestLoggingRecord(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name        string
		cfg         Config
		tool        middlewaretest.Tool
		wantLevel   string
		wantOutcome string
		wantBytes   float64
		wantPreview string // "-" for no preview field
		wantInput   bool
		wantErr     bool
		wantNoLog   bool
	}{
		{name: "success", tool: middlewaretest.Tool{Name: "Read", Chunks: []tools.Chunk{{Text: "hello "}, {Text: "world"}}},
			wantLevel: "INFO", wantOutcome: "success", wantBytes: 11, wantPreview: "hello world", wantInput: true},
		{name: "tool error", tool: middlewaretest.Tool{Name: "Read", Chunks: []tools.Chunk{{Text: "no such file", IsError: true}}},
			wantLevel: "INFO", wantOutcome: "error", wantBytes: 12, wantPreview: "no such file", wantInput: true},
		{name: "failure", tool: middlewaretest.Tool{Name: "Read", Chunks: []tools.Chunk{{Text: "partial"}}, Err: errors.New("backend down, token=abcdef123")},
			wantLevel: "ERROR", wantOutcome: "failure", wantBytes: 7, wantPreview: "partial", wantInput: true, wantErr: true},
		{name: "long output is previewed", tool: middlewaretest.Tool{Name: "Bash", Chunks: []tools.Chunk{{Text: long}}},
			wantLevel: "INFO", wantOutcome: "success", wantBytes: 5000, wantPreview: strings.Repeat("x", DefaultPreviewChars) + "… (5000 bytes in all)", wantInput: true},
		{name: "data blocks count", tool: middlewaretest.Tool{Name: "Read", Chunks: []tools.Chunk{{Data: []tools.DataBlock{{MediaType: "image/png", Data: make([]byte, 100)}}}}},
			wantLevel: "INFO", wantOutcome: "success", wantBytes: 100, wantPreview: "", wantInput: true},
		{name: "per-tool level, no preview, no input",
			cfg:  Config{Logging: config.Logging{Tools: map[string]config.LoggingTool{"Bash": {Level: "debug", PreviewChars: -1, InputChars: -1}}}},
			tool: middlewaretest.Tool{Name: "Bash", Chunks: []tools.Chunk{{Text: "ok"}}}, wantLevel: "DEBUG", wantOutcome: "success", wantBytes: 2, wantPreview: "-"},
		{name: "per-tool off", cfg: Config{Logging: config.Logging{Tools: map[string]config.LoggingTool{"Bash": {Off: true}}}},
			tool: middlewaretest.Tool{Name: "Bash", Chunks: []tools.Chunk{{Text: "ok"}}}, wantNoLog: true},
		{name: "per-tool override leaves other tools alone", cfg: Config{Logging: config.Logging{Level: "warn", Tools: map[string]config.LoggingTool{"Bash": {Off: true}}}},
			tool: middlewaretest.Tool{Name: "Read", Chunks: []tools.Chunk{{Text: "ok"}}}, wantLevel: "WARN", wantOutcome: "success", wantBytes: 2, wantPreview: "ok", wantInput: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, recs, err := run(t, tc.cfg, tc.tool, `{"file_path":"/etc/hosts"}`)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && res.Content != tc.tool.Content() {
				t.Errorf("content changed: %q", res.Content)
			}
			if tc.wantNoLog {
				if len(recs) != 0 {
					t.Errorf("records = %v, want none", recs)
				}
				return
			}
			if len(recs) != 1 {
				t.Fatalf("records = %d, want 1", len(recs))
			}
			r := recs[0]
			if r["msg"] != "tool call" || r["tool"] != tc.tool.Name || r["call_id"] != "call-1" || r["attempt"] != float64(2) {
				t.Errorf("identity fields = %v", r)
			}
			if _, ok := r["duration"].(float64); !ok {
				t.Errorf("duration missing: %v", r)
			}
			if r["level"] != tc.wantLevel || r["outcome"] != tc.wantOutcome || r["output_bytes"] != tc.wantBytes {
				t.Errorf("level, outcome, bytes = %v, %v, %v; want %v, %v, %v", r["level"], r["outcome"], r["output_bytes"], tc.wantLevel, tc.wantOutcome, tc.wantBytes)
			}
			p, hasPreview := r["output_preview"]
			if tc.wantPreview == "-" {
				if hasPreview {
					t.Errorf("preview logged: %v", p)
				}
			} else if p != tc.wantPreview {
				t.Errorf("preview = %q, want %q", p, tc.wantPreview)
			}
			if _, hasInput := r["input"]; hasInput != tc.wantInput {
				t.Errorf("input logged = %v, want %v", hasInput, tc.wantInput)
			}
			if tc.wantErr {
				e, _ := r["error"].(string)
				if !strings.Contains(e, "backend down") || strings.Contains(e, "abcdef123") {
					t.Errorf("error = %q, want redacted message", e)
				}
			}
		})
	}
}

func TestNewRejectsBadLevel(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Logging: config.Logging{Level: "loud"}}); err == nil {
		t.Error("level loud accepted")
	}
	if _, err := New(Config{Logging: config.Logging{Tools: map[string]config.LoggingTool{"Bash": {Level: "loud"}}}}); err == nil {
		t.Error("per-tool level loud accepted")
	}
	if _, err := New(Config{}); err != nil {
		t.Errorf("zero config: %v", err)
	}
}
