package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/workflows"
)

// TestRememberedTable: the listing keeps the active approvals unless all
// are asked for, and the table says where each applies and until when.
func TestRememberedTable(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	exp := now.Add(time.Hour)
	rs := []workflows.Remembered{
		{ID: "r1", Scope: workflows.ScopeTurn, Tool: "Bash", Rule: "Bash(npm test:*)", WorkflowID: "t1", By: "carol", FromWorkflow: "t1", CallID: "c1"},
		{ID: "r2", Scope: workflows.ScopeInput, Tool: "Bash", Input: []byte(`{"command":"ls"}`), By: "dave", FromWorkflow: "t2", CallID: "c3", ExpiresAt: exp, SingleUse: true},
		{ID: "r3", Scope: workflows.ScopeAgent, Tool: "Read", Rule: "Read", Agent: "review", By: "carol", FromWorkflow: "t3", CallID: "c2", RevokedAt: now},
	}
	if got := FilterRemembered(rs, now, false); len(got) != 2 || got[0].ID != "r1" || got[1].ID != "r2" {
		t.Errorf("active = %+v", got)
	}
	if got := FilterRemembered(rs, now, true); len(got) != 3 {
		t.Errorf("all = %+v", got)
	}
	var out bytes.Buffer
	if err := WriteRememberedTable(&out, rs, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		"ID STATUS SCOPE WHERE TOOL RULE BY FROM EXPIRES SINGLE-USE",
		"r1 active turn t1 Bash Bash(npm test:*) carol t1/c1 - false",
		`r2 active input - Bash exact {"command":"ls"} dave t2/c3 ` + exp.Local().Format(time.RFC3339) + " true",
		"r3 revoked agent review Read Read carol t3/c2 - false",
	}
	if len(lines) != len(want) {
		t.Fatalf("table:\n%s", out.String())
	}
	for i, l := range lines {
		if got := strings.Join(strings.Fields(l), " "); got != want[i] {
			t.Errorf("line %d = %q, want %q", i, got, want[i])
		}
	}
}
