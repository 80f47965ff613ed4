package activities

import (
	"context"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/tools"
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
