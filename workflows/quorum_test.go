package workflows_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/workflows"
)

// TestTurnQuorumByUpdate: an entry whose verdict needs two approvers
// keeps the first allow (acknowledged "allow (1 of 2 approvals)"),
// refuses the requester, the same approver again and one key under a
// second name, and the second distinct allow runs the call; both allows
// are answered events, counted.
func TestTurnQuorumByUpdate(t *testing.T) {
	h := newHarness(t)
	h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
		p := askAll(in)
		p.Policy.Quorum = 2
		return p
	}
	in := turnInput(step("", call("Bash", map[string]any{"command": "kubectl delete pod web"})), step("deleted"))
	in.Requester = "ops"
	hash := workflows.CallHash("Bash", json.RawMessage(`{"command":"kubectl delete pod web"}`), "call_1_1", 0)
	allow := func(by, via string) workflows.Approval {
		return workflows.Approval{CallID: "call_1_1", Decision: workflows.DecisionAllow, Hash: hash, By: by, Via: via}
	}
	var first, requester, again, renamed, second *updateOutcome
	var between []workflows.Pending
	h.env.RegisterDelayedCallback(func() {
		requester = h.update("requester", allow("ops", "ops"))
		first = h.update("first", allow("alice", "alice"))
	}, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		between = h.pending()
		again = h.update("again", allow("alice", "alice"))
		renamed = h.update("renamed", allow("carol", "alice"))
	}, 2*time.Minute)
	h.env.RegisterDelayedCallback(func() {
		second = h.update("second", allow("bob", "bob"))
	}, 3*time.Minute)
	res := h.run(in)

	if requester.rejected == nil || !strings.Contains(requester.rejected.Error(), "requester's allow never counts") {
		t.Errorf("requester: %+v", requester)
	}
	if ack, _ := first.result.(workflows.Ack); !first.completed || ack.Status != "allow (1 of 2 approvals)" {
		t.Errorf("first allow: %+v", first)
	}
	if len(between) != 1 || len(between[0].Approvals) != 1 || between[0].Approvals[0].By != "alice" {
		t.Errorf("pending between the allows: %+v", between)
	}
	if again.rejected == nil || !strings.HasSuffix(again.rejected.Error(), "already allowed it (1 of 2): another approver must allow it") {
		t.Errorf("alice again: %+v", again)
	}
	if renamed.rejected == nil || !strings.Contains(renamed.rejected.Error(), "under another name") {
		t.Errorf("alice's key naming carol: %+v", renamed)
	}
	if ack, _ := second.result.(workflows.Ack); !second.completed || ack.Status != "allow" {
		t.Errorf("second allow: %+v", second)
	}
	if res.Answer != "deleted" || len(h.toolCalls()) != 1 {
		t.Fatalf("answer %q, %d tool calls", res.Answer, len(h.toolCalls()))
	}
	answered := eventsOfType(h.events(), workflows.EventAnswered)
	if len(answered) != 2 || answered[0].Text != "allow by alice (1 of 2 approvals; 1 more needed)" ||
		answered[1].Text != "allow by bob (2 of 2 approvals)" {
		t.Fatalf("answered events = %+v", answered)
	}
}
