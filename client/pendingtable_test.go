package client

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/wardenhq/warden/workflows"
)

// pageSizes records the page sizes of the visibility listings.
type pageSizes struct {
	*fakeTemporal
	sizes []int32
}

func (f *pageSizes) ListWorkflow(ctx context.Context, r *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.sizes = append(f.sizes, r.GetPageSize())
	return f.fakeTemporal.ListWorkflow(ctx, r)
}

// TestListPendingLimit: a limit reads one page of that many turns and
// keeps the server's order; no limit reads them all, oldest first.
func TestListPendingLimit(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	newer := workflows.NewPendingIndex([]workflows.Pending{{Kind: workflows.PendingApproval, CallID: "c2", Tool: "Bash", Input: json.RawMessage(`{}`), RequestedAt: t0.Add(time.Minute)}})
	older := workflows.NewPendingIndex([]workflows.Pending{{Kind: workflows.PendingApproval, CallID: "c1", Tool: "Bash", Input: json.RawMessage(`{}`), RequestedAt: t0}})
	f := &pageSizes{fakeTemporal: &fakeTemporal{execs: []*workflowpb.WorkflowExecutionInfo{execWith(t, "newer", &newer), execWith(t, "older", &older)}}}
	cl := New(f, "q")
	es, err := cl.ListPendingLimit(context.Background(), Filter{}, 7)
	if err != nil || len(es) != 2 || es[0].CallID != "c2" || len(f.sizes) != 1 || f.sizes[0] != 7 {
		t.Fatalf("limit 7: %+v %v, page sizes %v", es, err, f.sizes)
	}
	f.sizes = nil
	es, err = cl.ListPendingLimit(context.Background(), Filter{}, 0)
	if err != nil || len(es) != 2 || es[0].CallID != "c1" || len(f.sizes) != 1 || f.sizes[0] != listAllPageSize {
		t.Fatalf("no limit: %+v %v, page sizes %v", es, err, f.sizes)
	}
}

// TestWritePendingTable: per entry a line with how long it has waited,
// its deadline and its input, and an indented one with why it asks, its
// suggested rules, what the agent said and its hash; every line within
// TableWidth, however long the entry's texts.
func TestWritePendingTable(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := PendingEntry{WorkflowID: "t1", Preview: `{"command":"touch made.txt"}`}
	e.Kind, e.CallID, e.Tool, e.Hash, e.RequestedAt = workflows.PendingApproval, "c1", "Bash", "h1", now.Add(-90*time.Second)
	e.Deadline = now.Add(7*24*time.Hour - time.Hour)
	e.Reason, e.Suggestions, e.Context = "Mode: default", []string{"Bash(touch:*)"}, "I will\ncreate the file"
	long := e
	long.WorkflowID, long.CallID = "ops-kube-"+strings.Repeat("x", 60), "call_12_3"
	long.Preview = `{"command":"` + strings.Repeat("kubectl get pods --all-namespaces ", 10) + `"}`
	long.Context, long.Hash = strings.Repeat("I will look at the pods first. ", 10), strings.Repeat("ab", 32)
	long.Deadline = time.Time{}
	var out bytes.Buffer
	if err := WritePendingTable(&out, []PendingEntry{e, long}, now); err != nil {
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
	e := PendingEntry{}
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
