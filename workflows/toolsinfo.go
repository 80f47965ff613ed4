package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/calls"
)

// A worker publishes its tool registry through a one-activity workflow:
// ToolsWorkflow runs ActivityTools on its own task queue and returns
// what the worker that ran the activity has registered (built-ins,
// function tools, MCP servers' tools), so a client sees what the
// model sees without reading the worker's config. `starter tools list`
// starts it.

// Names of the tools listing's workflow and activity.
const (
	// ToolsWorkflow is the listing's workflow type.
	ToolsWorkflow = "WardenTools"
	// ActivityTools returns the registry of the worker that runs it.
	ActivityTools = "warden.Tools"
	// ToolsIDPrefix starts the workflow id of every listing, so that
	// they are easy to filter out of (or find in) the namespace's
	// workflows.
	ToolsIDPrefix = "warden-tools-"
	// DefaultToolsWait bounds a listing whose ToolsInput names no wait.
	DefaultToolsWait = 10 * time.Second
)

// ToolsInput is the input of ToolsWorkflow.
type ToolsInput struct {
	// Wait bounds how long the activity may wait for a worker to take
	// it (schedule-to-start) and then run (0: DefaultToolsWait).
	Wait time.Duration `json:"wait,omitempty"`
}

// ToolsList is what ActivityTools and ToolsWorkflow return: the
// registry of one worker, in registration order.
type ToolsList struct {
	Tools []calls.Entry `json:"tools"`
	// Backends describe the worker's backends, by name: what protects
	// their tool processes (the local one's sandbox, OFF included).
	// Empty from a worker that predates them.
	Backends []BackendState `json:"backends,omitempty"`
	// Protected are the worker's own paths that no tool may read or
	// write (its resolved data directory, keys and config).
	Protected []string `json:"protected,omitempty"`
	// Network are the tools whose every call gets the network from the
	// worker's settings (tools.NAME.network, tools.NAME.network_hosts),
	// with the hosts and the setting; the other tools' calls get it
	// only from a turn's policy or an approval.
	Network []ToolNetwork `json:"network,omitempty"`
}

// ToolNetwork is the network a worker's settings give a tool's calls.
type ToolNetwork struct {
	Tool string `json:"tool"`
	// Hosts are the hosts they may reach ("*": any public host); By
	// names the setting.
	Hosts []string `json:"hosts"`
	By    string   `json:"by"`
}

// BackendState is what a worker says of one of its backends.
type BackendState struct {
	Name string `json:"name"`
	// Default is set for the backend a turn that names none runs on.
	Default bool `json:"default,omitempty"`
	// Sandbox says what confines its tool processes: for the local
	// backend "on: landlock v7, ..." or "OFF (backend.local.sandbox:
	// off): ...", for others "" (their own isolation: a container, a
	// microVM).
	Sandbox string `json:"sandbox,omitempty"`
}

// ListTools is the ToolsWorkflow: it runs ActivityTools once, on the
// workflow's task queue, and returns its answer. The activity is not
// retried: a worker that does not know it fails it at once, and the
// error says so.
func ListTools(ctx workflow.Context, in ToolsInput) (ToolsList, error) {
	wait := in.Wait
	if wait <= 0 {
		wait = DefaultToolsWait
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ScheduleToStartTimeout: wait,
		StartToCloseTimeout:    wait,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var out ToolsList
	err := workflow.ExecuteActivity(ctx, ActivityTools).Get(ctx, &out)
	return out, err
}
