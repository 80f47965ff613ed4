package client

import (
	"context"
	"testing"

	"github.com/wardenhq/warden/workflows"
)

// signalTemporal takes every signal and records it.
type signalTemporal struct {
	fakeTemporal
	sent []workflows.Approval
}

func (s *signalTemporal) SignalWorkflow(_ context.Context, _, _, _ string, arg any) error {
	s.sent = append(s.sent, arg.(workflows.Approval))
	return nil
}

// TestAnswerAllBySignal: an answer sent by signal is marked Signaled
// and carries no status: the server took it, but the turn has not
// checked it yet, so nothing may report it as taken.
func TestAnswerAllBySignal(t *testing.T) {
	t.Parallel()
	f := &signalTemporal{}
	cl := New(f, "q")
	cl.Via = "alice"
	targets := []Target{{WorkflowID: "t1", Pending: workflows.Pending{CallID: "c1", Hash: "h1", Tool: "Bash"}}}
	rs := cl.AnswerAll(t.Context(), targets, workflows.Approval{Decision: workflows.DecisionAllow}, true, nil)
	if len(rs) != 1 || rs[0].Err != nil || !rs[0].Signaled || rs[0].Status != "" {
		t.Fatalf("answered %+v", rs)
	}
	if len(f.sent) != 1 || f.sent[0].CallID != "c1" || f.sent[0].Hash != "h1" || f.sent[0].By != "alice" {
		t.Errorf("sent %+v", f.sent)
	}
	// A signal refused before it is sent is an error, not Signaled.
	targets[0].Pending.ReasonRequired = true
	if rs := cl.AnswerAll(t.Context(), targets, workflows.Approval{Decision: workflows.DecisionAllow}, true, nil); rs[0].Err == nil || rs[0].Signaled {
		t.Errorf("no reason: %+v", rs[0])
	}
}
