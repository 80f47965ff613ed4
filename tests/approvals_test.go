package tests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// waitPending waits until the turn lists n open entries and returns them.
func waitPending(t testing.TB, cl *client.Client, id string, n int) []workflows.Pending {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	var ps []workflows.Pending
	waitFor(t, ctx, func() bool {
		var err error
		ps, err = cl.Pending(ctx, id)
		return err == nil && len(ps) == n
	})
	return ps
}

func TestApprovalByUpdateWithValidator(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch made-by-agent\"}}]\n  - text: done\n")
	id := "approve-update-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	p := ps[0]
	if p.CallID != "c1" || p.Tool != "Bash" || p.Kind != workflows.PendingApproval || p.Hash == "" ||
		!slices.Contains(p.Suggestions, "Bash(touch made-by-agent:*)") || p.Deadline.Sub(p.RequestedAt) != workflows.DefaultApprovalTimeout {
		t.Fatalf("pending = %+v", p)
	}
	// Visible across workflows through search attributes.
	waitFor(t, ctx, func() bool {
		es, err := cl.ListPending(ctx, client.Filter{Tool: "Bash"})
		return err == nil && slices.ContainsFunc(es, func(e client.PendingEntry) bool { return e.WorkflowID == id && e.CallID == "c1" })
	})
	if es, err := cl.ListPending(ctx, client.Filter{Tool: "Write"}); err != nil || slices.ContainsFunc(es, func(e client.PendingEntry) bool { return e.WorkflowID == id }) {
		t.Fatalf("tool filter: %v %+v", err, es)
	}
	// The validator rejects bad answers; the caller sees why.
	bad := []workflows.Approval{
		{CallID: "nope", Decision: workflows.DecisionAllow},
		{CallID: "c1", Decision: workflows.DecisionAllow, Hash: "0000"},
		{CallID: "c1", Decision: "maybe"},
		{CallID: "c1", Decision: workflows.DecisionAlwaysAllow, Rules: []string{"Bash("}},
	}
	for _, a := range bad {
		if _, err := cl.Approve(ctx, id, a); !errors.Is(err, client.ErrRejected) {
			t.Errorf("Approve(%+v) error = %v, want rejection", a, err)
		}
	}
	if _, err := os.Stat(filepath.Join(workdir, "made-by-agent")); err == nil {
		t.Fatal("tool ran before approval")
	}
	ack, err := cl.Approve(ctx, id, workflows.Approval{CallID: "c1", Decision: workflows.DecisionAllow, Hash: p.Hash, By: "alice"})
	if err != nil || ack.CallID != "c1" {
		t.Fatalf("approve: %+v %v", ack, err)
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "c1", Decision: workflows.DecisionAllow}); !errors.Is(err, client.ErrRejected) {
		t.Errorf("second answer error = %v, want rejection", err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "made-by-agent")); err != nil {
		t.Errorf("approved tool did not run: %v (result %+v)", err, toolResults(res))
	}
}

func TestDenyBySignalReachesModel(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"curl http://example.com\"}}]\n  - text: ok\n")
	id := "deny-signal-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 1)
	// A bad signal is recorded as a rejection and changes nothing.
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "ghost", Decision: workflows.DecisionAllow}); err != nil {
		t.Fatal(err)
	}
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "c1", Decision: workflows.DecisionDeny, Reason: "no network access", By: "bob", Hash: hashOf(t, cl, id, "c1")}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Content, "no network access") || !strings.Contains(rs[0].Content, "bob") {
		t.Fatalf("tool results = %+v", rs)
	}
	page, err := cl.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(page.Events, func(e workflows.Event) bool {
		return e.Type == workflows.EventRejected && e.CallID == "ghost" && strings.Contains(e.Text, "no pending call")
	}) {
		t.Errorf("no rejection event for the bad signal: %+v", page.Events)
	}
}

func TestAlwaysAllowResolvesCoveredCalls(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, `
steps:
  - tool_calls:
      - {id: a, name: Bash, input: {command: "touch one"}}
      - {id: b, name: Bash, input: {command: "touch two"}}
      - {id: c, name: Bash, input: {command: "curl http://example.com"}}
  - text: done
`)
	id := "always-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 3)
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "a", Decision: workflows.DecisionAlwaysAllow, Rules: []string{"Bash(touch:*)"}, Hash: hashOf(t, cl, id, "a")}); err != nil {
		t.Fatal(err)
	}
	// b is covered by the new rule and resolves; c still waits.
	ps := waitPending(t, cl, id, 1)
	if ps[0].CallID != "c" {
		t.Fatalf("still pending = %+v", ps)
	}
	st, err := cl.State(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(st.Permission.Allow, func(r permission.Rule) bool { return r.String() == "Bash(touch:*)" }) {
		t.Errorf("rule not added to the turn's context: %+v", st.Permission.Allow)
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "c", Decision: workflows.DecisionDeny, Reason: "no", Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"one", "two"} {
		if _, err := os.Stat(filepath.Join(workdir, f)); err != nil {
			t.Errorf("%s not created: %v", f, err)
		}
	}
}

func TestApprovalDeadlineDenies(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch x\"}}]\n  - text: ok\n")
	id := "deadline-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		ApprovalTimeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Content, "approval timed out") {
		t.Fatalf("tool results = %+v", rs)
	}
}

// hashOf returns the listed hash of an open call: what every answer
// must carry.
func hashOf(t *testing.T, cl *client.Client, id, callID string) string {
	t.Helper()
	p, err := cl.PendingCall(ctxT(t, 30*time.Second), id, callID)
	if err != nil {
		t.Fatalf("hash of %s %s: %v", id, callID, err)
	}
	return p.Hash
}
