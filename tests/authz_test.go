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
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// These tests cover answers bound to the exact call (the hash), the
// authorization the workflow itself applies to every answer (approvers
// and roles recorded with the turn), and an edited input decided as a
// new call. They run on the real embedded server with real processes.

// k8sApprovers: alice may answer everything, kube only kubectl commands.
func k8sApprovers() *workflows.Approvers {
	return &workflows.Approvers{
		Users: map[string][]string{"alice": nil, "kube": {"k8s"}},
		Roles: map[string][]string{"k8s": {"Bash(kubectl:*)"}},
	}
}

// rejectedEvent waits until the turn records a rejection of callID whose
// text contains want.
func rejectedEvent(t *testing.T, cl *client.Client, id, callID, want string) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	waitFor(t, ctx, func() bool {
		page, err := cl.Events(ctx, id, 0)
		if err != nil {
			return false
		}
		return slices.ContainsFunc(page.Events, func(e workflows.Event) bool {
			return e.Type == workflows.EventRejected && e.CallID == callID && strings.Contains(e.Text, want)
		})
	})
}

// TestAnswerWithoutHashRejected: an answer must carry the listed hash,
// over Update (the validator refuses it, saying to list again) and over
// a signal (refused in the handler and recorded as an event).
func TestAnswerWithoutHashRejected(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch made\"}}]\n  - text: done\n")
	id := "nohash-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]
	_, err := cl.Approve(ctx, id, workflows.Approval{CallID: "c1", Decision: workflows.DecisionAllow, By: "alice"})
	if !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "list the pending calls again") {
		t.Fatalf("answer without hash: %v, want a rejection saying to list again", err)
	}
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "c1", Decision: workflows.DecisionAllow, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	rejectedEvent(t, cl, id, "c1", "carries no hash")
	if ps := waitPending(t, cl, id, 1); ps[0].CallID != "c1" {
		t.Fatalf("pending = %+v", ps)
	}
	if _, err := os.Stat(filepath.Join(workdir, "made")); err == nil {
		t.Fatal("the call ran on an answer without a hash")
	}
	// The hash as listed is accepted.
	if _, err := cl.ApproveListed(ctx, id, p, workflows.Approval{Decision: workflows.DecisionAllow, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "made")); err != nil {
		t.Fatalf("approved call did not run: %v", err)
	}
}

// TestStaleHashAfterAlwaysAllowRejected: an always-allow changes the
// policy; every waiting call gets a new hash, and an answer with the hash
// listed before is refused.
func TestStaleHashAfterAlwaysAllowRejected(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, `
steps:
  - tool_calls:
      - {id: a, name: Bash, input: {command: "touch one"}}
      - {id: c, name: Bash, input: {command: "curl http://example.com"}}
  - text: done
`)
	id := "stale-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 2)
	old := ps[1]
	if old.CallID != "c" || ps[0].Hash == old.Hash {
		t.Fatalf("pending = %+v (each call has its own hash)", ps)
	}
	if _, err := cl.ApproveListed(ctx, id, ps[0], workflows.Approval{Decision: workflows.DecisionAlwaysAllow, Rules: []string{"Bash(touch:*)"}}); err != nil {
		t.Fatal(err)
	}
	now := waitPending(t, cl, id, 1)[0]
	if now.CallID != "c" || now.Hash == old.Hash {
		t.Fatalf("after always-allow: %+v, want c with a new hash (was %s)", now, old.Hash)
	}
	_, err := cl.ApproveListed(ctx, id, old, workflows.Approval{Decision: workflows.DecisionDeny, Reason: "stale"})
	if !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "stale hash") || !strings.Contains(err.Error(), "list the pending calls again") {
		t.Fatalf("answer with the hash listed before the always-allow: %v, want a stale-hash rejection", err)
	}
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "c", Hash: old.Hash, Decision: workflows.DecisionDeny, Reason: "stale"}); err != nil {
		t.Fatal(err)
	}
	rejectedEvent(t, cl, id, "c", "stale hash")
	if _, err := cl.ApproveListed(ctx, id, now, workflows.Approval{Decision: workflows.DecisionDeny, Reason: "fresh"}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != 2 || !strings.Contains(rs[1].Content, "fresh") {
		t.Fatalf("results = %+v, want c denied with the fresh answer", rs)
	}
}

// TestApproverWithoutRoleRefused: the turn records its approvers (here
// through the client library's Approvers, as `starter run` does from the
// config); a user whose roles do not cover the call is refused over
// every path: Update, signal, the starter binary (even with a config
// that has no inbox users, so no client-side check) and the library. A
// stranger is refused too; an unrestricted approver is accepted.
func TestApproverWithoutRoleRefused(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	cl.Approvers = k8sApprovers()
	ctx := ctxT(t, 120*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch deployed\"}}]\n  - text: done\n")
	id := "authz-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]

	// Update, through the library.
	for _, by := range []string{"kube", "mallory", ""} {
		_, err := cl.ApproveListed(ctx, id, p, workflows.Approval{Decision: workflows.DecisionAllow, By: by})
		if !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "approver refused") {
			t.Errorf("Update by %q: %v, want refused", by, err)
		}
	}
	// A deny needs the role too.
	if _, err := cl.ApproveListed(ctx, id, p, workflows.Approval{Decision: workflows.DecisionDeny, Reason: "x", By: "kube"}); !errors.Is(err, client.ErrRejected) {
		t.Errorf("deny by kube: %v, want refused", err)
	}
	// Signal: refused in the handler, recorded as an event.
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "c1", Hash: p.Hash, Decision: workflows.DecisionAllow, By: "kube"}); err != nil {
		t.Fatal(err)
	}
	rejectedEvent(t, cl, id, "c1", "kube's roles do not cover")

	// The starter binary, with a config that names no approvers.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default"}
	sbin := buildStarter(t)
	out, err := runStarter(t, sbin, dir, append(common, "approvals", "approve", id, "c1", "--by", "kube")...)
	if err == nil || !strings.Contains(err.Error(), "approver refused") {
		t.Errorf("starter approvals approve --by kube: %v\n%s", err, out)
	}
	out, err = runStarter(t, sbin, dir, append(common, "approvals", "approve", id, "c1", "--by", "kube", "--signal")...)
	if err != nil {
		t.Fatalf("signal: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(workdir, "deployed")); err == nil {
		t.Fatal("the call ran on an answer by an approver without the role")
	}
	if ps := waitPending(t, cl, id, 1); ps[0].CallID != "c1" {
		t.Fatalf("pending = %+v", ps)
	}
	// The unrestricted approver, through the starter binary.
	if out, err := runStarter(t, sbin, dir, append(common, "approvals", "approve", id, "c1", "--by", "alice", "--hash", p.Hash)...); err != nil {
		t.Fatalf("approve by alice: %v\n%s", err, out)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "deployed")); err != nil {
		t.Fatalf("approved call did not run: %v", err)
	}
	page, err := cl.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(page.Events, func(e workflows.Event) bool {
		return e.Type == workflows.EventAnswered && e.CallID == "c1" && strings.Contains(e.Text, "by alice")
	}) {
		t.Errorf("no answer by alice recorded: %+v", page.Events)
	}
}

// TestRuleWiderThanRoleRefused: an approver may add an always-allow rule
// no wider than their roles (Bash(kubectl:*) does not allow adding Bash),
// and may not edit a call into one their roles do not cover.
func TestRuleWiderThanRoleRefused(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: k1, name: Bash, input: {command: \"kubectl delete pod web-1\"}}]\n  - text: done\n")
	id := "rule-wide-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Approvers: k8sApprovers()}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]
	for _, rule := range []string{"Bash", "Bash(*)", "Bash(rm:*)"} {
		_, err := cl.ApproveListed(ctx, id, p, workflows.Approval{Decision: workflows.DecisionAlwaysAllow, Rules: []string{rule}, By: "kube"})
		if !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "wider than") {
			t.Errorf("always-allow %s by kube: %v, want refused as wider than the role", rule, err)
		}
	}
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "k1", Hash: p.Hash, Decision: workflows.DecisionAlwaysAllow, Rules: []string{"Bash"}, By: "kube"}); err != nil {
		t.Fatal(err)
	}
	rejectedEvent(t, cl, id, "k1", "wider than")
	// An edit the role does not cover is refused as well.
	_, err := cl.ApproveListed(ctx, id, p, workflows.Approval{Decision: workflows.DecisionAllow, Input: []byte(`{"command":"rm -rf /tmp/x"}`), By: "kube"})
	if !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "edited") {
		t.Errorf("edit outside the role: %v, want refused", err)
	}
	st, err := cl.State(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(st.Permission.Allow, func(r permission.Rule) bool { return r.Tool == "Bash" && r.Content == "" }) {
		t.Fatalf("a rule wider than the role was added: %+v", st.Permission.Allow)
	}
	// A rule within the role is accepted.
	if _, err := cl.ApproveListed(ctx, id, p, workflows.Approval{Decision: workflows.DecisionAlwaysAllow, Rules: []string{"Bash(kubectl delete:*)"}, By: "kube"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// TestEditedInputTurnedSideEffectingRunsOnce: a read-only call that asks
// (here a read outside the workspace) would run on the fast path with
// retries. An approver edits it into a side-effecting command; the edit
// is a new call, decided again, so it runs as a regular activity at most
// once, even though it outlasts the fast path's time bound (which
// retries and then reschedules a read-only call).
func TestEditedInputTurnedSideEffectingRunsOnce(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir,
		ToolSettings: map[string]config.ToolSettings{"Bash": {FastPathTimeout: time.Second}}})
	ctx := ctxT(t, 120*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: e1, name: Bash, input: {command: \"ls /etc\"}}]\n  - text: done\n")
	id := "edit-once-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]
	edited := []byte(`{"command":"echo ran >> runs.txt && sleep 3"}`)
	if _, err := cl.ApproveListed(ctx, id, p, workflows.Approval{Decision: workflows.DecisionAllow, Input: edited, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(workdir, "runs.txt"))
	if err != nil {
		t.Fatalf("edited call did not run: %v (results %+v)", err, toolResults(res))
	}
	if n := strings.Count(string(b), "ran"); n != 1 {
		t.Fatalf("the edited side-effecting call ran %d times, want at most once", n)
	}
	page, err := cl.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(page.Events, func(e workflows.Event) bool {
		return e.Type == workflows.EventDecision && e.CallID == "e1" && strings.Contains(e.Text, "edited input decided as a new call")
	}) {
		t.Errorf("no decision event for the edited call: %+v", page.Events)
	}
}

// TestEditedInputDeniedIsRefused: an edit the policy denies is refused;
// nothing runs.
func TestEditedInputDeniedIsRefused(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: d1, name: Bash, input: {command: \"touch a\"}}]\n  - text: done\n")
	id := "edit-deny-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: policy(t, permission.Policy{Deny: []string{"Bash(rm:*)"}})}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]
	if _, err := cl.ApproveListed(ctx, id, p, workflows.Approval{Decision: workflows.DecisionAllow, Input: []byte(`{"command":"rm -f a"}`)}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Content, "Permission denied") {
		t.Fatalf("results = %+v, want the denied edit refused", rs)
	}
}

// TestAskUserAnswerBoundAndAuthorized: an AskUser answer (an external
// result) must carry the listed hash, and its sender must be an approver
// whose roles cover the call, over Update and signal.
func TestAskUserAnswerBoundAndAuthorized(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, `
steps:
  - tool_calls:
      - id: q1
        name: AskUser
        input:
          questions:
            - question: "Which environment?"
              header: "Env"
              options: [{label: staging, description: "safe"}, {label: prod, description: "careful"}]
  - text: answered
`)
	id := "ask-authz-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Approvers: k8sApprovers()}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]
	answer := tools.AskUserAnswer{Answers: []tools.AskUserQuestionAnswer{{Question: "Which environment?", Selected: []string{"staging"}}}}
	r, err := client.AskUserResult("q1", answer, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CompleteExternal(ctx, id, r); !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "carries no hash") {
		t.Errorf("result without hash: %v, want refused", err)
	}
	if _, err := cl.AnswerAskUser(ctx, id, "q1", answer, "kube"); !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "kube's roles do not cover") {
		t.Errorf("answer by kube: %v, want refused", err)
	}
	r.By, r.Hash = "kube", p.Hash
	if err := env.c.SignalWorkflow(ctx, id, "", workflows.SignalExternalResult, r); err != nil {
		t.Fatal(err)
	}
	rejectedEvent(t, cl, id, "q1", "kube's roles do not cover")
	if _, err := cl.AnswerAskUser(ctx, id, "q1", answer, "alice"); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rs := toolResults(res); len(rs) != 1 || !strings.Contains(rs[0].Content, "staging") {
		t.Fatalf("results = %+v", rs)
	}
}
