package activities

import (
	"context"
	"fmt"
	"slices"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// Prepare validates a call and decides it with tools.Decide, the one
// decision function (the CLI's "permission check" and the inbox's role
// check use it too). The workflow runs it as a local activity so the
// verdict is recorded.
func (a *Activities) Prepare(ctx context.Context, in workflows.PrepareInput) (workflows.Prepared, error) {
	t, ok := a.Tools.Get(in.Call.Name)
	if !ok || (len(in.Allowed) > 0 && !slices.Contains(in.Allowed, in.Call.Name)) {
		return workflows.Prepared{Invalid: fmt.Sprintf("ToolNotFoundError: The tool named '%s' doesn't exist.", in.Call.Name)}, nil
	}
	info := t.Info()
	out := workflows.Prepared{Tool: info}
	if in.ToolFlags {
		// What the workflow reads of the tool, not its description and
		// schema (the marker records the verdict).
		f := workflows.FlagsOf(info)
		out = workflows.Prepared{Flags: &f}
	}
	pc := in.Permission
	var live workflows.PolicyState
	if in.LivePolicy != "" {
		var err error
		if live, err = a.policyState(ctx, in.LivePolicy); err != nil {
			return out, err
		}
		if err := livePolicy(&pc, live); err != nil {
			return out, err
		}
		out.PolicyVersion = live.Version
	}
	env, call, sandboxOff, err := a.bind(ctx, in, t, &pc)
	if err != nil {
		return out, err
	}
	v, invalid := tools.DecideOrAsk(ctx, call)
	if invalid != "" {
		out.Invalid = invalid
		return out, nil
	}
	if in.LivePolicy != "" {
		if v, out.Remembered, err = a.remembered(ctx, in, live, call, v); err != nil {
			return out, err
		}
	}
	a.record(ctx, &out, in, env, call, v, sandboxOff)
	return out, nil
}

// bind binds the call to its environment and the policy pc, to which it
// adds the worker's own files: they are protected whatever the turn's
// policy says, and the turn cannot remove them. sandboxOff says the
// call's backend is a local one with the sandbox turned off (sandboxOf).
func (a *Activities) bind(ctx context.Context, in workflows.PrepareInput, t tools.Tool, pc *permission.Context) (env *tools.Env, call tools.Call, sandboxOff bool, err error) {
	env, err = a.env(in.Env, nil, pc)
	if err != nil {
		return nil, tools.Call{}, false, err
	}
	// The backend's home is resolved outside the decision: backends
	// resolve it once and keep it (the worker warms it at start), and an
	// unknown home only makes ~ paths ask.
	home, _ := env.Backend.Home(ctx)
	pc.Protected = append(slices.Clone(pc.Protected), a.Protected...)
	sandboxed, off := sandboxOf(env.Backend)
	return env, tools.Call{Tool: t, Input: in.Call.Input, Workdir: env.Workdir, Home: home, Policy: pc,
		Validator: &a.validator, State: in.State, Sandboxed: sandboxed, ToolNetwork: a.toolNetwork(t.Info().Name)}, off, nil
}

// toolNetwork is the network the worker's settings give every call of
// the tool: tools.NAME.network (any public host) or
// tools.NAME.network_hosts (those hosts; naming them turns the network
// on), or nil.
func (a *Activities) toolNetwork(name string) *tools.NetworkGrant {
	s := a.settings(name)
	return tools.SettingsNetwork(name, s.Network, s.NetworkHosts)
}

// record fills out with the verdict v: the decision, the call's run
// policy, its sandbox profile (sandboxOff as bind found it) and, for a
// call that waits, the preview its approver reads.
func (a *Activities) record(ctx context.Context, out *workflows.Prepared, in workflows.PrepareInput, env *tools.Env, call tools.Call, v permission.Verdict, sandboxOff bool) {
	info := call.Tool.Info()
	backendName := in.Env.Backend
	if backendName == "" {
		backendName = a.DefaultBackend
	}
	out.Decision = v.Decision
	out.ReadOnly = v.ReadOnly
	out.Policy = a.policy(info, out.ReadOnly, backendName)
	out.Policy.Notify = a.Notifier.Enabled()
	out.Policy.Chat = a.Chat != nil && a.Chat.Slack != nil
	if out.Policy.Notify {
		out.Policy.RemindBefore = a.RemindBefore
	}
	prof := tools.Profile(ctx, call, v)
	prof.Off = sandboxOff
	if l, ok := env.Backend.(interface{ CallLimits() *calls.Limits }); ok {
		// Recorded with the verdict: the call runs with these wherever
		// it runs, and its approver and the audit see them.
		prof.Limits = l.CallLimits()
	}
	if backendName != "local" {
		prof.Backend = backendName
	}
	out.Sandbox = &prof
	if v.Behavior == permission.Ask || v.Behavior == permission.Passthrough {
		// What the approver will be asked about, read on the call's backend.
		out.Preview = tools.Preview(backend.WithSandbox(ctx, &prof), env, info.Name, in.Call.Input)
	}
	a.Metrics.Decision(info.Name, string(v.Behavior))
}

// sandboxOf says whether calls on b run in the local kernel sandbox, and
// whether b is a local backend with the sandbox turned off.
func sandboxOf(b backend.Backend) (sandboxed, off bool) {
	s, ok := b.(interface{ Sandboxed() bool })
	if !ok {
		return false, false
	}
	return s.Sandboxed(), !s.Sandboxed()
}
