package activities

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// TestPrepareQuorum: a call a quorum rule matches (one simple command of
// a compound line is enough) asks even where an allow rule would allow
// it, records the quorum and the reason requirement, offers no rule and
// is denied, never allowed, at its deadline; a denied call stays denied.
// Control: a call no quorum rule matches is allowed by the allow rule.
func TestPrepareQuorum(t *testing.T) {
	reg, err := tools.NewRegistry(tools.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	a := &Activities{Tools: reg, Backends: map[string]backend.Backend{"local": &local.Backend{}}, DefaultBackend: "local",
		DefaultWorkdir: wd, ToolDefaults: config.ToolSettings{Escalation: "allow"}}
	pc, err := permission.Policy{Allow: []string{"Bash(kubectl:*)"}, Deny: []string{"Bash(kubectl delete ns:*)"},
		Quorum: []permission.QuorumRule{{Rule: "Bash(kubectl delete:*)", Approvals: 2, RequireReason: true}}}.Context()
	if err != nil {
		t.Fatal(err)
	}
	prepare := func(cmd string) workflows.Prepared {
		t.Helper()
		in, _ := json.Marshal(map[string]string{"command": cmd})
		p, err := a.Prepare(context.Background(), workflows.PrepareInput{
			Call: model.ToolCall{ID: "c1", Name: "Bash", Input: in}, Permission: pc})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, cmd := range []string{"kubectl delete pod web-1", "kubectl get pods && kubectl delete pod web-1"} {
		p := prepare(cmd)
		if p.Decision.Behavior != permission.Ask || p.Policy.Quorum != 2 || !p.Policy.RequireReason ||
			len(p.Decision.Suggestions) != 0 || p.Policy.Escalation != workflows.EscalateDeny {
			t.Errorf("%s: %s %q quorum %d reason %v suggestions %v escalation %q", cmd, p.Decision.Behavior, p.Decision.Reason,
				p.Policy.Quorum, p.Policy.RequireReason, p.Decision.Suggestions, p.Policy.Escalation)
		}
		if !strings.Contains(p.Decision.Message, "2 distinct approvers") {
			t.Errorf("%s: message %q", cmd, p.Decision.Message)
		}
	}
	if p := prepare("kubectl delete ns prod"); p.Decision.Behavior != permission.Deny {
		t.Errorf("denied call: %s", p.Decision.Behavior)
	}
	if p := prepare("kubectl get pods"); p.Decision.Behavior != permission.Allow || p.Policy.Quorum != 0 {
		t.Errorf("control: %s quorum %d", p.Decision.Behavior, p.Policy.Quorum)
	}
}

// TestPrepareRecordsCallAndLayer: a verdict names its call and the layer
// that decided it, as the engine named it ("deny rule", not the reason's
// "Rule"), or the worker's ("quorum") when a quorum rule made an allowed
// call ask; an unknown tool's verdict names its call and no layer.
func TestPrepareRecordsCallAndLayer(t *testing.T) {
	reg, err := tools.NewRegistry(tools.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Tools: reg, Backends: map[string]backend.Backend{"local": &local.Backend{}}, DefaultBackend: "local",
		DefaultWorkdir: t.TempDir()}
	pc, err := permission.Policy{Allow: []string{"Bash(kubectl:*)"}, Deny: []string{"Bash(kubectl delete ns:*)"},
		Quorum: []permission.QuorumRule{{Rule: "Bash(kubectl delete pod:*)", Approvals: 2}}}.Context()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, tool, cmd string
		layer         permission.Layer
		behavior      permission.Behavior
	}{
		{"d1", "Bash", "kubectl delete ns prod", permission.LayerDenyRule, permission.Deny},
		{"a1", "Bash", "kubectl get pods", permission.LayerAllowRule, permission.Allow},
		{"q1", "Bash", "kubectl delete pod web-1", permission.LayerQuorum, permission.Ask},
		{"m1", "Bash", "touch x", permission.LayerMode, permission.Ask},
		{"u1", "NoSuchTool", "ls", "", ""},
	} {
		in, _ := json.Marshal(map[string]string{"command": c.cmd})
		p, err := a.Prepare(context.Background(), workflows.PrepareInput{
			Call: model.ToolCall{ID: c.id, Name: c.tool, Input: in}, Permission: pc, ToolFlags: true})
		if err != nil {
			t.Fatal(err)
		}
		if p.CallID != c.id || p.Layer != c.layer || p.Decision.Behavior != c.behavior {
			t.Errorf("%s (%s): call %q layer %q %s (%q), want call %q layer %q %s", c.id, c.cmd, p.CallID, p.Layer,
				p.Decision.Behavior, p.Decision.Reason, c.id, c.layer, c.behavior)
		}
	}
}
