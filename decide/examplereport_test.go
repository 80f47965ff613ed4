package decide

import (
	"bytes"
	"testing"

	"github.com/wardenhq/warden/permission"
)

// TestWriteExamples: every rule is listed in the engine's order with its
// examples' outcomes (or none), and the last line counts the failures.
func TestWriteExamples(t *testing.T) {
	p := permission.Policy{Allow: []string{"Read", "Bash(npm run:*)"}, Deny: []string{"Bash(rm:*)"}, DangerousCommands: []string{"dd:*"}}
	rs := []ExampleResult{
		{List: permission.ListDeny, Index: 1, Rule: "Bash(rm:*)", Example: "sudo rm x", Want: true, Matched: true},
		{List: permission.ListDeny, Index: 1, Rule: "Bash(rm:*)", Example: "rmdir x", Want: true},
		{List: permission.ListAllow, Index: 2, Rule: "Bash(npm run:*)", Example: "npm install"},
		{List: permission.ListDangerousCommands, Index: 1, Rule: "dd:*", Example: "dd if=x", Want: true, Err: "bad pattern"},
	}
	if n := FailedExamples(rs); n != 2 {
		t.Errorf("FailedExamples = %d, want 2", n)
	}
	var out bytes.Buffer
	WriteExamples(&out, "p.yaml", p, rs)
	want := "deny rule 1  Bash(rm:*)\n" +
		"  ok    matches        \"sudo rm x\" (match example)\n" +
		"  FAIL  does not match \"rmdir x\" (match example)\n" +
		"allow rule 1  Read\n  (no examples)\n" +
		"allow rule 2  Bash(npm run:*)\n" +
		"  ok    does not match \"npm install\" (not_match example)\n" +
		"dangerous_commands rule 1  dd:*\n" +
		"  FAIL  \"dd if=x\" (match example): bad pattern\n" +
		"p.yaml: 4 rules, 4 examples, 2 failed\n"
	if got := out.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
