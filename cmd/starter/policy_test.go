package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/decide"
)

func runPolicy(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return execute(t, newPolicyCmd(&conn{}), "", args...)
}

// TestPolicyTestCommand: "policy test" prints every rule with what it
// matched, fails when an example fails, reads a config file's permission
// section, and writes JSON with --json.
func TestPolicyTestCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	src := "allow:\n  - Read\n  - {rule: \"Bash(npm run:*)\", match: [\"npm run build\"], not_match: [\"npm install\"]}\n" +
		"deny:\n  - {rule: \"Bash(rm:*)\", match: [\"sudo rm x\", \"rmdir x\"]}\n"
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runPolicy(t, "test", file, "--workdir", dir)
	if err == nil || !strings.Contains(err.Error(), "1 of 4 rule examples fail") {
		t.Errorf("error %v", err)
	}
	for _, want := range []string{
		"deny rule 1  Bash(rm:*)\n  ok    matches        \"sudo rm x\" (match example)\n  FAIL  does not match \"rmdir x\" (match example)\n",
		"allow rule 1  Read\n  (no examples)\n",
		"allow rule 2  Bash(npm run:*)\n  ok    matches        \"npm run build\" (match example)\n  ok    does not match \"npm install\" (not_match example)\n",
		"p.yaml: 3 rules, 4 examples, 1 failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = runPolicy(t, "test", "--json", file)
	var rs []decide.ExampleResult
	if err == nil || json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &rs) != nil || len(rs) != 4 || rs[3].OK() {
		t.Errorf("json: %v %+v\n%s", err, rs, out)
	}
	if out, err := runPolicy(t, "test", "../../temporal-dev.yaml"); err != nil || !strings.Contains(out, "0 failed") {
		t.Errorf("shipped config: %v\n%s", err, out)
	}
	if _, err := runPolicy(t, "test", filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file passed")
	}
}

// TestParseSinceDays: --since takes days (7d) besides Go durations and
// RFC 3339 times.
func TestParseSinceDays(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"7d": now.AddDate(0, 0, -7), "0d": now, "36h": now.Add(-36 * time.Hour), "2025-03-01T00:00:00Z": time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, err := parseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"-1d", "7days", "d"} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
