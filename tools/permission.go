package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
)

// Call is one tool call to decide, with everything the decision needs
// resolved beforehand, so that no I/O happens inside it.
type Call struct {
	Tool  Tool
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
	Validator *Validator
}

// Decide is the one decision function for a tool call: it validates the
// input against the tool's schema (a *ValidationError, wrapped, when it
// does not fit) and runs permission.Decide on the tool bound to the
// call's workspace. The worker's Prepare, "starter permission check" and
// the inbox's role check all call it. The tool gets no backend: nothing
// inside the decision can touch the workspace. A Bash command is parsed
// once per call, whatever the number of rules.
func Decide(ctx context.Context, c Call) (permission.Verdict, error) {
	if c.Tool == nil {
		return permission.Verdict{}, errors.New("decide: no tool")
	}
	v := c.Validator
	if v == nil {
		v = &Validator{}
	}
	if err := v.Validate(c.Tool.Info(), c.Input); err != nil {
		return permission.Verdict{}, fmt.Errorf("decide %s: %w", c.Tool.Info().Name, err)
	}
	pc := permission.Context{}
	if c.Policy != nil {
		pc = *c.Policy
	}
	if pc.Mode == "" {
		pc.Mode = permission.ModeDefault
	}
	if c.Workdir != "" && !slices.Contains(pc.WorkingDirs, c.Workdir) {
		pc.WorkingDirs = append(slices.Clone(pc.WorkingDirs), c.Workdir)
	}
	env := &Env{Workdir: c.Workdir, Permission: &pc}
	b := bound{t: c.Tool, env: env, memo: &memo{home: cleanHome(c.Home), pc: &pc}}
	return permission.Decide(ctx, &pc, b, c.Input)
}

func cleanHome(h string) string {
	if h == "" || !path.IsAbs(h) {
		return ""
	}
	return path.Clean(h)
}

// ForPermission binds a tool to its environment and adapts it to the
// permission engine, filling in the defaults of AgentScope's ToolBase for
// the checker interfaces the tool does not implement. The backend's home
// is not resolved (~ paths are unknown); prefer Decide.
func ForPermission(t Tool, env *Env) permission.Tool {
	var pc *permission.Context
	if env != nil {
		pc = env.Permission
	}
	return bound{t: t, env: env, memo: &memo{pc: pc}}
}

// memo holds what one decision computes once: the backend's home, the
// policy, and the analysis of a Bash command.
type memo struct {
	home     string
	pc       *permission.Context
	input    string
	analysis *shell.Analysis
	// parses counts the analyses made (one per decision).
	parses int
}

type memoKey struct{}

// memoFrom returns the memo of the call being decided, or nil.
func memoFrom(ctx context.Context) *memo {
	m, _ := ctx.Value(memoKey{}).(*memo)
	return m
}

type bound struct {
	t    Tool
	env  *Env
	memo *memo
}

func (b bound) ctx(ctx context.Context) context.Context {
	if b.memo == nil {
		return ctx
	}
	return context.WithValue(ctx, memoKey{}, b.memo)
}

func (b bound) Name() string { return b.t.Info().Name }

func (b bound) CheckPermissions(ctx context.Context, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	if c, ok := b.t.(PermissionChecker); ok {
		return c.CheckPermissions(b.ctx(ctx), b.env, input, pc)
	}
	return permission.Decision{Behavior: permission.Passthrough}, nil
}

func (b bound) CheckReadOnly(ctx context.Context, input json.RawMessage) (bool, error) {
	if c, ok := b.t.(ReadOnlyChecker); ok {
		return c.CheckReadOnly(b.ctx(ctx), b.env, input)
	}
	return b.t.Info().ReadOnly, nil
}

func (b bound) MatchRule(ctx context.Context, content string, input json.RawMessage) (bool, error) {
	if m, ok := b.t.(RuleMatcher); ok {
		return m.MatchRule(b.ctx(ctx), b.env, content, input)
	}
	return content == "", nil
}

func (b bound) GenerateSuggestions(ctx context.Context, input json.RawMessage) ([]permission.Rule, error) {
	if s, ok := b.t.(Suggester); ok {
		return s.GenerateSuggestions(b.ctx(ctx), b.env, input)
	}
	return []permission.Rule{{Tool: b.Name(), Behavior: permission.Allow, Source: "suggested"}}, nil
}

// DecideOrAsk is Decide as the worker applies it: an input that does not
// fit the tool's schema gives invalid (the tool error the model reads)
// and no verdict; any other error fails closed to an ASK that says the
// check failed. The worker's Prepare and "starter permission check" both
// use it, so they answer alike.
func DecideOrAsk(ctx context.Context, c Call) (v permission.Verdict, invalid string) {
	v, err := Decide(ctx, c)
	var ve *ValidationError
	switch {
	case errors.As(err, &ve):
		return permission.Verdict{}, ve.Error()
	case err != nil:
		name := ""
		if c.Tool != nil {
			name = c.Tool.Info().Name
		}
		mode := permission.ModeDefault
		if c.Policy != nil && c.Policy.Mode != "" {
			mode = c.Policy.Mode
		}
		return permission.Verdict{Decision: permission.Decision{Behavior: permission.Ask,
			Message: "Permission required for " + name + ": the permission check failed (" + err.Error() + ")",
			Reason:  "Check failed: " + err.Error()}, Layer: "check failed", Mode: mode}, ""
	}
	return v, ""
}
