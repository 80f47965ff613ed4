package activities

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// TestListToolsSaysSandboxState: the worker's tools listing says what
// confines each backend's tool processes: OFF for a local backend with
// the sandbox turned off, the Landlock sandbox otherwise, nothing of
// its own for a backend that is not local, which is the default, and
// the worker's protected paths.
func TestListToolsSaysSandboxState(t *testing.T) {
	reg, err := tools.NewRegistry(tools.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		b    backend.Backend
		want string
	}{
		{"off", &local.Backend{Unsandboxed: true}, "OFF (backend.local.sandbox: off)"},
		{"on", &local.Backend{}, "on: landlock v"},
	} {
		a := &Activities{Tools: reg, Backends: map[string]backend.Backend{"local": c.b, "other": otherBackend{}}, DefaultBackend: "local",
			Protected: []string{"/srv/warden/data{,/**}"}}
		list, err := a.ListTools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Backends) != 2 || list.Backends[0].Name != "local" || !list.Backends[0].Default ||
			!strings.HasPrefix(list.Backends[0].Sandbox, c.want) || list.Backends[1].Sandbox != "" || list.Backends[1].Default {
			t.Errorf("%s: backends %+v, want local (default) %q", c.name, list.Backends, c.want)
		}
		if len(list.Protected) != 1 || len(list.Tools) != len(tools.Builtins()) {
			t.Errorf("%s: protected %q, %d tools", c.name, list.Protected, len(list.Tools))
		}
	}
}

// otherBackend is a backend that is not local: it says nothing of a
// sandbox.
type otherBackend struct{ backend.Backend }

// TestListToolsSaysNetwork: the listing names the tools whose calls the
// worker's settings give the network, with the hosts and the setting
// (network_hosts alone turns it on); the others are not listed.
func TestListToolsSaysNetwork(t *testing.T) {
	reg, err := tools.NewRegistry(tools.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Tools: reg, Backends: map[string]backend.Backend{"other": otherBackend{}}, DefaultBackend: "other",
		ToolSettings: map[string]config.ToolSettings{"Bash": {NetworkHosts: []string{"registry.npmjs.org"}}, "Grep": {Network: true}}}
	list, err := a.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []workflows.ToolNetwork{{Tool: "Bash", Hosts: []string{"registry.npmjs.org"}, By: "tools.Bash.network_hosts"},
		{Tool: "Grep", Hosts: []string{"*"}, By: "tools.Grep.network"}}
	slices.SortFunc(list.Network, func(a, b workflows.ToolNetwork) int { return strings.Compare(a.Tool, b.Tool) })
	if !reflect.DeepEqual(list.Network, want) {
		t.Errorf("network = %+v, want %+v", list.Network, want)
	}
}
