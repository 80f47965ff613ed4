package activities

import (
	"context"
	"maps"
	"slices"

	"github.com/wardenhq/warden/workflows"
)

// ListTools returns this worker's tool registry, each tool with its
// flags and source (workflows.ActivityTools), what confines each of its
// backends' tool processes (the local sandbox, OFF included), its
// protected paths and the tools its settings give the network.
func (a *Activities) ListTools(context.Context) (workflows.ToolsList, error) {
	out := workflows.ToolsList{Tools: a.Tools.Entries(), Protected: slices.Clone(a.Protected)}
	for _, name := range slices.Sorted(maps.Keys(a.Backends)) {
		st := workflows.BackendState{Name: name, Default: name == a.DefaultBackend}
		if s, ok := a.Backends[name].(interface{ SandboxState() string }); ok {
			st.Sandbox = s.SandboxState()
		}
		out.Backends = append(out.Backends, st)
	}
	for _, e := range out.Tools {
		if g := a.toolNetwork(e.Name); g != nil {
			out.Network = append(out.Network, workflows.ToolNetwork{Tool: e.Name, Hosts: g.Hosts, By: g.By})
		}
	}
	return out, nil
}
