package activities

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/calls"
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

// TestPrepareRecordsLimits: a call on a sandboxed local backend is
// recorded with the backend's limits, which its profile then shows;
// controls: the same backend unsandboxed, or with no limits, records
// none.
func TestPrepareRecordsLimits(t *testing.T) {
	reg, err := tools.NewRegistry(tools.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	lim := calls.Limits{Processes: 256, Memory: 512 << 20}
	for _, c := range []struct {
		b    *local.Backend
		want *calls.Limits
	}{
		{&local.Backend{Limits: lim}, &lim},
		{&local.Backend{Limits: lim, Unsandboxed: true}, nil},
		{&local.Backend{}, nil},
	} {
		a := &Activities{Tools: reg, Backends: map[string]backend.Backend{"local": c.b}, DefaultBackend: "local", DefaultWorkdir: t.TempDir()}
		p, err := a.Prepare(context.Background(), workflows.PrepareInput{
			Call:       model.ToolCall{ID: "c1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)},
			Permission: permission.Context{Mode: permission.ModeDefault},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Sandbox.Limits; (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("unsandboxed %v, limits %+v: recorded %+v", c.b.Unsandboxed, c.b.Limits, got)
		}
		if c.want != nil && !strings.Contains(p.Sandbox.String(), "limits processes 256, memory 512 MiB") {
			t.Errorf("profile text %q", p.Sandbox.String())
		}
	}
}
