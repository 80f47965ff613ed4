package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// Prepare validates a call and runs the permission engine on it. The
// workflow runs it as a local activity so the verdict is recorded.
func (a *Activities) Prepare(ctx context.Context, in workflows.PrepareInput) (workflows.Prepared, error) {
	t, ok := a.Tools.Get(in.Call.Name)
	if !ok || (len(in.Allowed) > 0 && !slices.Contains(in.Allowed, in.Call.Name)) {
		return workflows.Prepared{Invalid: fmt.Sprintf("ToolNotFoundError: The tool named '%s' doesn't exist.", in.Call.Name)}, nil
	}
	info := t.Info()
	out := workflows.Prepared{Tool: info}
	if err := a.validator.Validate(info, in.Call.Input); err != nil {
		var ve *tools.ValidationError
		if errors.As(err, &ve) {
			out.Invalid = ve.Error()
			return out, nil
		}
		return out, fmt.Errorf("validate %s: %w", info.Name, err)
	}
	pc := in.Permission
	if pc.Mode == "" {
		pc.Mode = permission.ModeDefault
	}
	env, err := a.env(in.Env, nil, &pc)
	if err != nil {
		return out, err
	}
	backendName := in.Env.Backend
	if backendName == "" {
		backendName = a.DefaultBackend
	}
	if env.Workdir != "" && !slices.Contains(pc.WorkingDirs, env.Workdir) {
		pc.WorkingDirs = append(slices.Clone(pc.WorkingDirs), env.Workdir)
	}
	pt := tools.ForPermission(t, env)
	d, err := permission.Evaluate(ctx, &pc, pt, in.Call.Input)
	if err != nil {
		// The engine fails closed: an error in a check asks a human.
		d = permission.Decision{Behavior: permission.Ask, Message: "Permission required for " + info.Name,
			Reason: "Check failed: " + err.Error()}
	}
	out.Decision = d
	if ro, err := pt.CheckReadOnly(ctx, in.Call.Input); err == nil {
		out.ReadOnly = ro
	}
	out.Policy = a.policy(info, out.ReadOnly, backendName)
	out.Policy.Notify = a.Notifier != nil && len(a.Notifier.URLs) > 0
	a.Metrics.decision(info.Name, string(d.Behavior))
	return out, nil
}
