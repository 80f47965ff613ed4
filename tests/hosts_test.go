package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// TestAuditAskedHosts: on a real server and worker, a Bash call that
// asks for a host nothing grants asks although an allow rule covers the
// command, its inbox entry and the audit say it will run with the
// network to that host, granted by the approval, and once approved it
// runs. In bypass mode (the control) the same call runs unasked and
// without the network: bypass allows the call, not the access.
func TestAuditAskedHosts(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 90*time.Second)
	s := script(t, `
steps:
  - tool_calls:
      - {id: n, name: Bash, input: {command: "true", network_hosts: [registry.npmjs.org]}}
  - text: done
`)
	id := "hosts-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: policy(t, permission.Policy{Allow: []string{"Bash(true)"}})}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	const grant = "network to registry.npmjs.org (network_hosts approved by a person: registry.npmjs.org)"
	if !strings.Contains(ps[0].Reason, "registry.npmjs.org") || !strings.Contains(ps[0].Sandbox, grant) {
		t.Fatalf("pending = %+v, want the host in its reason and sandbox", ps[0])
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "n", Decision: workflows.DecisionAllow, By: "carol", Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	recs, err := audit.Workflow(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	logRecords(t, recs)
	if r := findRecord(t, recs, "n", audit.KindPermission); r.Decision != "ask" || r.Layer != "safety check" ||
		!strings.Contains(r.Reason, "network hosts no rule grants: registry.npmjs.org") || !strings.Contains(r.Sandbox, grant) {
		t.Errorf("permission record = %+v", r)
	}
	findRecord(t, recs, "n", audit.KindExecution)

	// Control: bypass mode neither asks nor grants the host.
	byp := "hosts-bypass-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, byp, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: policy(t, permission.Policy{Mode: permission.ModeBypass})}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, byp); err != nil {
		t.Fatal(err)
	}
	recs, err = audit.Workflow(ctx, env.c, byp)
	if err != nil {
		t.Fatal(err)
	}
	logRecords(t, recs)
	if r := findRecord(t, recs, "n", audit.KindPermission); r.Decision != "allow" || !strings.Contains(r.Sandbox, "network off") {
		t.Errorf("bypass permission record = %+v", r)
	}
	if !slices.ContainsFunc(recs, func(r audit.Record) bool { return r.Kind == audit.KindExecution }) {
		t.Error("bypass: the call did not run")
	}
}
