package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// whatIfP0 is the policy the scripted turns of TestWhatIfReportsChangedVerdicts
// run under; whatIfP1 the proposal (with examples).
const (
	whatIfP0 = "allow: [\"Bash(echo:*)\", \"Bash(go version)\"]\ndeny: [\"Bash(rm -rf:*)\"]\n"
	whatIfP1 = `allow:
  - {rule: "Bash(echo:*)", match: ["echo hi"], not_match: ["echoes"]}
  - {rule: "Bash(touch:*)", match: ["touch a.txt"], not_match: ["toucher"]}
  - Bash(curl:*)
ask: ["Bash(git status)"]
deny:
  - Bash(rm -rf:*)
  - {rule: "Bash(ls:*)", match: ["ls", "ls -la"], not_match: ["lsof"]}
`
)

// TestWhatIfReportsChangedVerdicts scripts two turns on the embedded
// server — calls allowed by a rule and as read-only, denied by a rule,
// asked and allowed, asked and denied, asked and always-allowed (whose
// rule then allows a later call), and asked and edited — and runs
// `starter policy what-if` over them: under the policy they ran with
// nothing changes; under a proposal exactly the changed verdicts are
// reported, counted per change, rule and tool, and the call a human
// denied that the proposal would allow is marked.
func TestWhatIfReportsChangedVerdicts(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 120*time.Second)
	prefix := "whatif-" + tag() + "-"
	p0 := policy(t, permission.Policy{Allow: []string{"Bash(echo:*)", "Bash(go version)"}, Deny: []string{"Bash(rm -rf:*)"}})

	a := prefix + "a"
	sa := script(t, `
steps:
  - tool_calls:
      - {id: echo, name: Bash, input: {command: "echo hi"}}
      - {id: ls, name: Bash, input: {command: "ls"}}
      - {id: rm, name: Bash, input: {command: "rm -rf build"}}
      - {id: touch, name: Bash, input: {command: "touch a.txt"}}
      - {id: curl, name: Bash, input: {command: "curl http://example.invalid"}}
      - {id: gs, name: Bash, input: {command: "git status"}}
      - {id: npm, name: Bash, input: {command: "npm test"}}
  - tool_calls:
      - {id: npm2, name: Bash, input: {command: "npm test -- -v"}}
  - text: done
`)
	if _, err := cl.Start(ctx, a, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: sa}, Permission: p0}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, a, 3)
	hash := func(ps []workflows.Pending, call string) string {
		i := slices.IndexFunc(ps, func(p workflows.Pending) bool { return p.CallID == call })
		if i < 0 {
			t.Fatalf("%s is not pending: %+v", call, ps)
		}
		return ps[i].Hash
	}
	if _, err := cl.Approve(ctx, a, workflows.Approval{CallID: "touch", Decision: workflows.DecisionAllow, By: "alice", Hash: hash(ps, "touch")}); err != nil {
		t.Fatal(err)
	}
	ps = waitPending(t, cl, a, 2)
	if _, err := cl.Approve(ctx, a, workflows.Approval{CallID: "curl", Decision: workflows.DecisionDeny, By: "bob", Reason: "no network", Hash: hash(ps, "curl")}); err != nil {
		t.Fatal(err)
	}
	ps = waitPending(t, cl, a, 1)
	if _, err := cl.Approve(ctx, a, workflows.Approval{CallID: "npm", Decision: workflows.DecisionAlwaysAllow, Rules: []string{"Bash(npm test:*)"},
		By: "carol", Hash: hash(ps, "npm")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, a); err != nil {
		t.Fatal(err)
	}

	b := prefix + "b"
	sb := script(t, "steps:\n  - tool_calls: [{id: e, name: Bash, input: {command: \"touch b.txt\"}}]\n  - text: done\n")
	if _, err := cl.Start(ctx, b, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: sb}, Permission: p0}); err != nil {
		t.Fatal(err)
	}
	ps = waitPending(t, cl, b, 1)
	if _, err := cl.Approve(ctx, b, workflows.Approval{CallID: "e", Decision: workflows.DecisionAllow, By: "dave",
		Input: json.RawMessage(`{"command":"touch c.txt"}`), Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, b); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	for name, body := range map[string]string{"config.yaml": "{}\n", "p0.yaml": whatIfP0, "p1.yaml": whatIfP1} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	whatIf := func(rules string, extra ...string) audit.WhatIf {
		t.Helper()
		args := append([]string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default",
			"policy", "what-if", "--rules", filepath.Join(dir, rules), "--workflow", prefix, "--json"}, extra...)
		out, err := runStarter(t, buildStarter(t), dir, args...)
		if err != nil {
			t.Fatal(err)
		}
		var w audit.WhatIf
		if err := json.Unmarshal([]byte(out), &w); err != nil {
			t.Fatalf("not a report: %v\n%s", err, out)
		}
		return w
	}

	// Under the policy the turns ran with, nothing changes.
	w := whatIf("p0.yaml")
	if w.Turns != 2 || w.Calls != 10 || len(w.Changes) != 0 || w.Unchanged["allow"] != 4 || w.Unchanged["deny"] != 1 || w.Unchanged["ask"] != 5 {
		t.Fatalf("under the turns' own policy: %d turns, %d calls, unchanged %v, changes %+v", w.Turns, w.Calls, w.Unchanged, w.Changes)
	}

	// Under the proposal, exactly these change.
	w = whatIf("p1.yaml", "--since", "1h")
	type key struct{ wf, call, kind string }
	got := map[key]audit.Change{}
	for _, c := range w.Changes {
		got[key{c.WorkflowID, c.CallID, c.Kind}] = c
	}
	want := map[key]struct{ change, rule, human string }{
		{a, "touch", audit.KindPermission}: {"ask→allow", "Bash(touch:*)", "allowed by alice"},
		{a, "curl", audit.KindPermission}:  {"ask→allow", "Bash(curl:*)", "denied by bob: no network"},
		{a, "ls", audit.KindPermission}:    {"allow→deny", "Bash(ls:*)", ""},
		{a, "gs", audit.KindPermission}:    {"allow→ask", "Bash(git status)", ""},
		{b, "e", audit.KindPermission}:     {"ask→allow", "Bash(touch:*)", "edited by dave"},
		{b, "e", audit.KindEdit}:           {"ask→allow", "Bash(touch:*)", "edited by dave (this input)"},
	}
	for k, wc := range want {
		c, ok := got[k]
		if !ok {
			t.Errorf("%v did not change, want %s", k, wc.change)
			continue
		}
		if c.Change != wc.change || c.NowRule != wc.rule || c.Human != wc.human || c.DeniedByHuman != (k.call == "curl") {
			t.Errorf("%v: %+v, want %+v", k, c, wc)
		}
	}
	for k, c := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected change %v: %+v", k, c)
		}
	}
	if w.ByChange["ask→allow"] != 4 || w.ByChange["allow→deny"] != 1 || w.ByChange["allow→ask"] != 1 || len(w.ByChange) != 3 ||
		w.ByTool["Bash"] != 6 || w.DeniedByHuman != 1 || w.Unchanged["allow"] != 2 || w.Unchanged["ask"] != 1 || w.Unchanged["deny"] != 1 {
		t.Errorf("counts: by change %v, by tool %v, denied by a human %d, unchanged %v", w.ByChange, w.ByTool, w.DeniedByHuman, w.Unchanged)
	}
	rules := map[string]audit.RuleChanges{}
	for _, r := range w.ByRule {
		rules[r.Rule] = r
	}
	if rules["Bash(touch:*)"].Now != 3 || rules["Bash(curl:*)"].Now != 1 || rules["Bash(ls:*)"].Now != 1 || rules["Bash(git status)"].Now != 1 || len(rules) != 4 {
		t.Errorf("by rule: %+v", w.ByRule)
	}

	// The table marks the call a human denied.
	out, err := runStarter(t, buildStarter(t), dir, "--config", cfg, "--address", env.srv.Addr(), "--namespace", "default",
		"policy", "what-if", "--rules", filepath.Join(dir, "p1.yaml"), "--workflow", prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"10 calls of 2 turns re-decided", "6 would change", "1 change(s) would newly allow a call a human once denied",
		"ask→allow", "Bash(touch:*)", "DENIED-BY-HUMAN"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	t.Logf("starter policy what-if:\n%s", out)
}

// TestWhatIfRefusesFailingExamples: a proposal whose examples fail is
// not used, and the error names the rule and the example; the worker
// refuses to start on a config whose examples fail.
func TestWhatIfRefusesFailingExamples(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("allow:\n  - {rule: \"Bash(npm run:*)\", match: [\"npm install\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runStarter(t, buildStarter(t), dir, "--config", cfg, "--address", env.srv.Addr(), "policy", "what-if", "--rules", bad)
	if err == nil || !strings.Contains(err.Error(), `allow rule 1 Bash(npm run:*): match example "npm install" does not match`) {
		t.Errorf("what-if with failing examples: %v", err)
	}
	// The worker: its config does not load.
	wcfg := filepath.Join(dir, "worker.yaml")
	if err := os.WriteFile(wcfg, []byte(fmt.Sprintf("server: {data_dir: %q}\npermission:\n  deny:\n    - {rule: \"Bash(rm -rf:*)\", match: [\"rm -r build\"]}\n",
		filepath.Join(dir, "data"))), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := buildWorker(t) // before the clock starts: a build takes a minute or more
	ctx := ctxT(t, 60*time.Second)
	cmd := exec.CommandContext(ctx, bin, "--config", wcfg)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil || !strings.Contains(string(b), `deny rule 1 Bash(rm -rf:*): match example "rm -r build" does not match`) {
		t.Errorf("worker with failing examples: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		t.Error("the worker started its server before refusing the config")
	}
}

// TestDangerousCommandsHoldOnServer runs turns on the embedded server
// whose policy allows git, sudo and chmod outright: the dangerous forms
// still wait for a human (default, accept_edits), are denied (dont_ask,
// explore), and run only in bypass.
func TestDangerousCommandsHoldOnServer(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	rules := []string{"Bash(git:*)", "Bash(sudo:*)", "Bash(chmod:*)"}
	calls := `
steps:
  - tool_calls:
      - {id: reset, name: Bash, input: {command: "git reset --hard"}}
      - {id: sudo, name: Bash, input: {command: "sudo -n true"}}
      - {id: setuid, name: Bash, input: {command: "chmod u+s missing-file"}}
      - {id: control, name: Bash, input: {command: "git log --oneline -1"}}
  - text: done
`
	bypassCalls := strings.Replace(calls, `{id: sudo, name: Bash, input: {command: "sudo -n true"}}`, `{id: sudo, name: Bash, input: {command: "git branch -D nothing"}}`, 1)
	for _, mode := range []permission.Mode{permission.ModeDefault, permission.ModeAcceptEdits, permission.ModeDontAsk, permission.ModeExplore, permission.ModeBypass} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := ctxT(t, 60*time.Second)
			id := "danger-" + string(mode) + "-" + tag()
			s := calls
			if mode == permission.ModeBypass {
				s = bypassCalls // nothing that would ask for privileges runs
			}
			in := workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, s)},
				Permission: policy(t, permission.Policy{Mode: mode, Allow: rules})}
			if _, err := cl.Start(ctx, id, in); err != nil {
				t.Fatal(err)
			}
			switch mode {
			case permission.ModeDefault, permission.ModeAcceptEdits:
				ps := waitPending(t, cl, id, 3)
				var got []string
				for _, p := range ps {
					got = append(got, p.CallID)
					if !p.BypassImmune || !strings.HasPrefix(p.Reason, "Safety check: dangerous command (") {
						t.Errorf("%s: pending %+v, want a safety check", p.CallID, p)
					}
					if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: p.CallID, Decision: workflows.DecisionDeny, By: "test", Hash: p.Hash}); err != nil {
						t.Fatal(err)
					}
				}
				sort.Strings(got)
				if strings.Join(got, " ") != "reset setuid sudo" {
					t.Errorf("pending %v, want the three dangerous calls", got)
				}
				if _, err := cl.Result(ctx, id); err != nil {
					t.Fatal(err)
				}
			default:
				res, err := cl.Result(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range toolResults(res) {
					denied := strings.HasPrefix(m.Content, "Permission denied")
					want := mode != permission.ModeBypass && m.ToolCallID != "control"
					if denied != want {
						t.Errorf("%s: %q, want denied %v", m.ToolCallID, m.Content, want)
					}
				}
			}
			recs, err := audit.Workflow(ctx, env.c, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Kind == audit.KindPermission && r.CallID != "control" && mode != permission.ModeBypass &&
					!strings.Contains(r.Reason, "Safety check: dangerous command") {
					t.Errorf("audit: %s %s %q, want the safety check", r.CallID, r.Decision, r.Reason)
				}
			}
		})
	}
}

// TestWhatIfThroughputOnServer fills the namespace with turns whose
// calls are a development session's commands (decided in dont_ask, so
// nothing runs) and measures what-if on them: histories read, and calls
// re-decided per second (BENCHMARKS.md).
func TestWhatIfThroughputOnServer(t *testing.T) {
	if testing.Short() {
		t.Skip("fills the namespace")
	}
	data, err := os.ReadFile("../decide/testdata/devsession.txt")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 300*time.Second)
	prefix := "whatif-load-" + tag() + "-"
	const turns, perTurn = 100, 20
	var jobs []client.Job
	for i := range turns {
		var b strings.Builder
		b.WriteString("steps:\n  - tool_calls:\n")
		for j := range perTurn {
			in, _ := json.Marshal(map[string]string{"command": cmds[(i*perTurn+j)%len(cmds)]})
			fmt.Fprintf(&b, "      - {id: c%d, name: Bash, input: %s}\n", j, in)
		}
		b.WriteString("  - text: done\n")
		jobs = append(jobs, client.Job{ID: fmt.Sprintf("%s%03d", prefix, i), Input: workflows.TurnInput{
			Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, b.String())}, Permission: permission.Context{Mode: permission.ModeDontAsk}}})
	}
	started := time.Now()
	for _, j := range jobs {
		if _, err := cl.Start(ctx, j.ID, j.Input); err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range jobs {
		if _, err := cl.Result(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d turns of %d calls ran in %s", turns, perTurn, time.Since(started).Round(time.Millisecond))
	read := time.Now()
	calls, n, err := audit.RecordedCalls(ctx, env.c, audit.Query{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	readTook := time.Since(read)
	if n != turns || len(calls) != turns*perTurn {
		t.Fatalf("read %d turns, %d calls; want %d, %d", n, len(calls), turns, turns*perTurn)
	}
	p := permission.Policy{Mode: permission.ModeDefault, Allow: []string{"Bash(go test:*)", "Bash(make:*)", "Bash(git:*)"}, Deny: []string{"Bash(rm -rf:*)"}}
	w, err := audit.Redecide(context.Background(), calls, audit.WhatIfOptions{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if w.Calls != len(calls) || len(w.Changes) == 0 {
		t.Fatalf("re-decided %d calls, %d changes", w.Calls, len(w.Changes))
	}
	t.Logf("what-if over %d turns: histories read in %s (%.0f turns/s), %d calls re-decided in %s (%.0f calls/s), %d changes",
		n, readTook.Round(time.Millisecond), float64(n)/readTook.Seconds(), w.Calls, w.Elapsed.Round(time.Microsecond), w.PerSecond, len(w.Changes))
}
