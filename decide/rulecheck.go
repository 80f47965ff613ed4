package decide

import (
	"errors"
	"fmt"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// CheckRule reports whether r can match a call of t: nil for a rule
// without content, or one for a tool that matches content (RuleMatcher,
// and its RuleContentChecker accepts the content); an
// *UnmatchableRuleError otherwise. A nil t (a tool the caller does not
// know) is not checked.
func CheckRule(t tools.Tool, r permission.Rule) error {
	if t == nil || r.Content == "" {
		return nil
	}
	if c, ok := t.(tools.RuleContentChecker); ok {
		if err := c.CheckRuleContent(r.Content); err != nil {
			return &tools.UnmatchableRuleError{Rule: r, Why: err.Error()}
		}
		return nil
	}
	if _, ok := t.(tools.RuleMatcher); ok {
		return nil
	}
	return tools.Unmatchable(t, r)
}

// CheckRules checks every rule of pc that names one of the tools lookup
// finds (Registry.Get; ToolLookup for a list): its allow, ask and deny
// rules and its quorum rules. Rules of tools lookup does not know (an
// MCP tool of another worker, a tool not registered yet) pass: where
// they meet the tool, the decision refuses them (the call asks, naming
// the rule). The error joins one *UnmatchableRuleError per rule.
func CheckRules(lookup func(name string) (tools.Tool, bool), pc permission.Context) error {
	var errs []error
	check := func(r permission.Rule) {
		if t, ok := lookup(r.Tool); ok {
			if err := CheckRule(t, r); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, list := range [][]permission.Rule{pc.Deny, pc.Ask, pc.Allow} {
		for _, r := range list {
			check(r)
		}
	}
	for _, q := range pc.Quorum {
		r, err := permission.ParseRule(q.Rule, permission.Ask)
		if err != nil {
			errs = append(errs, fmt.Errorf("quorum rule %q: %w", q.Rule, err))
			continue
		}
		r.Behavior = "quorum"
		check(r)
	}
	return errors.Join(errs...)
}

// CheckPolicyRules is CheckRules on the rules of the policy p (which
// must parse, permission.Policy.Context).
func CheckPolicyRules(lookup func(name string) (tools.Tool, bool), p permission.Policy) error {
	pc, err := p.Context()
	if err != nil {
		return err
	}
	return CheckRules(lookup, pc)
}

// ToolLookup finds tools of ts by name, for CheckRules.
func ToolLookup(ts []tools.Tool) func(string) (tools.Tool, bool) {
	return func(name string) (tools.Tool, bool) {
		for _, t := range ts {
			if t.Info().Name == name {
				return t, true
			}
		}
		return nil, false
	}
}
