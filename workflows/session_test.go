package workflows_test

import (
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/workflows"
)

// send sends a session message from a delayed callback and returns what
// its callbacks saw.
func (h *harness) send(m workflows.SessionMessage) *updateOutcome {
	o := &updateOutcome{}
	h.env.UpdateWorkflow(workflows.UpdateMessage, "", &testsuite.TestUpdateCallback{
		OnAccept:   func() { o.accepted = true },
		OnReject:   func(err error) { o.rejected = err },
		OnComplete: func(r any, err error) { o.completed, o.result, o.err = true, r, err },
	}, m)
	return o
}

func (h *harness) control(c workflows.SessionControl) *updateOutcome {
	o := &updateOutcome{}
	h.env.UpdateWorkflow(workflows.UpdateControl, "", &testsuite.TestUpdateCallback{
		OnAccept:   func() { o.accepted = true },
		OnReject:   func(err error) { o.rejected = err },
		OnComplete: func(r any, err error) { o.completed, o.result, o.err = true, r, err },
	}, c)
	return o
}

// TestSteerDuringAWait: a steer that arrives while the turn waits for an
// approval does not withdraw it; the call runs once allowed, and the
// model call after it ends with the steer.
func TestSteerDuringAWait(t *testing.T) {
	h := newHarness(t)
	h.prepare = askAll
	in := turnInput(step("", call("Bash", map[string]any{"command": "ls"})), step("first answer"), step("second answer"))
	var steer *updateOutcome
	h.env.RegisterDelayedCallback(func() {
		steer = h.send(workflows.SessionMessage{Text: "mind the tests", Mode: workflows.MessageSteer, By: "alice"})
		ps := h.pending()
		h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{CallID: ps[0].CallID, Hash: ps[0].Hash, Decision: workflows.DecisionAllow, By: "alice"})
	}, time.Minute)
	res := h.run(in)
	if steer == nil || steer.rejected != nil || !steer.completed {
		t.Fatalf("steer: %+v", steer)
	}
	if res.Answer != "first answer" {
		t.Errorf("answer %q", res.Answer)
	}
	calls := h.modelCalls()
	last := calls[len(calls)-1].Request.Messages
	if len(calls) != 2 || last[len(last)-1].Role != model.RoleUser || last[len(last)-1].Content != "mind the tests" {
		t.Fatalf("the model call after the wait did not end with the steer: %d calls, last %+v", len(calls), last[len(last)-1])
	}
}

// TestCancelEndsABudgetWait: a cancel while the turn waits on a budget
// approval ends the wait and the turn, as cancelled with the reason;
// nothing runs.
func TestCancelEndsABudgetWait(t *testing.T) {
	h := newHarness(t)
	h.prepare = allowAll
	h.prices = map[string]model.Price{"scripted": {Input: 1, Output: 10}}
	in := turnInput(usageStep("", 1000, 0, call("Bash", map[string]any{"command": "ls"})), step("done"))
	in.Budget = &workflows.Budget{Cost: 0.001}
	var c *updateOutcome
	h.env.RegisterDelayedCallback(func() {
		if ps := h.pending(); len(ps) != 1 || ps[0].Kind != workflows.PendingBudget {
			t.Errorf("pending %+v", ps)
		}
		c = h.control(workflows.SessionControl{Action: workflows.ControlCancel, Reason: "enough", By: "alice"})
	}, time.Minute)
	res := h.run(in)
	if c == nil || c.rejected != nil {
		t.Fatalf("cancel: %+v", c)
	}
	if res.Stopped != "cancelled" || !strings.Contains(res.StopReason, "cancelled by alice: enough") {
		t.Errorf("result: %q %q", res.Stopped, res.StopReason)
	}
	if n := len(h.toolCalls()); n != 0 {
		t.Errorf("%d tool calls ran", n)
	}
}

// TestMessageRefusals: a queued message to a single turn, an empty one,
// an unknown mode, a resume of a running turn and a message by someone
// who is not a sender are refused with their reasons; the turn goes on.
func TestMessageRefusals(t *testing.T) {
	h := newHarness(t)
	h.prepare = askAll
	in := turnInput(step("", call("Bash", map[string]any{"command": "ls"})), step("done"))
	in.Senders, in.Requester = []string{"bob"}, "alice"
	var outs []*updateOutcome
	h.env.RegisterDelayedCallback(func() {
		outs = append(outs,
			h.send(workflows.SessionMessage{Text: "later", Mode: workflows.MessageQueue, By: "bob"}),
			h.send(workflows.SessionMessage{Text: " ", Mode: workflows.MessageSteer, By: "bob"}),
			h.send(workflows.SessionMessage{Text: "x", Mode: "shout", By: "bob"}),
			h.control(workflows.SessionControl{Action: workflows.ControlResume, By: "bob"}),
			h.send(workflows.SessionMessage{Text: "hi", Mode: workflows.MessageSteer, By: "mallory"}),
			h.send(workflows.SessionMessage{Text: "from the requester", Mode: workflows.MessageSteer, By: "alice"}),
		)
		ps := h.pending()
		h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{CallID: ps[0].CallID, Hash: ps[0].Hash, Decision: workflows.DecisionAllow, By: "alice"})
	}, time.Minute)
	h.run(in)
	want := []string{"not a session", "empty message", "unknown message mode", "is not paused", `"mallory" may not message`}
	for i, w := range want {
		if outs[i].rejected == nil || !strings.Contains(outs[i].rejected.Error(), w) {
			t.Errorf("refusal %d: %v, want %q", i, outs[i].rejected, w)
		}
	}
	if outs[5].rejected != nil {
		t.Errorf("the requester's steer was refused: %v", outs[5].rejected)
	}
}
