package permission

import (
	"context"
	"fmt"
	"strings"
)

// ParseRule parses a rule written as "Tool" or "Tool(content)" and gives
// it behaviour b. The tool name may not contain parentheses or spaces; the
// content is everything between the first "(" and the final ")", so it may
// itself contain parentheses. "Tool()" is the same as "Tool".
func ParseRule(s string, b Behavior) (Rule, error) {
	switch b {
	case Allow, Ask, Deny:
	default:
		return Rule{}, fmt.Errorf("rule %q: invalid behavior %q", s, b)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return Rule{}, fmt.Errorf("empty %s rule", b)
	}
	name, content := s, ""
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return Rule{}, fmt.Errorf("rule %q: missing closing parenthesis", s)
		}
		name, content = strings.TrimSpace(s[:i]), s[i+1:len(s)-1]
	} else if strings.ContainsRune(s, ')') {
		return Rule{}, fmt.Errorf("rule %q: unbalanced parenthesis", s)
	}
	if name == "" {
		return Rule{}, fmt.Errorf("rule %q: missing tool name", s)
	}
	if strings.ContainsAny(name, " \t()") {
		return Rule{}, fmt.Errorf("rule %q: invalid tool name %q", s, name)
	}
	return Rule{Tool: name, Content: content, Behavior: b}, nil
}

// String renders the rule the way users write it: "Tool" or
// "Tool(content)". It is the inverse of ParseRule.
func (r Rule) String() string {
	if r.Content == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Content + ")"
}

// AddRule appends r to the list of its behaviour. Rules with any other
// behaviour (Passthrough, empty) are ignored, as in AgentScope.
func (c *Context) AddRule(r Rule) {
	switch r.Behavior {
	case Allow:
		c.Allow = append(c.Allow, r)
	case Ask:
		c.Ask = append(c.Ask, r)
	case Deny:
		c.Deny = append(c.Deny, r)
	}
}

// Policy is the user-facing rules file format, read from YAML or JSON
// (the --rules file and the permission: key of temporal-dev.yaml). Rules
// are written as strings, e.g. "Bash(npm run:*)", or in the long form
// with examples, {rule: "Bash(npm run:*)", match: ["npm run build"],
// not_match: ["npm install"]} (see RuleExamples).
type Policy struct {
	Mode        Mode     `yaml:"mode,omitempty" json:"mode,omitempty"`
	WorkingDirs []string `yaml:"working_dirs,omitempty" json:"working_dirs,omitempty"`
	Allow       []string `yaml:"allow,omitempty" json:"allow,omitempty"`
	Ask         []string `yaml:"ask,omitempty" json:"ask,omitempty"`
	Deny        []string `yaml:"deny,omitempty" json:"deny,omitempty"`
	// DangerousFiles and DangerousDirs replace the default lists when
	// set; an empty list turns the check off.
	DangerousFiles *[]string `yaml:"dangerous_files,omitempty" json:"dangerous_files,omitempty"`
	DangerousDirs  *[]string `yaml:"dangerous_dirs,omitempty" json:"dangerous_dirs,omitempty"`
	// SensitivePaths add to DefaultSensitivePaths (they never replace
	// them): doublestar patterns over absolute paths whose reads and
	// writes ask even inside the working directories.
	SensitivePaths []string `yaml:"sensitive_paths,omitempty" json:"sensitive_paths,omitempty"`
	// DangerousCommands add Bash command patterns ("terraform
	// destroy:*") to the built-in dangerous-command checks: a matching
	// command always asks, whatever the allow rules say
	// (Context.DangerousCommands).
	DangerousCommands []string `yaml:"dangerous_commands,omitempty" json:"dangerous_commands,omitempty"`
	// Sandbox shapes the local sandbox (network, auto-allow).
	Sandbox *Sandbox `yaml:"sandbox,omitempty" json:"sandbox,omitempty"`
	// Protected are set by the worker's configuration (its data
	// directory and config file), never read from a file.
	Protected []string `yaml:"-" json:"-"`
	// Quorum lists the calls that need more than one approver's allow
	// (a two-person rule): {rule: "Bash(kubectl delete:*)", approvals: 2}.
	Quorum []QuorumRule `yaml:"quorum,omitempty" json:"quorum,omitempty"`
	// RequireReason makes every answer to the turn's waiting calls carry
	// a reason (QuorumRule.RequireReason asks it of a rule's calls only).
	RequireReason bool `yaml:"require_reason,omitempty" json:"require_reason,omitempty"`
	// Session are the rules that see what the session touched
	// (SessionPolicy), Limits the counts per window (WindowLimit).
	Session *SessionPolicy `yaml:"session,omitempty" json:"session,omitempty"`
	Limits  []WindowLimit  `yaml:"limits,omitempty" json:"limits,omitempty"`
	// LogOnly are rules tried in log-only mode: what they would decide
	// is recorded with each verdict (Verdict.WouldBe), never applied. A
	// rule of allow, ask or deny written in the long form with
	// "enforce: false" is moved here when the policy is read.
	LogOnly *RuleLists `yaml:"log_only,omitempty" json:"log_only,omitempty"`
	// Examples are the match and not_match examples of the rules written
	// in the long form ({rule, match, not_match}), read with the policy
	// (UnmarshalYAML, UnmarshalJSON) and checked by decide.CheckExamples.
	Examples []RuleExamples `yaml:"-" json:"-"`
}

// RuleLists are rules by behaviour (Policy.LogOnly).
type RuleLists struct {
	Allow []string `yaml:"allow,omitempty" json:"allow,omitempty"`
	Ask   []string `yaml:"ask,omitempty" json:"ask,omitempty"`
	Deny  []string `yaml:"deny,omitempty" json:"deny,omitempty"`
}

// add appends rule to the list of behaviour b.
func (l *RuleLists) add(b string, rule string) {
	switch b {
	case ListAllow:
		l.Allow = append(l.Allow, rule)
	case ListAsk:
		l.Ask = append(l.Ask, rule)
	case ListDeny:
		l.Deny = append(l.Deny, rule)
	}
}

// QuorumRule is a two-person (or n-person) rule: a call the rule matches
// (as a deny rule would match it: any simple command of a Bash line)
// waits until Approvals distinct approvers allowed it. Any approver's
// deny ends the wait at once. The turn's requester never counts.
type QuorumRule struct {
	Rule      string `yaml:"rule" json:"rule"`
	Approvals int    `yaml:"approvals" json:"approvals"`
	// RequireReason makes every answer to the rule's calls carry a reason.
	RequireReason bool `yaml:"require_reason,omitempty" json:"require_reason,omitempty"`
}

// PolicySource is the Source given to rules that come from a Policy.
const PolicySource = "policy"

// ValidMode reports whether m is one of the five modes. The empty mode is
// not valid here; Context treats it as ModeDefault.
func ValidMode(m Mode) bool {
	switch m {
	case ModeDefault, ModeExplore, ModeAcceptEdits, ModeBypass, ModeDontAsk:
		return true
	}
	return false
}

// Context parses the policy into an engine Context. An empty mode means
// ModeDefault. Errors name the offending rule or mode.
func (p Policy) Context() (Context, error) {
	c := Context{Mode: p.Mode, DangerousFiles: p.DangerousFiles, DangerousDirs: p.DangerousDirs, Sandbox: p.Sandbox,
		Protected: p.Protected, RequireReason: p.RequireReason}
	for i, q := range p.Quorum {
		if _, err := ParseRule(q.Rule, Deny); err != nil {
			return Context{}, fmt.Errorf("policy: quorum rule %d: %w", i+1, err)
		}
		if q.Approvals < 1 {
			return Context{}, fmt.Errorf("policy: quorum rule %d %q: approvals must be at least 1 (2 for a two-person rule)", i+1, q.Rule)
		}
		c.Quorum = append(c.Quorum, q)
	}
	if p.Sandbox != nil {
		for i, n := range p.Sandbox.NetworkFor {
			if err := n.Check(); err != nil {
				return Context{}, fmt.Errorf("policy: sandbox.network_for rule %d: %w", i+1, err)
			}
		}
		for i, r := range p.Sandbox.UnixSocketsFor {
			if _, err := ParseRule(r, Allow); err != nil {
				return Context{}, fmt.Errorf("policy: sandbox.unix_sockets_for rule %d: %w", i+1, err)
			}
		}
		for _, h := range p.Sandbox.Hosts {
			if err := CheckHost(h); err != nil {
				return Context{}, fmt.Errorf("policy: sandbox.hosts: %w", err)
			}
		}
	}
	if err := p.Session.Check(); err != nil {
		return Context{}, fmt.Errorf("policy: %w", err)
	}
	c.Session = p.Session
	for i, w := range p.Limits {
		if err := w.Check(); err != nil {
			return Context{}, fmt.Errorf("policy: limits %d: %w", i+1, err)
		}
		c.Limits = append(c.Limits, w)
	}
	if p.LogOnly != nil {
		for _, l := range []struct {
			b     Behavior
			rules []string
		}{{Allow, p.LogOnly.Allow}, {Ask, p.LogOnly.Ask}, {Deny, p.LogOnly.Deny}} {
			for i, s := range l.rules {
				r, err := ParseRule(s, l.b)
				if err != nil {
					return Context{}, fmt.Errorf("policy: log_only %s rule %d: %w", l.b, i+1, err)
				}
				r.Source = PolicySource
				c.LogOnly = append(c.LogOnly, r)
			}
		}
	}
	for i, dc := range p.DangerousCommands {
		if strings.TrimSpace(dc) == "" {
			return Context{}, fmt.Errorf("policy: dangerous_commands pattern %d is empty", i+1)
		}
		if strings.HasPrefix(dc, "Bash(") {
			return Context{}, fmt.Errorf("policy: dangerous_commands pattern %d %q: write the command pattern without Bash(...), e.g. %q", i+1, dc, strings.TrimSuffix(strings.TrimPrefix(dc, "Bash("), ")"))
		}
		c.DangerousCommands = append(c.DangerousCommands, dc)
	}
	for _, sp := range p.SensitivePaths {
		if strings.TrimSpace(sp) == "" {
			return Context{}, fmt.Errorf("policy: empty sensitive path")
		}
		c.SensitivePaths = append(c.SensitivePaths, sp)
	}
	if c.Mode == "" {
		c.Mode = ModeDefault
	}
	if !ValidMode(c.Mode) {
		return Context{}, fmt.Errorf("policy: unknown mode %q (want default, explore, accept_edits, bypass or dont_ask)", p.Mode)
	}
	for _, d := range p.WorkingDirs {
		if strings.TrimSpace(d) == "" {
			return Context{}, fmt.Errorf("policy: empty working directory")
		}
		c.WorkingDirs = append(c.WorkingDirs, d)
	}
	lists := []struct {
		b     Behavior
		rules []string
	}{{Allow, p.Allow}, {Ask, p.Ask}, {Deny, p.Deny}}
	for _, l := range lists {
		for i, s := range l.rules {
			r, err := ParseRule(s, l.b)
			if err != nil {
				return Context{}, fmt.Errorf("policy: %s rule %d: %w", l.b, i+1, err)
			}
			r.Source = PolicySource
			c.AddRule(r)
		}
	}
	return c, nil
}

type ruleBehaviorKey struct{}

// WithRuleBehavior tells a tool's MatchRule which kind of rule it is
// matching. The engine sets it before every MatchRule call so tools can
// match allow rules more strictly than deny and ask rules (Bash requires
// every subcommand of a compound command to match an allow rule, while
// any subcommand matching a deny rule is enough).
func WithRuleBehavior(ctx context.Context, b Behavior) context.Context {
	return context.WithValue(ctx, ruleBehaviorKey{}, b)
}

// RuleBehaviorFrom returns the behaviour set by WithRuleBehavior. Callers
// that did not set one get Allow and false: tools should then use their
// strictest (allow) matching.
func RuleBehaviorFrom(ctx context.Context) (Behavior, bool) {
	b, ok := ctx.Value(ruleBehaviorKey{}).(Behavior)
	if !ok {
		return Allow, false
	}
	return b, true
}
