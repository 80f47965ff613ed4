package client

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/wardenhq/warden/workflows"
)

func TestAskUserCall(t *testing.T) {
	f := &fakeTemporal{pending: map[string][]workflows.Pending{"t1": {
		{Kind: workflows.PendingExternal, CallID: "q1", Tool: AskUserTool, Input: json.RawMessage(`{"questions":[]}`)},
		{Kind: workflows.PendingApproval, CallID: "c1", Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`)},
	}}}
	cl := New(f, "q")
	ctx := context.Background()
	if p, err := cl.AskUserCall(ctx, "t1", "q1"); err != nil || p.CallID != "q1" {
		t.Errorf("AskUser call: %+v %v", p, err)
	}
	_, err := cl.AskUserCall(ctx, "t1", "c1")
	if !errors.Is(err, ErrNotAskUser) || err.Error() != "call c1 is a Bash call, not an AskUser question" {
		t.Errorf("Bash call: %v", err)
	}
	if _, err := cl.AskUserCall(ctx, "t1", "nope"); !errors.Is(err, ErrNoPendingCall) {
		t.Errorf("missing call: %v", err)
	}
}
