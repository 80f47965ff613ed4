package activities

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// Prepare decides a call: it reads the live policy the turn follows
// (the store's rules and remembered approvals: I/O), decides the call
// once with decide.Verdict, the one decision function ("permission
// check", what-if and the approvers' role check use it too), spends the
// single-use remembered approval the verdict names, and records the
// verdict. The workflow runs it as a local activity so the verdict is
// recorded.
func (a *Activities) Prepare(ctx context.Context, in workflows.PrepareInput) (workflows.Prepared, error) {
	// The verdict names its call and its kind (a local activity's marker
	// records its result, not its input, and the audit reads the kind
	// from it), and, below, the layer that decided.
	out := workflows.Prepared{CallID: in.Call.ID, Kind: in.Kind}
	t, ok := a.Tools.Get(in.Call.Name)
	if !ok || (len(in.Allowed) > 0 && !slices.Contains(in.Allowed, in.Call.Name)) {
		out.Invalid = fmt.Sprintf("ToolNotFoundError: The tool named '%s' doesn't exist.", in.Call.Name)
		return out, nil
	}
	out.Tool, out.Flags = toolOf(in, t.Info())
	pc := in.Permission
	var live workflows.PolicyState
	if in.LivePolicy != "" {
		var err error
		if live, err = a.policyState(ctx, in.LivePolicy); err != nil {
			return out, err
		}
		if err := live.Apply(&pc); err != nil {
			return out, err
		}
		out.PolicyVersion = live.Version
		out.Team, out.TeamVersion = live.Team, live.TeamVersion
	}
	env, call, sandboxOff, err := a.bind(ctx, in, t, &pc)
	if err != nil {
		return out, err
	}
	out.Workdir = call.Workdir
	call.Remembered, call.Now = live.Remembered, time.Now()
	call.Turn = decide.Turn{WorkflowID: in.WorkflowID, Agent: in.Agent, CallID: in.Call.ID}
	call.Session = in.Session
	call.Memo = &tools.Memo{}
	// Where the call's paths lead through the workspace's symbolic
	// links, read through its backend outside the decision (the local
	// backend reads its file system; Docker and E2B resolve none) and
	// recorded with the verdict, so what-if and the approvers' role check
	// decide them as this decision did.
	call.Links = backend.ResolveLinks(ctx, env.Backend, call.Dirs(), decide.LinkPaths(ctx, call))
	out.Links = call.Links
	v, invalid := decide.VerdictOrAsk(ctx, call)
	if invalid != "" {
		out.Invalid = invalid
		return out, nil
	}
	// A single-use approval the verdict used is spent with the store (an
	// Update, refused when another call spent it first); refused, the
	// call is decided again without it.
	for v.Remembered != "" {
		i := slices.IndexFunc(call.Remembered, func(r workflows.Remembered) bool { return r.ID == v.Remembered })
		r := call.Remembered[i]
		if !r.SingleUse || r.UsedBy == call.Turn.Key() || a.spend(ctx, in.LivePolicy, r.ID, call.Turn.Key()) == nil {
			out.Remembered = &r
			break
		}
		call.Remembered = slices.Delete(slices.Clone(call.Remembered), i, i+1)
		v, _ = decide.VerdictOrAsk(ctx, call)
	}
	if v.BypassImmune {
		// No allow rule silences the call: offer the approver none to
		// remember.
		v.Suggestions = nil
	}
	a.record(ctx, &out, in, env, call, v, sandboxOff)
	out.Layer = v.Layer
	out.Touches, out.Clears, out.WouldBe, out.Windows = v.Touches, v.Clears, v.WouldBe, v.Windows
	for _, w := range v.WouldBe {
		a.Metrics.WouldBe(string(w.Layer), string(w.Behavior))
	}
	if v.Layer == permission.LayerSession {
		a.Metrics.Session(sessionRule(v.Reason), string(v.Behavior))
	}
	if v.Behavior == permission.Ask || v.Behavior == permission.Passthrough {
		out.Policy.Quorum, out.Policy.RequireReason = v.Quorum, v.RequireReason
		if v.Quorum > 1 && out.Policy.Escalation == workflows.EscalateAllow {
			// A deadline is no approver: a call that needs several is
			// denied when its wait ends, never allowed.
			out.Policy.Escalation = workflows.EscalateDeny
		}
	}
	return out, nil
}

// toolOf is what a verdict records of its tool: the flags the workflow
// reads when the input asks for only those (PrepareInput.ToolFlags), not
// the description and schema the verdict's marker would carry; else its
// whole Info.
func toolOf(in workflows.PrepareInput, info calls.Info) (calls.Info, *workflows.ToolFlags) {
	if in.ToolFlags {
		f := workflows.FlagsOf(info)
		return calls.Info{}, &f
	}
	return info, nil
}

// bind binds the call to its environment and the policy pc, to which it
// adds the worker's own files: they are protected whatever the turn's
// policy says, and the turn cannot remove them. sandboxOff says the
// call's backend is a local one with the sandbox turned off (sandboxOf).
func (a *Activities) bind(ctx context.Context, in workflows.PrepareInput, t tools.Tool, pc *permission.Context) (env *tools.Env, call decide.Call, sandboxOff bool, err error) {
	env, err = a.env(in.Env, nil, pc)
	if err != nil {
		return nil, decide.Call{}, false, err
	}
	// The backend's home is resolved outside the decision: backends
	// resolve it once and keep it (the worker warms it at start), and an
	// unknown home only makes ~ paths ask.
	home, _ := env.Backend.Home(ctx)
	pc.Protected = append(slices.Clone(pc.Protected), a.Protected...)
	sandboxed, off := sandboxOf(env.Backend)
	return env, decide.Call{Tool: t, Input: in.Call.Input, Workdir: env.Workdir, Home: home, Policy: pc,
		Validator: &a.validator, State: in.State, Sandboxed: sandboxed, ToolNetwork: a.toolNetwork(t.Info().Name)}, off, nil
}

// toolNetwork is the network the worker's settings give every call of
// the tool: tools.NAME.network (any public host) or
// tools.NAME.network_hosts (those hosts; naming them turns the network
// on), or nil.
func (a *Activities) toolNetwork(name string) *permission.NetworkGrant {
	s := a.settings(name)
	return permission.SettingsNetwork(name, s.Network, s.NetworkHosts)
}

// record fills out with the verdict v: the decision, the call's run
// policy, its sandbox profile (sandboxOff as bind found it) and, for a
// call that waits, the preview its approver reads.
func (a *Activities) record(ctx context.Context, out *workflows.Prepared, in workflows.PrepareInput, env *tools.Env, call decide.Call, v permission.Verdict, sandboxOff bool) {
	info := call.Tool.Info()
	backendName := in.Env.Backend
	if backendName == "" {
		backendName = a.DefaultBackend
	}
	out.Decision = v.Decision
	out.ReadOnly = v.ReadOnly
	out.Policy = a.policy(info, out.ReadOnly, backendName)
	out.Policy.Notify = a.Notifier.Enabled()
	out.Policy.Chat = a.Chat != nil && a.Chat.Service != nil
	if out.Policy.Notify {
		out.Policy.RemindBefore = a.RemindBefore
	}
	prof := decide.Profile(ctx, call, v)
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
	a.decisionSpan(ctx, info.Name, in.Call.ID, string(in.Call.Input), v)
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

// sessionRule names the session rule of a verdict of the session layer
// for the metric's label.
func sessionRule(reason string) string {
	if strings.Contains(reason, "Rule of Two") {
		return "rule_of_two"
	}
	return "trifecta"
}
