package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// TestRealWorkerLinks: a file of the workspace linked to a file outside
// it (notes/key -> OUT/authorized_keys, a stand-in for
// ~/.ssh/authorized_keys), through the worker as a deployment starts it,
// in accept_edits mode with Bash(echo:*) allowed, where an ordinary
// workspace write runs unasked. A Write of the link and `echo >>` to it
// are decided as writes of the target: each asks, and its waiting entry
// shows where the link leads (message and links); what-if over the
// recorded turn and "permission check" decide them alike (what-if
// through the links the worker recorded). The control, the same worker
// with link resolution off (backend.local.sandbox_off: [links]), decides
// both as workspace writes and runs them. In both, the target keeps its
// content: the file tools follow no link out of the working directories
// and the kernel sandbox gives the process no write outside them.
func TestRealWorkerLinks(t *testing.T) {
	for _, off := range []bool{false, true} {
		name := "links"
		extra := ""
		if off {
			name, extra = "links_off", "backend:\n  local:\n    sandbox_off: [links]\n"
		}
		t.Run(name, func(t *testing.T) {
			w := startRealWorker(t, inside, false, extra)
			keys := filepath.Join(w.out, "authorized_keys")
			link := filepath.Join(w.ws, "notes", "key")
			writeFile(t, keys, "ssh-ed25519 AAAA owner\n", 0o600)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(keys, link); err != nil {
				t.Fatal(err)
			}
			shown := link + " -> " + keys
			calls := []model.ScriptedCall{
				{ID: "w", Name: "Write", Input: map[string]any{"file_path": link, "content": "ssh-ed25519 AAAA attacker\n"}},
				{ID: "b", Name: "Bash", Input: map[string]any{"command": "echo ssh-ed25519 AAAA attacker >> notes/key"}},
			}
			pol := permission.Policy{Mode: permission.ModeAcceptEdits, Allow: []string{"Bash(echo:*)"}}
			s := &model.Script{}
			for _, c := range calls {
				s.Steps = append(s.Steps, model.Step{ToolCalls: []model.ScriptedCall{c}})
			}
			s.Steps = append(s.Steps, model.Step{Text: "done"})
			id := "links-" + name + "-" + tag()
			cl := startWorkerless(w.queue)
			ctx := ctxT(t, 4*time.Minute)
			if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
				Permission: policy(t, pol), Workdir: w.ws, ApprovalTimeout: 2 * time.Minute}); err != nil {
				t.Fatal(err)
			}
			// Each call that asks is shown, then denied.
			var seen []workflows.Pending
			done := make(chan error, 1)
			go func() { _, err := cl.Result(ctx, id); done <- err }()
			for ended := false; !ended; {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("turn: %v", err)
					}
					ended = true
				case <-w.exited:
					t.Fatalf("the worker died:\n%s", w.tail())
				case <-time.After(100 * time.Millisecond):
					ps, err := cl.Pending(ctx, id)
					if err != nil || len(ps) == 0 {
						continue
					}
					p := ps[0]
					seen = append(seen, p)
					if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: p.CallID, Decision: workflows.DecisionDeny, Hash: p.Hash, By: "suite", Reason: "a link out"}); err != nil {
						t.Fatalf("deny %s: %v", p.CallID, err)
					}
				}
			}
			if off {
				if len(seen) != 0 {
					t.Errorf("links off: %d calls asked (%s), want none: a workspace write in accept_edits", len(seen), seen[0].Message)
				}
			} else {
				if len(seen) != len(calls) {
					t.Fatalf("%d calls asked, want %d: %+v", len(seen), len(calls), seen)
				}
				for _, p := range seen {
					if !strings.Contains(p.Message, shown) || p.Links[link] != keys || !p.BypassImmune {
						t.Errorf("%s: the waiting entry does not show the link's target %q: message %q, reason %q, links %v", p.Tool, shown, p.Message, p.Reason, p.Links)
					}
					t.Logf("%s asks: %s", p.Tool, p.Message)
				}
			}
			res, err := cl.Result(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range toolResults(res) {
				t.Logf("%s: %.300s", calls[i].Name, strings.ReplaceAll(r.Content, "\n", " | "))
			}
			if b, err := os.ReadFile(keys); err != nil || string(b) != "ssh-ed25519 AAAA owner\n" {
				t.Errorf("the link's target was written (%v): %q", err, b)
			}
			// The other deciders, as the worker decided.
			runs, err := audit.Chain(ctx, env.c, id)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := audit.ExtractCalls(id, runs)
			if err != nil {
				t.Fatal(err)
			}
			want := string(permission.Ask)
			if off {
				want = string(permission.Allow)
			}
			n := 0
			for _, d := range ds {
				if d.Verdict.Kind != audit.KindPermission {
					continue
				}
				n++
				what := fmt.Sprintf("%s %s", d.Verdict.Tool, d.Input)
				if d.Verdict.Decision != want {
					t.Errorf("%s: the worker decided %s (%s), want %s", what, d.Verdict.Decision, d.Verdict.Reason, want)
				}
				wi, err := audit.Redecide(ctx, []audit.Decided{d}, audit.WhatIfOptions{Policy: pol, Workdir: w.ws})
				if err != nil {
					t.Fatal(err)
				}
				if len(wi.Changes) != 0 || wi.Unchanged[d.Verdict.Decision] != 1 {
					t.Errorf("%s: what-if re-decides the recorded %s otherwise: %+v", what, d.Verdict.Decision, wi.Changes)
				}
				if !off {
					// What-if decides through the recorded links: without them
					// it would allow the call.
					bare := d
					bare.Links = nil
					if wi, err := audit.Redecide(ctx, []audit.Decided{bare}, audit.WhatIfOptions{Policy: pol, Workdir: w.ws}); err != nil || len(wi.Changes) != 1 {
						t.Errorf("%s: what-if without the recorded links: %+v %v, want the ask changed to allow", what, wi, err)
					}
				}
				chk, err := decide.Check(ctx, decide.CheckRequest{Tool: d.Verdict.Tool, Input: json.RawMessage(d.Input)},
					decide.CheckOptions{Base: policy(t, pol), Workdirs: []string{w.ws}, NoLinks: off})
				if err != nil {
					t.Fatal(err)
				}
				if chk.Behavior != d.Verdict.Decision || chk.Layer != d.Verdict.Layer {
					t.Errorf("%s: the worker decided %s by %s; permission check %s by %s (%s)", what, d.Verdict.Decision, d.Verdict.Layer, chk.Behavior, chk.Layer, chk.Reason)
				}
			}
			if n != len(calls) {
				t.Errorf("%d verdicts recorded, want %d", n, len(calls))
			}
		})
	}
}
