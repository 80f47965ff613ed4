package workflows

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// TestTouchSecretUse: a call whose requests the egress proxy brokered a
// secret into touches the private leg ("secret GH_TOKEN used for
// api.github.com") beside its network touches; the same call without
// the secret touches only the network; a call the proxy let nothing
// through for touches nothing.
func TestTouchSecretUse(t *testing.T) {
	run := func(conns []calls.Connection) *permission.Touched {
		tr := &turn{}
		s := &slot{Call: model.ToolCall{ID: "c1", Name: "Bash"},
			Prep: Prepared{Sandbox: &calls.Sandbox{}, Touches: []permission.Touch{
				{Leg: permission.LegOut, Tool: "Bash", What: "network", Network: true},
				{Leg: permission.LegUntrusted, Tool: "Bash", What: "network", Network: true}}},
			Result: &calls.Result{State: calls.StateSuccess, Metadata: map[string]any{"connections": conns}}}
		tr.touch(s)
		return tr.Touched
	}
	got := run([]calls.Connection{{Host: "api.github.com", Allowed: true, Secrets: "GH_TOKEN"}, {Host: "example.com", Allowed: true}})
	if got == nil {
		t.Fatal("nothing touched")
	}
	priv := got.Of(permission.LegPrivate)
	if len(priv) != 1 || priv[0].What != "secret GH_TOKEN used for api.github.com" || priv[0].CallID != "c1" {
		t.Errorf("private leg: %+v", priv)
	}
	if out := got.Of(permission.LegOut); len(out) != 1 || !strings.Contains(out[0].What, "api.github.com, example.com") {
		t.Errorf("out leg: %+v", out)
	}
	// Control: the same connections without the secret.
	if got := run([]calls.Connection{{Host: "api.github.com", Allowed: true}}); got == nil || len(got.Of(permission.LegPrivate)) != 0 || len(got.Of(permission.LegOut)) != 1 {
		t.Errorf("without the secret: %+v", got)
	}
	// A refused connection carried no secret anywhere.
	if got := run([]calls.Connection{{Host: "api.github.com", Allowed: false, Secrets: "GH_TOKEN"}}); got != nil && len(got.Of(permission.LegPrivate)) != 0 {
		t.Errorf("refused connection: %+v", got)
	}
}
