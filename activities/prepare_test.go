package activities

import (
	"context"
	"encoding/json"
	"slices"
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

// TestPrepareToolNetworkHosts: Prepare records the hosts the worker's
// settings give a tool (tools.NAME.network_hosts turns the network on
// and names them; tools.NAME.network is any public host) in the call's
// profile, and a call asking for a host they cover does not ask; the
// control, a tool without settings, has no network.
func TestPrepareToolNetworkHosts(t *testing.T) {
	reg, err := tools.NewRegistry(tools.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	prepare := func(settings map[string]config.ToolSettings, input string) workflows.Prepared {
		t.Helper()
		a := &Activities{Tools: reg, Backends: map[string]backend.Backend{"local": &local.Backend{}}, DefaultBackend: "local",
			DefaultWorkdir: wd, ToolSettings: settings}
		p, err := a.Prepare(context.Background(), workflows.PrepareInput{
			Call:       model.ToolCall{ID: "c1", Name: "Bash", Input: json.RawMessage(input)},
			Permission: permission.Context{Mode: permission.ModeDefault, Allow: []permission.Rule{{Tool: "Bash", Content: "go mod:*", Behavior: permission.Allow}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if p.Sandbox == nil {
			t.Fatalf("no profile: %+v", p)
		}
		return p
	}
	p := prepare(map[string]config.ToolSettings{"Bash": {NetworkHosts: []string{"proxy.golang.org"}}},
		`{"command":"go mod download","network_hosts":["proxy.golang.org"]}`)
	if p.Decision.Behavior != permission.Allow || !p.Sandbox.Network || !slices.Equal(p.Sandbox.Hosts, []string{"proxy.golang.org"}) ||
		p.Sandbox.NetworkBy != "tools.Bash.network_hosts" {
		t.Errorf("network_hosts: %s %q, profile %+v", p.Decision.Behavior, p.Decision.Reason, p.Sandbox)
	}
	p = prepare(map[string]config.ToolSettings{"Bash": {Network: true}}, `{"command":"go mod download"}`)
	if !slices.Equal(p.Sandbox.Hosts, []string{"*"}) || p.Sandbox.NetworkBy != "tools.Bash.network" {
		t.Errorf("network: profile %+v", p.Sandbox)
	}
	p = prepare(nil, `{"command":"go mod download"}`)
	if p.Sandbox.Network || !strings.Contains(p.Sandbox.String(), "network off") {
		t.Errorf("control: profile %+v", p.Sandbox)
	}
	p = prepare(nil, `{"command":"go mod download","network_hosts":["proxy.golang.org"]}`)
	if p.Decision.Behavior != permission.Ask || !strings.Contains(p.Decision.Reason, "proxy.golang.org") {
		t.Errorf("asked host without settings: %s %q", p.Decision.Behavior, p.Decision.Reason)
	}
}
