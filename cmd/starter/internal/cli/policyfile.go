package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// LoadPolicy reads a permission policy file (config.ReadPolicy: a
// policy, or a config file whose permission section it reads) and
// refuses one whose rules' examples fail (decide.CheckExamples: a
// *decide.ExampleError naming each failing rule and example) or that has
// a content rule for a built-in tool that matches no content
// (decide.CheckPolicyRules), as the worker refuses it. Relative paths of path rules and examples resolve
// against the current directory.
func LoadPolicy(ctx context.Context, path string) (permission.Policy, error) {
	p, err := config.ReadPolicy(path)
	if err != nil {
		return p, err
	}
	if err := decide.CheckExamples(ctx, p, decide.ExampleOptions{}); err != nil {
		return p, fmt.Errorf("policy %s: %w", path, err)
	}
	if err := decide.CheckPolicyRules(decide.ToolLookup(tools.Builtins()), p); err != nil {
		return p, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}

// ReadLiveRules reads the allow, ask and deny rules a policy store is set
// to (SetPolicy) from a policy file, read like LoadPolicy reads it (at
// its top level or under permission:, rules in their long form read as
// their rule, examples that must hold). It refuses rules that do not
// parse and a file without any.
func ReadLiveRules(ctx context.Context, path string) (workflows.LiveRules, error) {
	p, err := LoadPolicy(ctx, path)
	if err != nil {
		return workflows.LiveRules{}, err
	}
	r := workflows.LiveRules{Allow: p.Allow, Ask: p.Ask, Deny: p.Deny}
	if _, _, _, err := r.Parse(); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Allow)+len(r.Ask)+len(r.Deny) == 0 {
		return r, errors.New(path + ": no allow, ask or deny rules")
	}
	return r, nil
}

// PolicyContext is the permission context of a turn or a check: the
// policy of file (LoadPolicy) in place of base when file is not empty,
// with mode in place of its mode when mode is not empty.
func PolicyContext(ctx context.Context, base permission.Policy, file string, mode permission.Mode) (permission.Context, error) {
	p := base
	if file != "" {
		var err error
		if p, err = LoadPolicy(ctx, file); err != nil {
			return permission.Context{}, err
		}
	}
	if mode != "" {
		p.Mode = mode
	}
	return p.Context()
}
