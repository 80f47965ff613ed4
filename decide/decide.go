// Package decide is warden's decision of a tool call: it validates the
// call's input, runs the tool's own input check and the permission engine
// (package permission) on the tool bound to the call's workspace, and
// gives the verdict, the sandbox profile the call runs in and the
// network it may reach. The worker's Prepare, "starter permission
// check", the rule examples and the approvers' role check all decide
// through it. Nothing in it does I/O: the tools it binds have no backend.
package decide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// Call is one tool call to decide, with everything the decision needs
// resolved beforehand, so that no I/O happens inside it.
type Call struct {
	Tool  tools.Tool
	Input json.RawMessage
	// Workdir is the workspace directory inside the backend; it is
	// always a working directory.
	Workdir string
	// Home is the backend user's home directory, resolved once per
	// backend outside the decision (backend.Backend.Home); "" means
	// unknown, which makes ~ paths unresolvable (they ask).
	Home string
	// Policy is the turn's permission context; nil means the default.
	Policy *permission.Context
	// Validator caches compiled schemas across calls; nil validates
	// without a cache.
	Validator *tools.Validator
	// State is the turn's tool state as the call will find it, for the
	// input checks that depend on it (an Edit of a file not read in this
	// turn); see State.Anticipate for calls decided together. nil means
	// unknown: those checks are left to the call itself.
	State *tools.State
	// Sandboxed says the call will run in the local kernel sandbox, which
	// sandbox.auto_allow requires.
	Sandboxed bool
	// ToolNetwork is the network the worker's settings give every call
	// of the tool (tools.NAME.network, tools.NAME.network_hosts); nil:
	// none.
	ToolNetwork *permission.NetworkGrant
	// Remembered are the remembered approvals of the live policy store
	// the turn follows (read beforehand: the worker's Prepare queries the
	// store, "permission check --live-policy" too); the first active one
	// whose scope covers Turn and that allows the call decides an ASK.
	// Quorum rules come with the Policy (permission.Context.Quorum).
	Remembered []calls.Remembered
	// Turn is the turn and call being decided: the remembered approvals'
	// scopes and single-use keys read it.
	Turn Turn
	// Now is the time remembered approvals' TTLs are checked at (zero:
	// none has expired).
	Now time.Time
	// Session is what the turn's (and its session's) earlier calls
	// touched, for the session rules (permission.SessionPolicy); nil:
	// nothing yet.
	Session *permission.Touched
	// Memo holds the call's Bash analysis: one parse per call across all
	// the layers and rules. nil: a fresh one per Verdict. Pass the same
	// memo to decide the same call again (a spent approval tried next).
	Memo *tools.Memo
	// Links are where the call's paths inside its working directories
	// (LinkPaths) lead through symbolic links, resolved beforehand like
	// Home (backend.ResolveLinks: the worker's Prepare through the
	// call's backend, "permission check" on the local file system,
	// what-if from the verdict's record): each such path is decided as
	// its target and as itself, the stricter winning, and the verdict's
	// message names both. nil: every path is decided as named.
	Links permission.Links
}

// Turn names the turn a call belongs to and the call.
type Turn struct {
	WorkflowID string
	// Agent is the turn's agent label (remembered approvals of the agent
	// scope).
	Agent  string
	CallID string
}

// Key is the call's key in the policy store: workflow id/call id, the
// UsedBy of a single-use remembered approval it spent.
func (t Turn) Key() string { return t.WorkflowID + "/" + t.CallID }

// Verdict is the one decision function for a tool call: it validates the
// input against the tool's schema (a *tools.ValidationError, wrapped,
// when it does not fit), runs the tool's own input check
// (tools.InputChecker: a *tools.InputError, wrapped, when the call would
// fail without running), and only then walks the decision's layers
// (Layers): the permission engine (permission.Evaluate) on the tool
// bound to the call's workspace, the sandbox auto-allow, the remembered
// approvals and the quorum rules, so that no call that cannot succeed is
// put to a human. The tool gets no backend: nothing inside the decision
// can touch the workspace. A Bash command is parsed once per call,
// whatever the number of rules, remembered approvals and quorum rules.
// The sandbox profile follows from the verdict (Profile).
func Verdict(ctx context.Context, c Call) (permission.Verdict, error) {
	if c.Tool == nil {
		return permission.Verdict{}, errors.New("decide: no tool")
	}
	v := c.Validator
	if v == nil {
		v = &tools.Validator{}
	}
	name := c.Tool.Info().Name
	if err := v.Validate(c.Tool.Info(), c.Input); err != nil {
		return permission.Verdict{}, fmt.Errorf("decide %s: %w", name, err)
	}
	pc := c.policy()
	if c.Workdir != "" && !slices.Contains(pc.WorkingDirs, c.Workdir) {
		pc.WorkingDirs = append(slices.Clone(pc.WorkingDirs), c.Workdir)
	}
	if ic, ok := c.Tool.(tools.InputChecker); ok {
		env := &tools.Env{Workdir: c.Workdir, Permission: &pc, State: c.State}
		if err := ic.CheckInput(ctx, env, c.Input); err != nil {
			return permission.Verdict{}, fmt.Errorf("decide %s: %w", name, err)
		}
	}
	// The permission checks do not depend on the tool state.
	if c.Memo == nil {
		c.Memo = &tools.Memo{}
	}
	d := &decision{c: c, pc: &pc, b: c.bind(&pc)}
	var verdict permission.Verdict
	for _, l := range layers() {
		var err error
		if verdict, err = l.apply(ctx, d, verdict); err != nil {
			return verdict, err
		}
	}
	return verdict, nil
}

// VerdictOrAsk is Verdict as the worker applies it: an input that does
// not fit the tool's schema or fails the tool's input check gives invalid
// (the tool error the model reads) and no verdict; any other error fails
// closed to an ASK that says the check failed. The worker's Prepare and
// "starter permission check" both use it, so they answer alike.
func VerdictOrAsk(ctx context.Context, c Call) (v permission.Verdict, invalid string) {
	v, err := Verdict(ctx, c)
	var ve *tools.ValidationError
	var ie *tools.InputError
	switch {
	case errors.As(err, &ve):
		return permission.Verdict{}, ve.Error()
	case errors.As(err, &ie):
		return permission.Verdict{}, ie.Message
	case err != nil:
		name := ""
		if c.Tool != nil {
			name = c.Tool.Info().Name
		}
		mode := c.policy().Mode
		return permission.Verdict{Decision: permission.Decision{Behavior: permission.Ask,
			Message: "Permission required for " + name + ": the permission check failed (" + err.Error() + ")",
			Reason:  "Check failed: " + err.Error()}, Layer: "check failed", Mode: mode}, ""
	}
	return v, ""
}

// policy is a copy of the call's policy, in the default mode when it
// names none.
func (c Call) policy() permission.Context {
	pc := permission.Context{}
	if c.Policy != nil {
		pc = *c.Policy
	}
	if pc.Mode == "" {
		pc.Mode = permission.ModeDefault
	}
	return pc
}

// bind binds the call's tool to its workspace under pc for one
// decision: the environment the tool's checker methods see holds the
// backend's home (cleaned; "" or a relative home is unknown), the
// call's links, the tool's settings network and the call's parse memo
// (a fresh one without), so that the methods called through the binding, in every
// layer, share the analysis of a Bash command.
func (c Call) bind(pc *permission.Context) bound {
	m := c.Memo
	if m == nil {
		m = &tools.Memo{}
	}
	return bind(c.Tool, &tools.Env{Workdir: c.Workdir, Permission: pc, Home: cleanHome(c.Home),
		ToolNetwork: c.ToolNetwork, Memo: m, Links: c.Links})
}

func cleanHome(h string) string {
	if h == "" || !path.IsAbs(h) {
		return ""
	}
	return path.Clean(h)
}

// Bind binds a tool to its environment and adapts it to the permission
// engine, filling in the defaults of AgentScope's ToolBase for the
// checker interfaces the tool does not implement. The environment's
// Home is the backend's home as resolved (empty: ~ paths are unknown);
// prefer Verdict.
func Bind(t tools.Tool, env *tools.Env) permission.Tool {
	if env == nil {
		env = &tools.Env{}
	}
	e := *env
	if e.Memo == nil {
		e.Memo = &tools.Memo{}
	}
	return bind(t, &e)
}

func bind(t tools.Tool, env *tools.Env) bound { return bound{t: t, env: env} }

// bound is a tool bound to one call's environment, as the permission
// engine sees it.
type bound struct {
	t   tools.Tool
	env *tools.Env
}

func (b bound) Name() string { return b.t.Info().Name }

func (b bound) CheckPermissions(ctx context.Context, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	if c, ok := b.t.(tools.PermissionChecker); ok {
		return c.CheckPermissions(ctx, b.env, input, pc)
	}
	return permission.Decision{Behavior: permission.Passthrough}, nil
}

func (b bound) CheckReadOnly(ctx context.Context, input json.RawMessage) (bool, error) {
	if c, ok := b.t.(tools.ReadOnlyChecker); ok {
		return c.CheckReadOnly(ctx, b.env, input)
	}
	return b.t.Info().ReadOnly, nil
}

func (b bound) MatchRule(ctx context.Context, content string, input json.RawMessage) (bool, error) {
	if m, ok := b.t.(tools.RuleMatcher); ok {
		return m.MatchRule(ctx, b.env, content, input)
	}
	if content == "" {
		return true, nil
	}
	// A content rule of a tool that cannot match content: refused, never
	// quietly unmatched (a deny rule that denies nothing).
	beh, _ := permission.RuleBehaviorFrom(ctx)
	return false, tools.Unmatchable(b.t, permission.Rule{Tool: b.Name(), Content: content, Behavior: beh})
}

func (b bound) GenerateSuggestions(ctx context.Context, input json.RawMessage) ([]permission.Rule, error) {
	if s, ok := b.t.(tools.Suggester); ok {
		return s.GenerateSuggestions(ctx, b.env, input)
	}
	return []permission.Rule{{Tool: b.Name(), Behavior: permission.Allow, Source: "suggested"}}, nil
}
