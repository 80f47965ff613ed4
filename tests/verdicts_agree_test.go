package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// agreeCase is one policy of the differential corpus: the turn's policy
// and the remembered approvals its policy store holds.
type agreeCase struct {
	name       string
	policy     permission.Policy
	remembered []workflows.Remembered
}

// agreeCall is one call of the corpus; read is a file the turn reads
// first (an Edit needs it).
type agreeCall struct{ tool, input, read string }

// agreeCalls are the calls every policy of the corpus decides.
func agreeCalls() []agreeCall {
	return []agreeCall{
		{"Bash", `{"command":"kubectl delete pod web-1"}`, ""},
		{"Bash", `{"command":"kubectl get pods"}`, ""},
		{"Bash", `{"command":"rm -rf build"}`, ""},
		{"Bash", `{"command":"npm test"}`, ""},
		{"Bash", `{"command":"make build"}`, ""},
		{"Bash", `{"command":"go vet ./..."}`, ""},
		{"Bash", `{"command":"cargo build"}`, ""},
		{"Bash", `{"command":"touch once"}`, ""},
		{"Bash", `{"command":"echo hi > out.txt"}`, ""},
		{"Bash", `{"command":"git status"}`, ""},
		{"Write", `{"file_path":"{{WS}}/notes.txt","content":"x"}`, ""},
		{"Edit", `{"file_path":"{{WS}}/src.txt","old_string":"a","new_string":"b"}`, "{{WS}}/src.txt"},
		{"Bash", `{"command":"cat .env"}`, ""},
		{"Read", `{"file_path":"/etc/hosts"}`, ""},
		// notes/key is a link to a file outside the workspace: decided
		// as its target by each decider.
		{"Write", `{"file_path":"{{WS}}/notes/key","content":"x"}`, ""},
		{"Bash", `{"command":"cat notes/key"}`, ""},
	}
}

// agreeCorpus: every layer of the decision — the engine's in every mode,
// the sandbox auto-allow, remembered approvals of each scope (input,
// agent, namespace, one expired, one single-use) and quorum rules, alone
// and over an allow rule, a mode and a remembered approval.
func agreeCorpus() []agreeCase {
	past := time.Now().Add(-time.Hour)
	rem := []workflows.Remembered{
		{Scope: workflows.ScopeNamespace, Tool: "Bash", Rule: "Bash(npm test:*)", By: "carol", FromWorkflow: "seed", CallID: "1"},
		{Scope: workflows.ScopeInput, Tool: "Bash", Input: json.RawMessage(`{"command": "make build"}`), By: "carol", FromWorkflow: "seed", CallID: "2"},
		{Scope: workflows.ScopeAgent, Agent: "builder", Tool: "Bash", Rule: "Bash(go vet:*)", By: "dave", FromWorkflow: "seed", CallID: "3"},
		{Scope: workflows.ScopeNamespace, Tool: "Bash", Rule: "Bash(cargo build:*)", By: "dave", FromWorkflow: "seed", CallID: "4", ExpiresAt: past},
		{Scope: workflows.ScopeNamespace, Tool: "Bash", Rule: "Bash(touch once:*)", By: "erin", FromWorkflow: "seed", CallID: "5", SingleUse: true},
	}
	kubectl := []permission.QuorumRule{{Rule: "Bash(kubectl delete:*)", Approvals: 2}}
	return []agreeCase{
		{name: "allow+quorum", policy: permission.Policy{Allow: []string{"Bash(kubectl:*)"}, Quorum: kubectl}},
		{name: "default", policy: permission.Policy{Deny: []string{"Bash(rm:*)"}}},
		{name: "accept_edits", policy: permission.Policy{Mode: permission.ModeAcceptEdits}},
		{name: "bypass+quorum", policy: permission.Policy{Mode: permission.ModeBypass,
			Quorum: []permission.QuorumRule{{Rule: "Bash(rm:*)", Approvals: 2, RequireReason: true}, {Rule: "Bash(touch:*)", Approvals: 1}}}},
		{name: "dont_ask", policy: permission.Policy{Mode: permission.ModeDontAsk, Allow: []string{"Bash(git status)", "Bash(kubectl:*)"}, Quorum: kubectl}},
		{name: "auto_allow", policy: permission.Policy{Sandbox: &permission.Sandbox{AutoAllow: true}, Quorum: kubectl}},
		{name: "remembered", policy: permission.Policy{}, remembered: rem},
		{name: "remembered+quorum", policy: permission.Policy{Quorum: []permission.QuorumRule{{Rule: "Bash(npm test:*)", Approvals: 2}}}, remembered: rem},
		// Patterns relative to the workspace: the role check once resolved
		// them against a root of its own and covered none of the turn's
		// files the worker allowed.
		{name: "relative", policy: permission.Policy{Allow: []string{"Edit(src.txt)", "Write(notes.txt)", "Bash(git status)"}}},
	}
}

// TestVerdictsAgree is the differential test of "one verdict": each call
// of the corpus is decided (a) by the worker on the real server (the
// verdict its history records, under the policy and the policy store
// the turn follows), (b) by the decision "starter permission check"
// makes (decide.Check, with the store's remembered approvals as
// --live-policy reads them) and (c) by what-if over the recorded turn
// under the same policy (audit.Redecide) and (d) by the approvers' role
// check (roles.CoverLinks, a role holding the policy's allow rules, in
// the workspace the worker's waiting entry names, through the links its
// verdict recorded); (a), (b) and (c) agree on
// the behaviour, and (a) and (b) on the layer, the rule, the remembered
// approval and the quorum rule; (d) covers every call the worker allowed
// by an allow rule, and covers no call the worker decided by a layer the
// allow rules do not reach (the mode, a remembered approval, the
// sandbox). The allow-rule plus quorum case is the
// one the worker and the check once answered differently (ask by quorum;
// allow by the allow rule).
func TestVerdictsAgree(t *testing.T) {
	workdir := t.TempDir()
	writeFile(t, filepath.Join(workdir, "src.txt"), "a\n", 0o644)
	keys := filepath.Join(t.TempDir(), "authorized_keys")
	writeFile(t, keys, "ssh-ed25519 AAAA owner\n", 0o600)
	writeFile(t, filepath.Join(workdir, "notes", "readme"), "notes\n", 0o644)
	if err := os.Symlink(keys, filepath.Join(workdir, "notes", "key")); err != nil {
		t.Fatal(err)
	}
	queue := "tq-" + t.Name()
	cl := startWorkerOn(t, queue, warden.Options{Workdir: workdir, Client: env.c})
	ctx := ctxT(t, 8*time.Minute)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	layers := map[string]int{}
	for _, cs := range agreeCorpus() {
		store := "policy-agree-" + cs.name + "-" + tag()
		if _, err := cl.StartPolicyStore(ctx, store); err != nil {
			t.Fatal(err)
		}
		for _, r := range cs.remembered {
			if err := env.c.SignalWorkflow(ctx, store, "", workflows.SignalRemember, r); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, ctx, func() bool {
			st, err := cl.PolicyState(ctx, store)
			return err == nil && len(st.Remembered) == len(cs.remembered)
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One store's calls one after another: a single-use approval
			// is spent by the first call it allows.
			for i, c := range agreeCalls() {
				layer, ok := agreeOne(t, ctx, cl, cs, store, workdir, i, c)
				mu.Lock()
				if ok {
					total++
					layers[layer]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d policies x %d calls: %d verdicts agreed (worker, permission check, what-if, role check); by layer %v", len(agreeCorpus()), len(agreeCalls()), total, layers)
	for _, l := range []permission.Layer{permission.LayerDenyRule, permission.LayerSafety, permission.LayerReadOnly, permission.LayerAllowRule,
		permission.LayerMode, permission.LayerSandbox, permission.LayerRemembered, permission.LayerQuorum} {
		if layers[string(l)] == 0 {
			t.Errorf("no verdict of the corpus was decided by layer %s", l)
		}
	}
	if total != len(agreeCorpus())*len(agreeCalls()) {
		t.Errorf("%d of %d verdicts compared", total, len(agreeCorpus())*len(agreeCalls()))
	}
}

// agreeOne decides one call of the corpus by the four deciders and
// reports the layer that decided and whether they agreed.
func agreeOne(t *testing.T, ctx context.Context, cl *client.Client, cs agreeCase, store, workdir string, i int, c agreeCall) (string, bool) {
	t.Helper()
	tool, input := c.tool, strings.ReplaceAll(c.input, "{{WS}}", workdir)
	what := fmt.Sprintf("%s: %s %s", cs.name, tool, input)
	pc, err := cs.policy.Context()
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("agree-%s-%d-%s", cs.name, i, tag())
	steps := fmt.Sprintf("steps:\n  - tool_calls: [{id: x, name: %s, input: %s}]\n  - text: done\n", tool, input)
	var state *tools.State
	if c.read != "" {
		// Read first, in a step of its own, as the model would; the
		// check gets the tool state the Edit finds.
		f := strings.ReplaceAll(c.read, "{{WS}}", workdir)
		steps = fmt.Sprintf("steps:\n  - tool_calls: [{id: r, name: Read, input: {file_path: %q}}]\n", f) + strings.TrimPrefix(steps, "steps:\n")
		st := tools.State{}.Anticipate("Read", json.RawMessage(fmt.Sprintf(`{"file_path":%q}`, f)))
		state = &st
	}
	in := workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, steps)},
		Permission: pc, LivePolicy: store, Agent: "builder"}
	if _, err := cl.Start(ctx, id, in); err != nil {
		t.Fatal(err)
	}
	wd := workdir // the workspace the worker's entry names, when the call waits
	for done := false; !done; {
		st, err := cl.State(ctx, id)
		switch {
		case err == nil && len(st.Pending) > 0:
			if wd = st.Pending[0].Workdir; wd != workdir {
				t.Errorf("%s: the waiting entry names workspace %q, the turn's is %q", what, wd, workdir)
			}
			if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "x", Decision: workflows.DecisionDeny, Reason: "differential test", Hash: st.Pending[0].Hash}); err != nil {
				t.Fatalf("%s: deny: %v", what, err)
			}
			done = true
		case err == nil && st.Done:
			done = true
		case ctx.Err() != nil:
			t.Fatalf("%s: %v", what, ctx.Err())
		default:
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	// (a) the worker's verdict, as its history records it.
	runs, err := audit.Chain(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := audit.ExtractCalls(id, runs)
	if err != nil {
		t.Fatal(err)
	}
	var w *audit.Decided
	for k := range ds {
		if ds[k].Verdict.CallID == "x" && ds[k].Verdict.Kind == audit.KindPermission {
			w = &ds[k]
			break
		}
	}
	if w == nil {
		t.Errorf("%s: no verdict recorded", what)
		return "", false
	}
	// (b) the check, with the store as --live-policy reads it.
	st, err := cl.PolicyState(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	chk, err := decide.Check(ctx, decide.CheckRequest{Tool: tool, Input: json.RawMessage(input)}, decide.CheckOptions{
		Base: pc, Workdirs: []string{workdir}, Unsandboxed: !w.Sandboxed, State: state,
		Remembered: st.Remembered, Turn: decide.Turn{WorkflowID: id, Agent: "builder", CallID: "x"}, Now: time.Now()})
	if err != nil {
		t.Fatalf("%s: check: %v", what, err)
	}
	ok := true
	if chk.Behavior != w.Verdict.Decision || chk.Layer != w.Verdict.Layer || chk.Remembered != w.Verdict.Remembered {
		t.Errorf("%s: the worker decided %s by %s (remembered %q: %s); permission check %s by %s (remembered %q: %s)", what,
			w.Verdict.Decision, w.Verdict.Layer, w.Verdict.Remembered, w.Verdict.Reason, chk.Behavior, chk.Layer, chk.Remembered, chk.Reason)
		ok = false
	}
	for _, r := range []string{chk.Rule, chk.QuorumRule} {
		if r != "" && !strings.Contains(w.Verdict.Reason, r) {
			t.Errorf("%s: permission check names rule %s, the worker's verdict does not: %s", what, r, w.Verdict.Reason)
			ok = false
		}
	}
	// (c) what-if over the recorded turn, under the same policy.
	wi, err := audit.Redecide(ctx, []audit.Decided{*w}, audit.WhatIfOptions{Policy: cs.policy, Workdir: workdir})
	if err != nil {
		t.Fatal(err)
	}
	if len(wi.Changes) != 0 || wi.Unchanged[w.Verdict.Decision] != 1 {
		t.Errorf("%s: what-if re-decides the recorded %s (%s) otherwise: %+v", what, w.Verdict.Decision, w.Verdict.Reason, wi.Changes)
		ok = false
	}
	// (d) the role check of an approver whose role holds the policy's
	// allow rules.
	var role []permission.Rule
	for _, a := range cs.policy.Allow {
		r, err := permission.ParseRule(a, permission.Allow)
		if err != nil {
			t.Fatal(err)
		}
		role = append(role, r)
	}
	covers := roles.CoverLinks(role, tool, json.RawMessage(input), wd, w.Links)
	switch permission.Layer(w.Verdict.Layer) {
	case permission.LayerAllowRule:
		if !covers {
			t.Errorf("%s: the worker allowed it by an allow rule (%s); the role check of those rules does not cover it", what, w.Verdict.Reason)
			ok = false
		}
	case permission.LayerMode, permission.LayerRemembered, permission.LayerSandbox:
		if covers {
			t.Errorf("%s: the worker decided it by layer %s (%s), which no allow rule reached; the role check of the allow rules covers it", what, w.Verdict.Layer, w.Verdict.Reason)
			ok = false
		}
	}
	return w.Verdict.Layer, ok
}
