package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// recordedCalls reads the verdicts of a recorded history.
func recordedCalls(t testing.TB, name string) []Decided {
	t.Helper()
	ds, err := ExtractCalls(strings.TrimSuffix(name, ".json"), []Run{{Events: load(t, name)}})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// demoPolicy is the policy the recorded demo turn ran under (the shipped
// temporal-dev.yaml's rules).
func demoPolicy() permission.Policy {
	return permission.Policy{Allow: []string{"Bash(echo:*)", "Bash(go version)"}, Deny: []string{"Bash(rm -rf:*)"}}
}

// TestExtractCallsRecorded: the verdicts of recorded turns carry their
// input, the turn's policy and workdir, the sandbox they ran in and what
// came of each ask.
func TestExtractCallsRecorded(t *testing.T) {
	t.Parallel()
	ds := recordedCalls(t, "approvals_turn_v7.json")
	want := map[string]string{"a": "approval always_allow alice", "b": "recheck allow policy", "c": "approval deny bob", "d": "approval allow carol"}
	if len(ds) != len(want) {
		t.Fatalf("%d verdicts, want %d", len(ds), len(want))
	}
	for _, d := range ds {
		if d.Answer == nil {
			t.Fatalf("%s: no answer", d.Verdict.CallID)
		}
		if got := d.Answer.Kind + " " + d.Answer.Decision + " " + d.Answer.By; got != want[d.Verdict.CallID] {
			t.Errorf("%s: answer %q, want %q", d.Verdict.CallID, got, want[d.Verdict.CallID])
		}
		if d.Verdict.Kind != KindPermission || d.Verdict.Decision != "ask" || len(d.Input) == 0 || !strings.HasPrefix(d.Workdir, "/") || !d.Sandboxed {
			t.Errorf("%s: %+v", d.Verdict.CallID, d)
		}
	}
	demo := recordedCalls(t, "demo_turn_v7.json")
	if len(demo) != 6 || len(demo[0].Policy.Allow) != 2 || demo[0].Policy.Mode != permission.ModeDefault {
		t.Errorf("demo verdicts: %d, policy %+v", len(demo), demo[0].Policy)
	}
	notify := recordedCalls(t, "notify_turn_v7.json")
	var kinds []string
	for _, d := range notify {
		kinds = append(kinds, d.Verdict.CallID+"/"+d.Verdict.Kind)
	}
	if strings.Join(kinds, " ") != "e1/permission e2/permission e1/edit" || string(notify[2].Input) != `{"command":"touch as-edited"}` ||
		notify[0].Answer == nil || string(notify[0].Answer.ApprovedInput) != `{"command":"touch as-edited"}` ||
		notify[1].Answer == nil || notify[1].Answer.Kind != KindEscalation || notify[2].Answer == nil || notify[2].Answer.By != "alice" {
		t.Errorf("notify verdicts: %v %+v", kinds, notify)
	}
}

// TestWhatIfRecorded re-decides recorded turns: under the policy they
// ran with nothing changes; a proposed policy changes exactly the calls
// it decides differently, counted per change, rule and tool, and a
// change that allows a call a human denied is marked.
func TestWhatIfRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	approvals, demo := recordedCalls(t, "approvals_turn_v7.json"), recordedCalls(t, "demo_turn_v7.json")
	for name, c := range map[string]struct {
		calls []Decided
		p     permission.Policy
	}{"approvals": {approvals, permission.Policy{}}, "demo": {demo, demoPolicy()}} {
		w, err := Redecide(ctx, c.calls, WhatIfOptions{Policy: c.p})
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Changes) != 0 || w.Calls != len(c.calls) {
			t.Errorf("%s under its own policy: %d of %d calls change: %+v", name, len(w.Changes), w.Calls, w.Changes)
		}
	}

	// The demo without "go version", and with touch allowed where the
	// turn touched a file outside its workdir.
	p := permission.Policy{Allow: []string{"Bash(echo:*)", "Bash(touch:*)", "Edit(/tmp/warden-demo-*)"}, Deny: []string{"Bash(rm -rf:*)"}}
	w, err := Redecide(ctx, demo, WhatIfOptions{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Change{}
	for _, c := range w.Changes {
		got[c.CallID] = c
	}
	if len(got) != 2 || got["call_1_2"].Change != "allow→ask" || got["call_1_2"].WasRule != "Bash(go version)" ||
		got["call_3_1"].Change != "ask→allow" || got["call_3_1"].NowRule != "Bash(touch:*)" || got["call_3_1"].Human != "allowed by recorder" ||
		got["call_3_1"].DeniedByHuman {
		t.Errorf("demo changes: %+v", w.Changes)
	}
	if w.ByChange["allow→ask"] != 1 || w.ByChange["ask→allow"] != 1 || w.ByTool["Bash"] != 2 || len(w.ByRule) != 2 ||
		w.Unchanged["allow"] != 3 || w.Unchanged["deny"] != 1 || w.PerSecond <= 0 {
		t.Errorf("counts: %+v", w)
	}

	// Allowing curl would allow the call bob denied.
	w, err = Redecide(ctx, approvals, WhatIfOptions{Policy: permission.Policy{Allow: []string{"Bash(curl:*)"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Changes) != 1 || !w.Changes[0].DeniedByHuman || w.DeniedByHuman != 1 || w.Changes[0].CallID != "c" ||
		!strings.HasPrefix(w.Changes[0].Human, "denied by bob") {
		t.Errorf("curl: %+v", w.Changes)
	}
	// Denying touch and Write: the approved calls would be denied.
	w, err = Redecide(ctx, approvals, WhatIfOptions{Policy: permission.Policy{Deny: []string{"Bash(touch:*)", "Write"}}})
	if err != nil {
		t.Fatal(err)
	}
	if w.ByChange["ask→deny"] != 3 || w.ByChange["ask→ask"] != 0 || len(w.Changes) != 3 {
		t.Errorf("deny touch: %+v", w.ByChange)
	}
	rules := map[string]RuleChanges{}
	for _, r := range w.ByRule {
		rules[r.Rule] = r
	}
	if rules["Bash(touch:*)"].Now != 2 || rules["Write"].Now != 1 {
		t.Errorf("by rule: %+v", w.ByRule)
	}
	// A mode the proposal sets replaces the turn's: dont_ask allows the
	// touches inside the workdir and denies the rest.
	w, err = Redecide(ctx, approvals, WhatIfOptions{Policy: permission.Policy{Mode: permission.ModeDontAsk}})
	if err != nil {
		t.Fatal(err)
	}
	if w.ByChange["ask→deny"] != 2 || w.ByChange["ask→allow"] != 2 || w.DeniedByHuman != 0 {
		t.Errorf("dont_ask: %+v", w.ByChange)
	}
	// Calls of tools unknown here are skipped, not guessed.
	w, err = Redecide(ctx, approvals, WhatIfOptions{Policy: permission.Policy{}, Tools: []tools.Tool{tools.Bash{}}})
	if err != nil {
		t.Fatal(err)
	}
	if w.Calls != 3 || w.Skipped[SkipUnknownTool] != 1 {
		t.Errorf("skipped: %+v", w)
	}
}

// TestWhatIfSessionRules: a rule an approver added (always allow) keeps
// allowing the turn's later calls under a proposed policy, as under the
// policy the turn ran with; a remembered approval keeps a call allowed
// that the proposal would merely ask.
func TestWhatIfSessionRules(t *testing.T) {
	t.Parallel()
	base := recordedCalls(t, "approvals_turn_v7.json")[0]
	later := base
	later.Verdict.CallID, later.Verdict.Decision, later.Verdict.Reason, later.Answer = "z", "allow", "Rule: Bash(touch:*)", nil
	later.Session = []permission.Rule{{Tool: "Bash", Content: "touch:*", Behavior: permission.Allow, Source: "session"}}
	remembered := base
	remembered.Verdict.CallID, remembered.Verdict.Decision, remembered.Verdict.Remembered, remembered.Answer = "r", "allow", "rem-1", nil
	// The approval as the worker read it from the store.
	remembered.Remembered = &calls.Remembered{ID: "rem-1", Scope: calls.ScopeNamespace, Tool: "Bash", Rule: "Bash(touch:*)", By: "carol"}
	w, err := Redecide(context.Background(), []Decided{later, remembered}, WhatIfOptions{Policy: permission.Policy{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Changes) != 0 || w.Unchanged["allow"] != 2 {
		t.Errorf("changes %+v", w.Changes)
	}
	later.Session = nil
	remembered.Verdict.Remembered, remembered.Remembered = "", nil
	if w, _ := Redecide(context.Background(), []Decided{later, remembered}, WhatIfOptions{Policy: permission.Policy{}}); w.ByChange["allow→ask"] != 2 {
		t.Errorf("without the session rule and the remembered approval: %+v", w.ByChange)
	}
}

// benchCalls replicates the verdicts of the recorded turns to n calls,
// the Bash ones taking the commands of decide/testdata/devsession.txt (a
// development session's mix) in turn.
func benchCalls(b *testing.B, n int) []Decided {
	b.Helper()
	var rec []Decided
	for _, f := range []string{"approvals_turn_v7.json", "demo_turn_v7.json", "notify_turn_v7.json", "can_turn_run1_v7.json", "flood_turn_run1_v7.json"} {
		rec = append(rec, recordedCalls(b, f)...)
	}
	data, err := os.ReadFile("../decide/testdata/devsession.txt")
	if err != nil {
		b.Fatal(err)
	}
	var cmds []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	out := make([]Decided, n)
	for i := range out {
		d := rec[i%len(rec)]
		if d.Verdict.Tool == "Bash" {
			d.Input, _ = json.Marshal(map[string]string{"command": cmds[i%len(cmds)]})
		}
		d.Verdict.CallID = fmt.Sprint("c", i)
		out[i] = d
	}
	return out
}

// BenchmarkRedecide measures the calls re-decided per second over
// 10,000 recorded verdicts (the recorded turns' calls, their Bash
// commands drawn from a development session), on one worker and on
// GOMAXPROCS; BENCHMARKS.md reports the figure.
func BenchmarkRedecide(b *testing.B) {
	calls := benchCalls(b, 10000)
	p := permission.Policy{Allow: []string{"Bash(go test:*)", "Bash(make:*)", "Bash(git:*)", "Edit(src/**)"},
		Ask: []string{"Bash(git push:*)"}, Deny: []string{"Bash(rm -rf:*)", "Read(**/.env)"}}
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			total := 0
			for b.Loop() {
				w, err := Redecide(context.Background(), calls, WhatIfOptions{Policy: p, Workers: workers})
				if err != nil {
					b.Fatal(err)
				}
				total += w.Calls
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

func TestHumanLivePolicy(t *testing.T) {
	for _, c := range []struct{ decision, want string }{
		{"allow", "released by policy v6 (live policy)"},
		{"deny", "denied by policy v7 (live policy)"},
	} {
		v := map[string]string{"allow": "policy v6", "deny": "policy v7"}[c.decision]
		d := &Decided{Verdict: Record{Decision: "ask"}, Answer: &Record{Kind: KindLivePolicy, Decision: c.decision, By: v}}
		if got, byHuman := human(d); got != c.want || byHuman {
			t.Errorf("human(%s) = %q, %v; want %q, false", c.decision, got, byHuman, c.want)
		}
	}
	if got, _ := human(&Decided{Verdict: Record{Decision: "ask"}}); got != "waiting (or the turn ended first)" {
		t.Errorf("control: an unanswered ask reads %q", got)
	}
}
