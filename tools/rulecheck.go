package tools

import (
	"errors"
	"fmt"

	"github.com/wardenhq/warden/permission"
)

// RuleContentChecker is a tool that says, when a policy loads, whether a
// rule's content can match its calls at all (default: a tool that
// implements RuleMatcher can match any content, one that does not can
// match none). CheckRule refuses a rule whose content the tool refuses.
type RuleContentChecker interface {
	CheckRuleContent(content string) error
}

// UnmatchableRuleError is a permission rule with content
// ("Tool(content)") for a tool that cannot match content: the rule would
// never match, so a deny rule would deny nothing and an allow rule allow
// nothing. Policies with one do not load (CheckRule, CheckRules), and a
// decision that meets one fails (the call asks, naming the rule).
type UnmatchableRuleError struct {
	Rule permission.Rule
	// Why says what the tool matches instead.
	Why string
}

// Error names the rule, its list and the tool.
func (e *UnmatchableRuleError) Error() string {
	b := string(e.Rule.Behavior)
	if b == "" {
		b = "a"
	}
	return fmt.Sprintf("%s rule %s can never match: %s", b, e.Rule, e.Why)
}

// noMatcher is the Why of a content rule for the tool name of source,
// which matches no content.
func noMatcher(name, source string) string {
	fix := ""
	switch source {
	case SourceFunction:
		fix = "; give it a matcher with tools.WithContentField or tools.WithMatcher"
	case SourceCustom:
		fix = "; implement tools.RuleMatcher on it"
	}
	return fmt.Sprintf("tool %s has no content matcher, so only the rule %s (every call of the tool) matches its calls%s", name, name, fix)
}

// CheckRule reports whether r can match a call of t: nil for a rule
// without content, or one for a tool that matches content (RuleMatcher,
// and its RuleContentChecker accepts the content); an
// *UnmatchableRuleError otherwise. A nil t (a tool the caller does not
// know) is not checked.
func CheckRule(t Tool, r permission.Rule) error {
	if t == nil || r.Content == "" {
		return nil
	}
	if c, ok := t.(RuleContentChecker); ok {
		if err := c.CheckRuleContent(r.Content); err != nil {
			return &UnmatchableRuleError{Rule: r, Why: err.Error()}
		}
		return nil
	}
	if _, ok := t.(RuleMatcher); ok {
		return nil
	}
	return &UnmatchableRuleError{Rule: r, Why: noMatcher(t.Info().Name, SourceOf(t))}
}

// CheckRules checks every rule of pc that names one of the tools lookup
// finds (Registry.Get; ToolLookup for a list): its allow, ask and deny
// rules and its quorum rules. Rules of tools lookup does not know (an
// MCP tool of another worker, a tool not registered yet) pass: where
// they meet the tool, the decision refuses them (the call asks, naming
// the rule). The error joins one *UnmatchableRuleError per rule.
func CheckRules(lookup func(name string) (Tool, bool), pc permission.Context) error {
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
func CheckPolicyRules(lookup func(name string) (Tool, bool), p permission.Policy) error {
	pc, err := p.Context()
	if err != nil {
		return err
	}
	return CheckRules(lookup, pc)
}

// ToolLookup finds tools of ts by name, for CheckRules.
func ToolLookup(ts []Tool) func(string) (Tool, bool) {
	return func(name string) (Tool, bool) {
		for _, t := range ts {
			if t.Info().Name == name {
				return t, true
			}
		}
		return nil, false
	}
}
