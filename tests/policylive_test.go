package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/workflows"
)

// liveWorker starts a worker with a client (what following a policy
// store needs) and a policy store of the test's own.
func liveWorker(t *testing.T) (*client.Client, string, string) {
	t.Helper()
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir, Client: env.c})
	store := "policy-" + t.Name() + "-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.StartPolicyStore(ctxT(t, 30*time.Second), store); err != nil {
		t.Fatal(err)
	}
	return cl, store, workdir
}

// liveTurn starts a scripted turn that follows store.
func liveTurn(t *testing.T, ctx context.Context, cl *client.Client, id, store, agent, steps string, approvers *workflows.Approvers) {
	t.Helper()
	in := workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, steps)},
		LivePolicy: store, Agent: agent, Approvers: approvers}
	if _, err := cl.Start(ctx, id, in); err != nil {
		t.Fatal(err)
	}
}

func TestLivePolicyRedecidesWaitingCalls(t *testing.T) {
	cl, store, workdir := liveWorker(t)
	ctx := ctxT(t, 90*time.Second)
	id := "live-" + fmt.Sprint(time.Now().UnixNano())
	liveTurn(t, ctx, cl, id, store, "", `
steps:
  - tool_calls:
      - {id: a, name: Bash, input: {command: "touch live-a"}}
      - {id: b, name: Bash, input: {command: "curl http://example.com"}}
      - {id: c, name: Bash, input: {command: "touch live-c"}}
  - text: done
`, nil)
	ps := waitPending(t, cl, id, 3)
	oldC := ps[2].Hash
	v, err := cl.SetPolicy(ctx, store, workflows.LiveRules{Allow: []string{"Bash(touch live-a:*)"}, Deny: []string{"Bash(curl:*)"}}, "ops")
	if err != nil || v != 1 {
		t.Fatalf("set policy: v%d %v", v, err)
	}
	// With no answer: a runs, b is denied, c keeps waiting with a new hash.
	ps = waitPending(t, cl, id, 1)
	if ps[0].CallID != "c" || ps[0].Hash == oldC || ps[0].LiveVersion != 1 {
		t.Fatalf("still waiting = %+v (old hash %s)", ps, oldC)
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "c", Decision: workflows.DecisionAllow, Hash: oldC}); !errors.Is(err, client.ErrRejected) {
		t.Fatalf("answer with the old hash: %v, want a rejection", err)
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "c", Decision: workflows.DecisionAllow, Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"live-a", "live-c"} {
		if _, err := os.Stat(filepath.Join(workdir, f)); err != nil {
			t.Errorf("%s not created: %v", f, err)
		}
	}
	rs := toolResults(res)
	if len(rs) != 3 || !rs[1].IsError || !strings.Contains(rs[1].Content, "Permission denied") || !strings.Contains(rs[1].Content, "policy v1") {
		t.Fatalf("tool results = %+v", rs)
	}
	page, err := cl.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"policy v0 → v1: allow", "policy v0 → v1: deny", "policy v0 → v1: ask"} {
		if !slices.ContainsFunc(page.Events, func(e workflows.Event) bool { return strings.Contains(e.Text, want) }) {
			t.Errorf("no event %q in %+v", want, page.Events)
		}
	}
	// A turn started now is decided under the live rules at once.
	id2 := "live-next-" + fmt.Sprint(time.Now().UnixNano())
	liveTurn(t, ctx, cl, id2, store, "", "steps:\n  - tool_calls: [{id: n, name: Bash, input: {command: \"curl http://example.org\"}}]\n  - text: done\n", nil)
	res, err = cl.Result(ctx, id2)
	if err != nil {
		t.Fatal(err)
	}
	if rs := toolResults(res); len(rs) != 1 || !strings.Contains(rs[0].Content, "Permission denied") {
		t.Fatalf("later turn: %+v", rs)
	}
}

// rememberFirst runs a turn whose call asks and answers it with a
// remembered always_allow, then waits for the turn to end.
func rememberFirst(t *testing.T, ctx context.Context, cl *client.Client, store, agent, cmd string, a workflows.Approval) string {
	t.Helper()
	id := "remember-" + fmt.Sprint(time.Now().UnixNano())
	liveTurn(t, ctx, cl, id, store, agent, fmt.Sprintf("steps:\n  - tool_calls: [{id: r, name: Bash, input: {command: %q}}]\n  - text: done\n", cmd), nil)
	ps := waitPending(t, cl, id, 1)
	a.CallID, a.Decision, a.Hash = "r", workflows.DecisionAlwaysAllow, ps[0].Hash
	if _, err := cl.Approve(ctx, id, a); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// asks runs a turn of one call and reports whether it asked (the ask is
// then denied) or ran without asking.
func asks(t *testing.T, ctx context.Context, cl *client.Client, store, agent, idPrefix, cmd string) (bool, string) {
	t.Helper()
	id := idPrefix + fmt.Sprint(time.Now().UnixNano())
	liveTurn(t, ctx, cl, id, store, agent, fmt.Sprintf("steps:\n  - tool_calls: [{id: x, name: Bash, input: {command: %q}}]\n  - text: done\n", cmd), nil)
	for {
		st, err := cl.State(ctx, id)
		if err == nil && len(st.Pending) > 0 {
			if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "x", Decision: workflows.DecisionDeny, Reason: "test", Hash: st.Pending[0].Hash}); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.Result(ctx, id); err != nil {
				t.Fatal(err)
			}
			return true, id
		}
		if err == nil && st.Done {
			return false, id
		}
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRememberedApprovalReachesLaterTurnsNeverWider(t *testing.T) {
	cl, store, _ := liveWorker(t)
	ctx := ctxT(t, 120*time.Second)
	// A rule wider than the call is refused.
	id := "remember-wide-" + fmt.Sprint(time.Now().UnixNano())
	liveTurn(t, ctx, cl, id, store, "", "steps:\n  - tool_calls: [{id: r, name: Bash, input: {command: \"touch one\"}}]\n  - text: done\n", nil)
	ps := waitPending(t, cl, id, 1)
	for _, rules := range [][]string{{"Bash(touch:*)"}, {"Bash"}, {"Read"}} {
		if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "r", Decision: workflows.DecisionAlwaysAllow, Scope: workflows.ScopeNamespace,
			Rules: rules, Hash: ps[0].Hash, By: "alice"}); !errors.Is(err, client.ErrRejected) {
			t.Errorf("remember %v: %v, want a rejection", rules, err)
		}
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "r", Decision: workflows.DecisionAlwaysAllow, Scope: workflows.ScopeNamespace,
		Hash: ps[0].Hash, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	st, err := cl.PolicyState(ctx, store)
	if err != nil || len(st.Remembered) != 1 || st.Remembered[0].Rule != "Bash(touch one:*)" || st.Remembered[0].By != "alice" {
		t.Fatalf("store = %+v %v", st, err)
	}
	rid := st.Remembered[0].ID
	// The same call in a later turn runs without asking; a wider one asks.
	asked, later := asks(t, ctx, cl, store, "", "remember-same-", "touch one")
	if asked {
		t.Fatal("the remembered call asked again in a later turn")
	}
	if asked, _ := asks(t, ctx, cl, store, "", "remember-wider-", "touch two"); !asked {
		t.Fatal("a wider call ran without asking")
	}
	if asked, _ := asks(t, ctx, cl, store, "", "remember-wider-", "touch one && rm -f x"); !asked {
		t.Fatal("a compound call ran without asking")
	}
	// The audit shows which remembered approval allowed it, and who made it.
	recs, err := audit.Workflow(ctx, env.c, later)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(recs, func(r audit.Record) bool {
		return r.Kind == audit.KindPermission && r.Decision == "allow" && r.Remembered == rid && r.RememberedBy == "alice"
	}) {
		t.Errorf("audit of %s names no remembered approval: %+v", later, recs)
	}
	// Revoked: it asks again.
	if _, err := cl.Revoke(ctx, store, rid, "ops"); err != nil {
		t.Fatal(err)
	}
	if asked, _ := asks(t, ctx, cl, store, "", "remember-revoked-", "touch one"); !asked {
		t.Fatal("a revoked approval still allowed the call")
	}
}

func TestRememberedApprovalTTLAndSingleUse(t *testing.T) {
	cl, store, _ := liveWorker(t)
	ctx := ctxT(t, 120*time.Second)
	// The exact input, for 3 seconds.
	rememberFirst(t, ctx, cl, store, "", "touch ttl", workflows.Approval{Scope: workflows.ScopeInput, TTL: 3 * time.Second, By: "bob"})
	if asked, _ := asks(t, ctx, cl, store, "", "ttl-in-", "touch ttl"); asked {
		t.Fatal("asked within the TTL")
	}
	if asked, _ := asks(t, ctx, cl, store, "", "ttl-other-", "touch ttl2"); !asked {
		t.Fatal("another input ran under an exact-input approval")
	}
	time.Sleep(3 * time.Second)
	if asked, _ := asks(t, ctx, cl, store, "", "ttl-out-", "touch ttl"); !asked {
		t.Fatal("ran after the TTL")
	}
	// Single use, for agent "builder": the first later call only.
	rememberFirst(t, ctx, cl, store, "builder", "touch once", workflows.Approval{Scope: workflows.ScopeAgent, SingleUse: true, By: "bob"})
	if asked, _ := asks(t, ctx, cl, store, "other", "once-other-", "touch once"); !asked {
		t.Fatal("an agent-scoped approval allowed another agent's call")
	}
	if asked, _ := asks(t, ctx, cl, store, "builder", "once-1-", "touch once"); asked {
		t.Fatal("the single-use approval was not used")
	}
	if asked, _ := asks(t, ctx, cl, store, "builder", "once-2-", "touch once"); !asked {
		t.Fatal("the single-use approval allowed a second call")
	}
	st, err := cl.PolicyState(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	var status []string
	for _, r := range st.Remembered {
		status = append(status, r.Status(time.Now()))
	}
	if !slices.Equal(status, []string{"expired", "used"}) {
		t.Fatalf("statuses = %v (%+v)", status, st.Remembered)
	}
}

func TestRememberedApprovalBoundByRoles(t *testing.T) {
	cl, store, _ := liveWorker(t)
	ctx := ctxT(t, 60*time.Second)
	approvers := &workflows.Approvers{Users: map[string][]string{"dev": {"touch-a"}}, Roles: map[string][]string{"touch-a": {"Bash(touch a)"}}}
	id := "remember-role-" + fmt.Sprint(time.Now().UnixNano())
	liveTurn(t, ctx, cl, id, store, "", "steps:\n  - tool_calls: [{id: r, name: Bash, input: {command: \"touch a\"}}]\n  - text: done\n", approvers)
	ps := waitPending(t, cl, id, 1)
	// The call's own rule, Bash(touch a:*), is wider than dev's role.
	for _, scope := range []workflows.RememberScope{workflows.ScopeNamespace, workflows.ScopeTurn} {
		_, err := cl.Approve(ctx, id, workflows.Approval{CallID: "r", Decision: workflows.DecisionAlwaysAllow, Scope: scope, Hash: ps[0].Hash, By: "dev"})
		if !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "wider") {
			t.Errorf("scope %s: %v, want a rejection (wider than the role)", scope, err)
		}
	}
	// The exact input is within it.
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "r", Decision: workflows.DecisionAlwaysAllow, Scope: workflows.ScopeInput, Hash: ps[0].Hash, By: "dev"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	st, err := cl.PolicyState(ctx, store)
	if err != nil || len(st.Remembered) != 1 || st.Remembered[0].Scope != workflows.ScopeInput {
		t.Fatalf("store = %+v %v", st, err)
	}
}

// TestPolicyStoreNotYetMade: on a fresh install the policy store does
// not exist; `starter policy show` and `policy remembered list` report
// it as the turns take it (version 0, no live rules, nothing
// remembered) and say how it is made, instead of failing with "workflow
// not found"; the client's PolicyState says so by ErrNoPolicyStore.
func TestPolicyStoreNotYetMade(t *testing.T) {
	store := "no-store-yet-" + tag()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sbin := buildStarter(t)
	starter := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(sbin, append([]string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default",
			"policy", "--store", store}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("policy %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := starter("show"); !strings.Contains(out, "version 0") || !strings.Contains(out, "live rules: none set") || !strings.Contains(out, "does not exist yet") {
		t.Errorf("show of a store not made yet:\n%s", out)
	}
	if out := starter("show", "--json"); !strings.Contains(out, `"version":0`) {
		t.Errorf("show --json of a store not made yet:\n%s", out)
	}
	if out := starter("remembered", "list"); !strings.Contains(out, "does not exist yet") {
		t.Errorf("remembered list of a store not made yet:\n%s", out)
	}
	cl := startWorkerless("tq-no-store-" + tag())
	if _, err := cl.PolicyState(ctxT(t, 30*time.Second), store); !errors.Is(err, client.ErrNoPolicyStore) {
		t.Errorf("PolicyState of a store not made yet: %v", err)
	}
}

// TestApproveWithReason: `starter approvals approve --reason` records why
// a call was allowed (a ticket) in the audit's approval record. Control:
// an approval without it records none.
func TestApproveWithReason(t *testing.T) {
	cl, store, _ := liveWorker(t)
	ctx := ctxT(t, 90*time.Second)
	id := "reason-" + tag()
	liveTurn(t, ctx, cl, id, store, "", `
steps:
  - tool_calls:
      - {id: a, name: Bash, input: {command: "touch reason-a"}}
      - {id: b, name: Bash, input: {command: "touch reason-b"}}
  - text: done
`, nil)
	ps := waitPending(t, cl, id, 2)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default", "approvals", "approve", id}
	sbin := buildStarter(t)
	for _, p := range ps {
		args := append(slices.Clone(common), p.CallID, "--by", "ops", "--hash", p.Hash)
		if p.CallID == "a" {
			args = append(args, "--reason", "CHG-1234: approved in the change review")
		}
		if out, err := runStarter(t, sbin, dir, args...); err != nil {
			t.Fatalf("approve %s: %v\n%s", p.CallID, err, out)
		}
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	recs, err := audit.Workflow(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range recs {
		if r.Kind == audit.KindApproval {
			got[r.CallID] = r.Reason
		}
	}
	if got["a"] != "CHG-1234: approved in the change review" || got["b"] != "" {
		t.Errorf("approval reasons in the audit: %q", got)
	}
}

// TestStarterRunFollowsLivePolicy: `starter run --live-policy STORE`
// starts a turn that follows the store, so a rule `policy apply` set
// there allows its call. Control: the same script run with
// --no-live-policy waits for an approval.
func TestStarterRunFollowsLivePolicy(t *testing.T) {
	workdir := t.TempDir()
	queue := "tq-" + t.Name()
	cl := startWorkerOn(t, queue, warden.Options{Workdir: workdir, Client: env.c})
	store := "policy-cli-" + tag()
	ctx := ctxT(t, 90*time.Second)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scriptFile := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scriptFile, []byte("steps:\n  - tool_calls:\n      - {id: a, name: Bash, input: {command: \"touch cli-live\"}}\n  - text: done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sbin := buildStarter(t)
	common := []string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default", "--task-queue", queue}
	// The store is made by run itself; the rule is set once it exists.
	id := "cli-live-" + tag()
	if out, err := runStarter(t, sbin, dir, append(common, "run", "--script", scriptFile, "--workflow-id", id, "--live-policy", store, "--detach")...); err != nil {
		t.Fatalf("run --live-policy: %v\n%s", err, out)
	}
	waitPending(t, cl, id, 1)
	if _, err := cl.SetPolicy(ctx, store, workflows.LiveRules{Allow: []string{"Bash(touch cli-live:*)"}}, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "cli-live")); err != nil {
		t.Errorf("the live rule did not reach the CLI-started turn: %v", err)
	}
	// Control: with --no-live-policy the same call waits.
	id2 := "cli-nolive-" + tag()
	if out, err := runStarter(t, sbin, dir, append(common, "run", "--script", scriptFile, "--workflow-id", id2, "--no-live-policy", "--detach")...); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if ps := waitPending(t, cl, id2, 1); ps[0].CallID != "a" {
		t.Errorf("control: pending %+v", ps)
	}
	_ = env.c.TerminateWorkflow(ctx, id2, "", "test over")
}

// TestStarterFollowsLivePolicyByDefault: a turn `starter run` starts with
// no policy flag follows the namespace's store (warden-policy, made by
// run): `policy apply` releases its waiting call, and an approval
// remembered from the CLI with --scope namespace allows the next turn's
// call. The store is removed and the remember still works (the answer
// makes it again), or fails with a non-zero exit, never a silent
// always_allow. Controls: a --no-live-policy turn keeps waiting through
// the apply, and refuses a scoped remember with a non-zero exit.
func TestStarterFollowsLivePolicyByDefault(t *testing.T) {
	workdir := t.TempDir()
	queue := "tq-" + t.Name()
	cl := startWorkerOn(t, queue, warden.Options{Workdir: workdir, Client: env.c})
	ctx := ctxT(t, 3*time.Minute)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(name, cmd string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte("steps:\n  - tool_calls:\n      - {id: a, name: Bash, input: {command: \""+cmd+"\"}}\n  - text: done\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	sbin := buildStarter(t)
	common := []string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default", "--task-queue", queue}
	starter := func(args ...string) (string, error) {
		return runStarter(t, sbin, dir, append(slices.Clone(common), args...)...)
	}
	// The store may be left from an earlier run of the suite's server on
	// another queue: start from none.
	_ = env.c.TerminateWorkflow(ctx, workflows.DefaultPolicyStore, "", "test start")

	// 1. policy apply reaches a default turn; the --no-live-policy one waits.
	applied := write("apply.yaml", "touch by-default")
	id, off := "default-live-"+tag(), "default-off-"+tag()
	if out, err := starter("run", "--script", applied, "--workflow-id", id, "--detach"); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if out, err := starter("run", "--script", applied, "--workflow-id", off, "--no-live-policy", "--detach"); err != nil {
		t.Fatalf("run --no-live-policy: %v\n%s", err, out)
	}
	waitPending(t, cl, id, 1)
	offP := waitPending(t, cl, off, 1)[0]
	rules := filepath.Join(dir, "live.yaml")
	if err := os.WriteFile(rules, []byte("allow: [\"Bash(touch by-default:*)\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := starter("policy", "apply", rules); err != nil {
		t.Fatalf("policy apply: %v\n%s", err, out)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if ps, err := cl.Pending(ctx, off); err != nil || len(ps) != 1 {
		t.Errorf("control: the --no-live-policy turn should still wait: %v %+v", err, ps)
	}
	// A scoped remember on the turn that follows no store fails loudly.
	out, err := starter("approvals", "approve", off, offP.CallID, "--hash", offP.Hash, "--by", "ops", "--always", "--scope", "namespace")
	if err == nil || strings.Contains(out, ": always_allow") || strings.Count(err.Error(), "follows no policy store") != 1 || strings.Contains(err.Error(), "wrapError") {
		t.Errorf("control: a scoped remember on a turn with no store: %v\n%s", err, out)
	}
	_ = env.c.TerminateWorkflow(ctx, off, "", "test over")

	// 2. The store is gone (terminated), and a scoped remember from the
	// CLI still reaches it: the answer makes it again.
	remembered := write("remember.yaml", "touch remembered-one")
	id2 := "default-remember-" + tag()
	if out, err := starter("run", "--script", remembered, "--workflow-id", id2, "--detach"); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	p := waitPending(t, cl, id2, 1)[0]
	if err := env.c.TerminateWorkflow(ctx, workflows.DefaultPolicyStore, "", "store lost"); err != nil {
		t.Fatal(err)
	}
	out, err = starter("approvals", "approve", id2, p.CallID, "--hash", p.Hash, "--by", "ops", "--always", "--scope", "namespace", "--rule", "Bash(touch remembered-one:*)", "--ttl", "1h")
	if err != nil {
		t.Fatalf("scoped remember with the store gone: %v\n%s", err, out)
	}
	if _, err := cl.Result(ctx, id2); err != nil {
		t.Fatal(err)
	}
	st, err := cl.PolicyState(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range st.Remembered {
		found = found || r.Rule == "Bash(touch remembered-one:*)"
	}
	if !found {
		t.Fatalf("the remembered approval is not in the store: %+v", st.Remembered)
	}
	// The next default turn's call is allowed by it, without asking.
	id3 := "default-next-" + tag()
	if out, err := starter("run", "--script", remembered, "--workflow-id", id3); err != nil || !strings.Contains(out, "final answer") {
		t.Fatalf("a default turn after the remember: %v\n%s", err, out)
	}
	if out, err := starter("audit", "--workflow", id3); err != nil || !strings.Contains(out, "ran") {
		t.Errorf("audit of the remembered turn: %v\n%s", err, out)
	}
}

// TestAuditTellsLivePolicyStory: `starter audit` of a CLI-started turn
// that follows a store tells what live policy decided (released by
// policy v1, denied by policy v1, still waiting under v1), the input an
// approver edited, the scope and TTL of a remembered approval and the
// reasons, with times in their zone; what-if says a call was released
// or denied by live policy, not "waiting". Control: a call answered by a
// person reads as such, with no policy version.
func TestAuditTellsLivePolicyStory(t *testing.T) {
	workdir := t.TempDir()
	queue := "tq-" + t.Name()
	cl := startWorkerOn(t, queue, warden.Options{Workdir: workdir, Client: env.c})
	store := "policy-story-" + tag()
	ctx := ctxT(t, 3*time.Minute)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scriptFile := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scriptFile, []byte(`steps:
  - tool_calls:
      - {id: a, name: Bash, input: {command: "touch story-a"}}
      - {id: b, name: Bash, input: {command: "curl http://example.com"}}
      - {id: c, name: Bash, input: {command: "touch story-c"}}
      - {id: d, name: Bash, input: {command: "touch story-d"}}
  - text: done
`), 0o644); err != nil {
		t.Fatal(err)
	}
	sbin := buildStarter(t)
	common := []string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default", "--task-queue", queue}
	starter := func(args ...string) string {
		t.Helper()
		out, err := runStarter(t, sbin, dir, append(slices.Clone(common), args...)...)
		if err != nil {
			t.Fatalf("starter %v: %v\n%s", args, err, out)
		}
		return out
	}
	id := "story-" + tag()
	starter("run", "--script", scriptFile, "--workflow-id", id, "--live-policy", store, "--detach")
	waitPending(t, cl, id, 4)
	// approvals list fits 120 columns and says when each wait ends.
	list := starter("approvals", "list", "--workflow", id)
	for _, l := range strings.Split(strings.TrimSpace(list), "\n") {
		if n := utf8.RuneCountInString(l); n > 120 {
			t.Errorf("approvals list line of %d columns: %s", n, l)
		}
	}
	if !strings.Contains(list, "DEADLINE") || len(regexp.MustCompile(`in (7d0h|6d23h) \(\d\d-\d\d \d\d:\d\d \S+\)`).FindAllString(list, -1)) != 4 {
		t.Errorf("approvals list without the deadlines:\n%s", list)
	}
	rules := filepath.Join(dir, "live.yaml")
	if err := os.WriteFile(rules, []byte("allow: [\"Bash(touch story-a:*)\"]\ndeny: [\"Bash(curl:*)\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	starter("policy", "--store", store, "apply", rules)
	if show := starter("policy", "--store", store, "show"); !strings.Contains(show, "version 1") ||
		!strings.Contains(show, "  allow:\n    - \"Bash(touch story-a:*)\"") || strings.Contains(show, "{") {
		t.Errorf("policy show is not readable:\n%s", show)
	}
	ps := waitPending(t, cl, id, 2)
	byID := map[string]workflows.Pending{}
	for _, p := range ps {
		byID[p.CallID] = p
	}
	c, d := byID["c"], byID["d"]
	starter("approvals", "approve", id, "c", "--hash", c.Hash, "--by", "alice", "--input", `{"command":"touch story-c-edited"}`, "--reason", "CHG-7: renamed")
	ps = waitPending(t, cl, id, 1)
	if ps[0].CallID != "d" {
		t.Fatalf("still waiting: %+v", ps)
	}
	d = ps[0]
	starter("approvals", "approve", id, "d", "--hash", d.Hash, "--by", "bob", "--always", "--scope", "namespace",
		"--rule", "Bash(touch story-d:*)", "--ttl", "1h", "--once", "--reason", "CHG-8")
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	out := starter("audit", "--workflow", id)
	zone := time.Now().Format("MST")
	for _, want := range []string{
		"released by policy v1 (was v0)", "denied by policy v1 (was v0)", "still waiting under policy v1 (was v0)",
		`edited input {"command":"touch story-c-edited"}`, "CHG-7: renamed",
		"remembered, namespace scope, for 1h0m0s, once", "CHG-8", " " + zone + " ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("audit lacks %q:\n%s", want, out)
		}
	}
	// Control: the person's answers carry no policy version.
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, " approval ") && strings.Contains(line, "policy v") {
			t.Errorf("an approval line names a policy version: %s", line)
		}
	}
	// what-if under a policy that allows both: a was released, b denied, by live policy.
	wif := filepath.Join(dir, "wif.yaml")
	if err := os.WriteFile(wif, []byte("allow: [\"Bash(touch:*)\", \"Bash(curl:*)\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = starter("policy", "what-if", "--rules", wif, "--workflow", id, "--workdir", workdir)
	for _, want := range []string{"released by policy v1 (live policy)", "denied by policy v1 (live policy)"} {
		if !strings.Contains(out, want) {
			t.Errorf("what-if lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "waiting (or the turn ended first)") {
		t.Errorf("what-if calls a decided call waiting:\n%s", out)
	}
	t.Logf("audit:\n%s", starter("audit", "--workflow", id))
}
