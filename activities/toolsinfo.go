package activities

import (
	"context"
	"maps"
	"slices"

	"github.com/wardenhq/warden/workflows"
)

// ListTools returns this worker's tool registry, each tool with its
// flags and source (workflows.ActivityTools), what confines each of its
// backends' tool processes (the local sandbox, OFF included) and its
// protected paths.
func (a *Activities) ListTools(context.Context) (workflows.ToolsList, error) {
	out := workflows.ToolsList{Tools: a.Tools.Entries(), Protected: slices.Clone(a.Protected)}
	for _, name := range slices.Sorted(maps.Keys(a.Backends)) {
		st := workflows.BackendState{Name: name, Default: name == a.DefaultBackend}
		if s, ok := a.Backends[name].(interface{ SandboxState() string }); ok {
			st.Sandbox = s.SandboxState()
		}
		out.Backends = append(out.Backends, st)
	}
	return out, nil
}
