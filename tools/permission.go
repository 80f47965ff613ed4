package tools

import (
	"context"
	"encoding/json"

	"github.com/wardenhq/warden/permission"
)

// ForPermission binds a tool to its environment and adapts it to the
// permission engine, filling in the defaults of AgentScope's ToolBase for
// the checker interfaces the tool does not implement.
func ForPermission(t Tool, env *Env) permission.Tool { return bound{t: t, env: env} }

type bound struct {
	t   Tool
	env *Env
}

func (b bound) Name() string { return b.t.Info().Name }

func (b bound) CheckPermissions(ctx context.Context, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	if c, ok := b.t.(PermissionChecker); ok {
		return c.CheckPermissions(ctx, b.env, input, pc)
	}
	return permission.Decision{Behavior: permission.Passthrough}, nil
}

func (b bound) CheckReadOnly(ctx context.Context, input json.RawMessage) (bool, error) {
	if c, ok := b.t.(ReadOnlyChecker); ok {
		return c.CheckReadOnly(ctx, b.env, input)
	}
	return b.t.Info().ReadOnly, nil
}

func (b bound) MatchRule(ctx context.Context, content string, input json.RawMessage) (bool, error) {
	if m, ok := b.t.(RuleMatcher); ok {
		return m.MatchRule(ctx, b.env, content, input)
	}
	return content == "", nil
}

func (b bound) GenerateSuggestions(ctx context.Context, input json.RawMessage) ([]permission.Rule, error) {
	if s, ok := b.t.(Suggester); ok {
		return s.GenerateSuggestions(ctx, b.env, input)
	}
	return []permission.Rule{{Tool: b.Name(), Behavior: permission.Allow, Source: "suggested"}}, nil
}
