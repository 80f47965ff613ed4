package tests

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/workflows"
)

// listIndexed lists one page of the entries of turns whose id starts
// with prefix and checks that every one came from the turns' index.
func listIndexed(t *testing.T, ctx context.Context, cl *client.Client, f client.Filter) []client.PendingEntry {
	t.Helper()
	page, err := cl.ListPendingPage(ctx, f, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	if page.Queried != 0 {
		t.Fatalf("listing queried %d of %d turns; want all read from their index", page.Queried, page.Turns)
	}
	return page.Entries
}

// TestPendingIndexListing checks the pending index turns keep in their
// memo: the listing reads entries (preview and hash included) from
// visibility alone, filters by tool, age and workflow on the server,
// drops answered entries, survives a worker restart, and an answer
// carrying the listed hash is accepted.
func TestPendingIndexListing(t *testing.T) {
	queue := "tq-" + t.Name()
	workdir := t.TempDir()
	startW := func() worker.Worker {
		w := worker.New(env.c, queue, worker.Options{})
		if _, err := warden.Register(w, warden.Options{Workdir: workdir, Content: env.store}); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := startW()
	cl := startWorkerless(queue)
	ctx := ctxT(t, 120*time.Second)
	prefix := fmt.Sprintf("pidx-%d-", time.Now().UnixNano())
	long := strings.Repeat("x", 300)
	// Turn a waits on two Bash calls (one with a long input), turn b on a
	// Write.
	sa := script(t, fmt.Sprintf("steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch a1\"}}, {id: c2, name: Bash, input: {command: \"echo %s > a2\"}}]\n  - text: done\n", long))
	sb := script(t, fmt.Sprintf("steps:\n  - tool_calls: [{id: w1, name: Write, input: {file_path: %q, content: \"hi\"}}]\n  - text: done\n", filepath.Join(workdir, "b.txt")))
	a, b := prefix+"a", prefix+"b"
	if _, err := cl.Start(ctx, a, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: sa}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Start(ctx, b, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: sb}}); err != nil {
		t.Fatal(err)
	}
	all := client.Filter{Workflow: prefix}
	var es []client.PendingEntry
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for es = listIndexed(t, ctx, cl, all); len(es) != 3; es = listIndexed(t, ctx, cl, all) {
		select {
		case <-wctx.Done():
			t.Fatalf("listed %+v, want 3 entries", es)
		case <-time.After(100 * time.Millisecond):
		}
	}
	byCall := map[string]client.PendingEntry{}
	for _, e := range es {
		byCall[e.CallID] = e
	}
	want, _ := cl.Pending(ctx, a)
	for _, p := range want {
		e := byCall[p.CallID]
		if e.WorkflowID != a || e.RunID == "" || e.Hash != p.Hash || e.Tool != "Bash" || e.Kind != workflows.PendingApproval ||
			!e.RequestedAt.Equal(p.RequestedAt) || e.Reason != p.Reason {
			t.Errorf("indexed %s = %+v, want %+v", p.CallID, e, p)
		}
	}
	if e := byCall["c1"]; e.Truncated || e.Preview != `{"command":"touch a1"}` || string(e.Input) != e.Preview {
		t.Errorf("short input: preview %q input %q truncated %v", e.Preview, e.Input, e.Truncated)
	}
	if e := byCall["c2"]; !e.Truncated || len(e.Preview) != workflows.PreviewBytes || len(e.Input) != 0 || !strings.HasPrefix(e.Preview, `{"command":"echo xxx`) {
		t.Errorf("long input: preview %q (%d bytes) input %q truncated %v", e.Preview, len(e.Preview), e.Input, e.Truncated)
	}
	// Filters select turns on the server and entries in them.
	if es := listIndexed(t, ctx, cl, client.Filter{Workflow: prefix, Tool: "Write"}); len(es) != 1 || es[0].CallID != "w1" || es[0].WorkflowID != b {
		t.Errorf("tool filter: %+v", es)
	}
	if es := listIndexed(t, ctx, cl, client.Filter{Workflow: prefix + "a"}); len(es) != 2 {
		t.Errorf("workflow filter: %+v", es)
	}
	if es := listIndexed(t, ctx, cl, client.Filter{Workflow: prefix, OlderThan: time.Hour}); len(es) != 0 {
		t.Errorf("age filter (1h): %+v", es)
	}
	if es := listIndexed(t, ctx, cl, client.Filter{Workflow: prefix, OlderThan: time.Millisecond}); len(es) != 3 {
		t.Errorf("age filter (1ms): %+v", es)
	}
	if es := listIndexed(t, ctx, cl, client.Filter{Workflow: prefix, Kind: workflows.PendingExternal}); len(es) != 0 {
		t.Errorf("kind filter: %+v", es)
	}
	// A stale hash is refused; the listed one is accepted, and the
	// answered entry leaves the index. Always-allow changes the policy,
	// so the other waiting call's hash changes, in the index too.
	if _, err := cl.Approve(ctx, a, workflows.Approval{CallID: "c1", Decision: workflows.DecisionAllow, Hash: "00000000000000000000000000000000"}); !errors.Is(err, client.ErrRejected) {
		t.Fatalf("stale hash accepted: %v", err)
	}
	if _, err := cl.ApproveListed(ctx, a, byCall["c1"].Pending, workflows.Approval{Decision: workflows.DecisionAlwaysAllow, Rules: []string{"Bash(touch:*)"}, By: "alice"}); err != nil {
		t.Fatalf("approve with the listed hash: %v", err)
	}
	waitFor(t, ctx, func() bool {
		es = listIndexed(t, ctx, cl, all)
		return len(es) == 2 && !slices.ContainsFunc(es, func(e client.PendingEntry) bool { return e.CallID == "c1" })
	})
	c2 := hashOf(t, cl, a, "c2")
	if c2 == byCall["c2"].Hash {
		t.Fatal("always-allow did not change the other call's hash")
	}
	if i := slices.IndexFunc(es, func(e client.PendingEntry) bool { return e.CallID == "c2" }); i < 0 || es[i].Hash != c2 {
		t.Fatalf("index after always-allow: %+v, want c2 with hash %s", es, c2)
	}
	// Kill the worker and answer while none runs: the index changes only
	// when a worker records the answer in the turn's history.
	w.Stop()
	if err := cl.ApproveSignal(ctx, b, workflows.Approval{CallID: "w1", Decision: workflows.DecisionDeny, Reason: "no", Hash: byCall["w1"].Hash}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if es := listIndexed(t, ctx, cl, all); len(es) != 2 {
		t.Fatalf("with no worker, the index changed: %+v", es)
	}
	w = startW()
	defer w.Stop()
	waitFor(t, ctx, func() bool {
		es = listIndexed(t, ctx, cl, all)
		return len(es) == 1 && es[0].CallID == "c2"
	})
	if es[0].Hash != c2 {
		t.Fatalf("hash after restart = %s, want %s", es[0].Hash, c2)
	}
	// The whole listing agrees with the pages, and the answer that uses
	// the hash from the index after the restart is accepted.
	if all, err := cl.ListPending(ctx, all); err != nil || len(all) != 1 || all[0].CallID != "c2" {
		t.Fatalf("ListPending = %+v, %v", all, err)
	}
	if _, err := cl.ApproveListed(ctx, a, es[0].Pending, workflows.Approval{Decision: workflows.DecisionDeny, Reason: "too long"}); err != nil {
		t.Fatalf("approve with the indexed hash after restart: %v", err)
	}
	for _, id := range []string{a, b} {
		if _, err := cl.Result(ctx, id); err != nil {
			t.Fatalf("result of %s: %v", id, err)
		}
	}
	if es := listIndexed(t, ctx, cl, all); len(es) != 0 {
		t.Fatalf("finished turns still listed: %+v", es)
	}
}
