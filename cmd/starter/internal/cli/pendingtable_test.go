package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/workflows"
)

// TestWritePendingTable: per entry a line with how long it has waited,
// its deadline and its input, and an indented one with why it asks, its
// suggested rules, what the agent said and its hash; every line within
// TableWidth, however long the entry's texts.
func TestWritePendingTable(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := client.PendingEntry{WorkflowID: "t1", Preview: `{"command":"touch made.txt"}`}
	e.Kind, e.CallID, e.Tool, e.Hash, e.RequestedAt = workflows.PendingApproval, "c1", "Bash", "h1", now.Add(-90*time.Second)
	e.Deadline = now.Add(7*24*time.Hour - time.Hour)
	e.Reason, e.Suggestions, e.Context = "Mode: default", []string{"Bash(touch:*)"}, "I will\ncreate the file"
	long := e
	long.WorkflowID, long.CallID = "ops-kube-"+strings.Repeat("x", 60), "call_12_3"
	long.Preview = `{"command":"` + strings.Repeat("kubectl get pods --all-namespaces ", 10) + `"}`
	long.Context, long.Hash = strings.Repeat("I will look at the pods first. ", 10), strings.Repeat("ab", 32)
	long.Deadline = time.Time{}
	var out bytes.Buffer
	if err := WritePendingTable(&out, []client.PendingEntry{e, long}, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 6 || strings.Join(strings.Fields(lines[0]), " ") != "WORKFLOW CALL TOOL WAITING DEADLINE INPUT" || !strings.Contains(lines[0], "DEADLINE") {
		t.Fatalf("table:\n%s", out.String())
	}
	dl := "in 6d23h (" + e.Deadline.Local().Format("01-02 15:04 MST") + ")"
	want := `t1 c1 Bash 1m30s ` + dl + ` {"command":"touch made.txt"}`
	if got := strings.Join(strings.Fields(lines[1]), " "); got != want {
		t.Errorf("row = %q, want %q", got, want)
	}
	if got := strings.TrimSpace(lines[2]); got != "hash h1 · Mode: default · suggests Bash(touch:*) · agent: I will create the file" {
		t.Errorf("second line = %q", got)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > TableWidth {
			t.Errorf("line of %d columns: %s", n, l)
		}
	}
	if !strings.Contains(lines[3], " none ") {
		t.Errorf("no deadline: %s", lines[3])
	}
	if strings.TrimSpace(lines[4]) != "workflow "+long.WorkflowID+" call call_12_3" || !strings.HasPrefix(strings.TrimSpace(lines[5]), "hash "+long.Hash+" · ") {
		t.Errorf("a cut entry's ids and hash:\n%s\n%s", lines[4], lines[5])
	}
}

func TestDeadline(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{6*24*time.Hour + 23*time.Hour, "in 6d23h"}, {4*time.Hour + 5*time.Minute, "in 4h05m"}, {200 * time.Second, "in 3m20s"}, {-time.Minute, "passed"}} {
		if got := Deadline(now.Add(c.d), now); !strings.HasPrefix(got, c.want+" (") || !strings.HasSuffix(got, now.Add(c.d).Local().Format("MST")+")") {
			t.Errorf("Deadline(%v) = %q, want %s (… zone)", c.d, got, c.want)
		}
	}
	if got := Deadline(time.Time{}, now); got != "none" {
		t.Errorf("no deadline: %q", got)
	}
}

// TestWhy: the REASON column says why a call asks, not only the layer
// that decided.
func TestWhy(t *testing.T) {
	e := client.PendingEntry{}
	e.Tool, e.Reason = "Bash", "Mode: default"
	e.Message = "Permission required for Bash (mode default, no allow rule matches): not read-only: `touch` changes files (in `touch made.txt`)"
	if got := why(e); got != "not read-only: `touch` changes files (in `touch made.txt`)" {
		t.Errorf("why = %q", got)
	}
	e.Message = "Permission required for Bash: the write of /etc/x is outside the working directories"
	if got := why(e); got != "the write of /etc/x is outside the working directories" {
		t.Errorf("why = %q", got)
	}
	e.Message = ""
	if got := why(e); got != "Mode: default" {
		t.Errorf("why without a message = %q", got)
	}
	if got := oneLine("a\n  b "+strings.Repeat("c", 20), 10); got != "a b ccccc…" {
		t.Errorf("oneLine = %q", got)
	}
}
