package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
)

// bashCommand decodes Bash's input; a malformed input is an error.
func bashCommand(input json.RawMessage) (string, error) {
	var in BashInput
	if err := json.Unmarshal(input, &in); err != nil {
		return "", fmt.Errorf("bash input: %w", err)
	}
	return in.Command, nil
}

// shellConfig builds the analyser's view of env and pc: the workdir, the
// backend's home (unknown when it cannot be read, which makes ~ paths
// unresolvable) and the dangerous-path lists.
func shellConfig(ctx context.Context, env *Env, pc *permission.Context) shell.Config {
	var c shell.Config
	if env != nil {
		c.Workdir = env.Workdir
		if env.Backend != nil {
			if h, err := env.Backend.Home(ctx); err == nil {
				c.Home = h
			}
		}
	}
	if pc != nil {
		c.WorkingDirs = pc.WorkingDirs
		if pc.DangerousFiles != nil {
			c.DangerousFiles = *pc.DangerousFiles
			if c.DangerousFiles == nil {
				c.DangerousFiles = []string{}
			}
		}
		if pc.DangerousDirs != nil {
			c.DangerousDirs = *pc.DangerousDirs
			if c.DangerousDirs == nil {
				c.DangerousDirs = []string{}
			}
		}
	}
	return c
}

// CheckPermissions implements PermissionChecker with the layers of
// permission/shell (spec §2.1).
func (Bash) CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	cmd, err := bashCommand(input)
	if err != nil {
		return permission.Decision{}, err
	}
	mode := permission.ModeDefault
	if pc != nil && pc.Mode != "" {
		mode = pc.Mode
	}
	return shell.Analyze(cmd, shellConfig(ctx, env, pc)).Check(mode), nil
}

// CheckReadOnly implements ReadOnlyChecker: true only for commands the
// analyser fully understands and finds read-only.
func (Bash) CheckReadOnly(_ context.Context, _ *Env, input json.RawMessage) (bool, error) {
	cmd, err := bashCommand(input)
	if err != nil {
		return false, err
	}
	return shell.Analyze(cmd, shell.Config{}).ReadOnly(), nil
}

// MatchRule implements RuleMatcher, per simple command of a compound
// command; the rule's behaviour comes from permission.RuleBehaviorFrom.
func (Bash) MatchRule(ctx context.Context, _ *Env, content string, input json.RawMessage) (bool, error) {
	cmd, err := bashCommand(input)
	if err != nil {
		return false, err
	}
	b, _ := permission.RuleBehaviorFrom(ctx)
	return shell.Analyze(cmd, shell.Config{}).MatchRule(content, b), nil
}

// GenerateSuggestions implements Suggester with "prefix:*" rules.
func (Bash) GenerateSuggestions(_ context.Context, _ *Env, input json.RawMessage) ([]permission.Rule, error) {
	cmd, err := bashCommand(input)
	if err != nil {
		return nil, err
	}
	return shell.Analyze(cmd, shell.Config{}).Suggestions(), nil
}
