package activities

import (
	"context"

	"github.com/wardenhq/warden/workflows"
)

// ListTools returns this worker's tool registry, each tool with its
// flags and source (workflows.ActivityTools).
func (a *Activities) ListTools(context.Context) (workflows.ToolsList, error) {
	return workflows.ToolsList{Tools: a.Tools.Entries()}, nil
}
