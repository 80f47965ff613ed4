package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/workflows"
)

// TestPrintAnswers: an Update's answer prints the turn's
// acknowledgement; a signal's says it was sent and not yet checked
// (the turn may still reject it), never a bare "allow"; a refusal goes
// to stderr and counts as failed.
func TestPrintAnswers(t *testing.T) {
	target := func(call string) client.Target {
		return client.Target{WorkflowID: "wf", Pending: workflows.Pending{CallID: call}}
	}
	var out, errOut bytes.Buffer
	failed := printAnswers(&out, &errOut, []client.Answered{
		{Target: target("c1"), Status: "allow (1 of 2 approvals)"},
		{Target: target("c2"), Signaled: true},
		{Target: target("c3"), Err: errors.New("stale hash")},
	}, workflows.DecisionAllow)
	if failed != 1 || errOut.String() != "wf c3: stale hash\n" {
		t.Errorf("failed %d, stderr %q", failed, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[0] != "wf c1: allow (1 of 2 approvals)" ||
		lines[1] != "wf c2: allow sent by signal, not yet checked: the turn checks it when a worker runs it and records a refusal as a rejected event (starter watch wf)" {
		t.Errorf("stdout:\n%s", out.String())
	}
}
