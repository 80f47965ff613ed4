package tools

import (
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

// Unmatchable is the *UnmatchableRuleError of the content rule r for t,
// a tool without a content matcher.
func Unmatchable(t Tool, r permission.Rule) error {
	return &UnmatchableRuleError{Rule: r, Why: noMatcher(t.Info().Name, SourceOf(t))}
}
