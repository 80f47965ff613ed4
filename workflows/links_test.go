package workflows_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// TestRoleCheckFollowsLinks: the role check of an answer decides the
// call's paths through the links its verdict recorded (Prepared.Links,
// copied to the waiting entry), as the verdict did: an approver whose
// role covers Write(notes/**) may not answer a write of notes/key that
// leads to ~/.ssh/authorized_keys; the control, the same call recorded
// without the link, they may.
func TestRoleCheckFollowsLinks(t *testing.T) {
	links := permission.Links{"/work/notes/key": "/home/u/.ssh/authorized_keys"}
	for _, c := range []struct {
		name  string
		links permission.Links
		want  string // "" accepted, else in the rejection
	}{
		{"link", links, "roles do not cover"},
		{"control", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarnessWith(t, roles.Checker{})
			h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
				p := askAll(in)
				p.Workdir, p.Links = "/work", c.links
				return p
			}
			input := map[string]any{"file_path": "/work/notes/key", "content": "ssh-ed25519 AAAA attacker"}
			in := turnInput(step("", call("Write", input)), step("done"))
			in.Approvers = &workflows.Approvers{Users: map[string][]string{"doc": {"docs"}, "alice": nil},
				Roles: map[string][]string{"docs": {"Write(notes/**)"}}}
			var pend []workflows.Pending
			var doc, alice *updateOutcome
			h.env.RegisterDelayedCallback(func() {
				pend = h.pending()
				doc = h.update("doc", workflows.Approval{CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionAllow, By: "doc"})
			}, time.Minute)
			if c.want != "" {
				h.env.RegisterDelayedCallback(func() {
					alice = h.update("alice", workflows.Approval{CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionDeny, By: "alice"})
				}, 2*time.Minute)
			}
			res := h.run(in)
			ran := len(h.toolCalls()) == 1
			if ran != (c.want == "") {
				t.Errorf("the write ran: %v (answer %q)", ran, res.Answer)
			}
			if len(pend) != 1 || len(pend[0].Links) != len(c.links) || pend[0].Links["/work/notes/key"] != c.links["/work/notes/key"] {
				t.Fatalf("waiting entries %+v, want one with links %v", pend, c.links)
			}
			switch {
			case c.want == "" && (doc.rejected != nil || !doc.completed):
				t.Errorf("doc's allow: %+v, want accepted", doc)
			case c.want != "" && (doc.rejected == nil || !strings.Contains(doc.rejected.Error(), c.want)):
				t.Errorf("doc's allow: %+v, want rejected (%s)", doc, c.want)
			case c.want != "" && (alice == nil || !alice.completed):
				t.Errorf("alice's deny: %+v", alice)
			}
		})
	}
	// The checker alone: the role covers the link's own path, not where
	// it leads.
	rule := []permission.Rule{{Tool: "Write", Content: "notes/**", Behavior: permission.Allow}}
	w := json.RawMessage(`{"file_path":"/work/notes/key","content":"x"}`)
	if !(roles.Checker{}).RulesCover(rule, "Write", w, "/work") || workflows.WithLinks(roles.Checker{}, links).RulesCover(rule, "Write", w, "/work") {
		t.Errorf("WithLinks: the role Write(notes/**) covers the link's path alone, not its target")
	}
	if workflows.WithLinks(nil, links) != nil {
		t.Errorf("WithLinks(nil) is not nil")
	}
}
