package workflows_test

import (
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// countingChecker is the roles checker, counting how often the turn asks it.
type countingChecker struct {
	roles.Checker
	calls *atomic.Int32
}

func (c countingChecker) RulesCover(rules []permission.Rule, tool string, input json.RawMessage, workdir string) bool {
	c.calls.Add(1)
	return c.Checker.RulesCover(rules, tool, input, workdir)
}

func (c countingChecker) RuleWithin(r permission.Rule, rs []permission.Rule) bool {
	c.calls.Add(1)
	return c.Checker.RuleWithin(r, rs)
}

// TestRouteRolesOnce: the approver roles a waiting call's notifications
// route by are computed once for the entry (a side effect, which a replay
// reads back; tests/TestRoleChecksNotReplayed replays one), and so is the
// check of a signalled answer by an approver with roles: the requested and
// the answered notifications share one computation.
func TestRouteRolesOnce(t *testing.T) {
	var calls atomic.Int32
	h := newHarnessWith(t, countingChecker{calls: &calls})
	h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
		p := askAll(in)
		p.Policy.Notify = true
		return p
	}
	in := turnInput(step("", call("Bash", map[string]any{"command": "kubectl get pods"})), step("over"))
	// Two roles: one that covers the call, one that does not.
	in.Approvers = &workflows.Approvers{Users: map[string][]string{"kube": {"k8s"}},
		Roles: map[string][]string{"k8s": {"Bash(kubectl:*)"}, "web": {"Write"}}}
	var before int32
	h.env.RegisterDelayedCallback(func() {
		before = calls.Load()
		h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{
			CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionAllow, By: "kube"})
	}, time.Minute)
	res := h.run(in)
	if m := toolMessage(t, res.Messages, "call_1_1"); m.Content != `Bash ran {"command":"kubectl get pods"}` {
		t.Fatalf("result = %q: the answer by kube was not applied", m.Content)
	}
	var types []string
	for _, n := range h.notifyCalls() {
		types = append(types, n.Type)
		if !slices.Equal(n.Roles, []string{"k8s"}) {
			t.Errorf("%s notification routes by roles %v, want [k8s]", n.Type, n.Roles)
		}
	}
	slices.Sort(types)
	if want := []string{"approval_answered", "approval_requested"}; !slices.Equal(types, want) {
		t.Fatalf("notifications = %v, want %v", types, want)
	}
	// Before the answer: one check per role, for the requested
	// notification. The answer: one check of kube's role against the call;
	// the answered notification reuses the entry's roles.
	if before != 2 || calls.Load() != 3 {
		t.Fatalf("checker asked %d times before the answer and %d in all, want 2 and 3", before, calls.Load())
	}
}
