package permission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// RuleExamples are the examples a rule of a policy carries, written in
// the long form of a rule:
//
//	allow:
//	  - Bash(git status)                     # a plain rule
//	  - rule: Bash(npm run:*)                # a rule with examples
//	    match: ["npm run build", "npm run test -- -v"]
//	    not_match: ["npm install", "npm runx"]
//
// A match example is a call the rule must match, a not_match example one
// it must not. They are calls of the rule's tool: a command for Bash (and
// for dangerous_commands patterns), a path for the path tools (Read,
// Write, Edit, Glob, Grep), the JSON input for any other tool. A policy
// whose examples fail does not load (decide.CheckExamples, which the
// config loader calls).
type RuleExamples struct {
	// List is the list the rule is in: allow, ask, deny or
	// dangerous_commands.
	List string `json:"list"`
	// Index is the rule's 1-based position in its list.
	Index int `json:"index"`
	// Rule is the rule as written ("Bash(npm run:*)"), or the pattern of
	// a dangerous_commands entry.
	Rule     string   `json:"rule"`
	Match    []string `json:"match,omitempty"`
	NotMatch []string `json:"not_match,omitempty"`
}

// The lists of a policy whose entries may carry examples.
const (
	ListAllow             = "allow"
	ListAsk               = "ask"
	ListDeny              = "deny"
	ListDangerousCommands = "dangerous_commands"
)

// ruleLists are the keys of the lists whose entries may be written in
// the long form.
func ruleLists() []string {
	return []string{ListAllow, ListAsk, ListDeny, ListDangerousCommands}
}

// ruleSpec is one entry of a rule list: a plain string, or the long form
// {rule, match, not_match}.
type ruleSpec struct {
	Rule     string   `yaml:"rule" json:"rule"`
	Match    []string `yaml:"match,omitempty" json:"match,omitempty"`
	NotMatch []string `yaml:"not_match,omitempty" json:"not_match,omitempty"`
	// Enforce false tries the rule in log-only mode (Policy.LogOnly).
	Enforce *bool `yaml:"enforce,omitempty" json:"enforce,omitempty"`
}

// logOnly reports whether the entry is marked enforce: false; an error
// when a list cannot hold log-only entries.
func (s ruleSpec) logOnly(list string) (bool, error) {
	if s.Enforce == nil || *s.Enforce {
		return false, nil
	}
	if list == ListDangerousCommands {
		return false, fmt.Errorf("a dangerous_commands pattern cannot be log-only (enforce: false); write it as a log-only ask rule: log_only: {ask: [\"Bash(%s)\"]}", s.Rule)
	}
	return true, nil
}

// plainPolicy is Policy without its methods, for decoding.
type plainPolicy Policy

// list returns the rule list of p named key.
func (p *Policy) list(key string) *[]string {
	switch key {
	case ListAllow:
		return &p.Allow
	case ListAsk:
		return &p.Ask
	case ListDeny:
		return &p.Deny
	case ListDangerousCommands:
		return &p.DangerousCommands
	}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler: it reads the policy with
// unknown keys refused (at any depth, with their line), and the entries
// of allow, ask, deny and dangerous_commands as plain strings or in the
// long form with examples (RuleExamples, kept in Examples).
func (p *Policy) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		if n.Tag == "!!null" {
			return nil
		}
		return fmt.Errorf("line %d: a policy is a mapping (mode, allow, ask, deny, ...)", n.Line)
	}
	if err := knownKeys(n, reflect.TypeFor[Policy]()); err != nil {
		return err
	}
	var examples []RuleExamples
	var moved RuleLists
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		if !isRuleList(key) || val.Kind != yaml.SequenceNode {
			continue
		}
		kept := val.Content[:0:0]
		for j, e := range val.Content {
			if e.Kind != yaml.MappingNode {
				kept = append(kept, e)
				continue
			}
			var s ruleSpec
			if err := decodeSpecYAML(e, &s); err != nil {
				return fmt.Errorf("%s rule %d: %w", key, j+1, err)
			}
			lo, err := s.logOnly(key)
			if err != nil {
				return fmt.Errorf("line %d: %s rule %d: %w", e.Line, key, j+1, err)
			}
			if lo {
				moved.add(key, s.Rule)
				continue
			}
			if len(s.Match) > 0 || len(s.NotMatch) > 0 {
				examples = append(examples, RuleExamples{List: key, Index: len(kept) + 1, Rule: s.Rule, Match: s.Match, NotMatch: s.NotMatch})
			}
			// The entry is its rule from here on.
			kept = append(kept, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.Rule, Line: e.Line, Column: e.Column})
		}
		val.Content = kept
	}
	// Lists given again replace the old entries and their examples.
	old := p.Examples
	if err := n.Decode((*plainPolicy)(p)); err != nil {
		return err
	}
	p.Examples = mergeExamples(old, examples, func(list string) bool { return hasKey(n, list) })
	p.addLogOnly(moved)
	return nil
}

// decodeSpecYAML reads the long form of a rule, refusing unknown keys.
func decodeSpecYAML(e *yaml.Node, s *ruleSpec) error {
	for i := 0; i+1 < len(e.Content); i += 2 {
		switch k := e.Content[i].Value; k {
		case "rule", "match", "not_match", "enforce":
		default:
			return fmt.Errorf("line %d: unknown key %q in a rule (want rule, match, not_match, enforce)", e.Content[i].Line, k)
		}
	}
	if err := e.Decode(s); err != nil {
		return fmt.Errorf("line %d: %w", e.Line, err)
	}
	if strings.TrimSpace(s.Rule) == "" {
		return fmt.Errorf("line %d: the long form needs its rule: {rule: \"Bash(npm run:*)\", match: [...], not_match: [...]}", e.Line)
	}
	return nil
}

func isRuleList(key string) bool {
	for _, l := range ruleLists() {
		if l == key {
			return true
		}
	}
	return false
}

func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

// mergeExamples keeps the old examples of the lists not given again.
func mergeExamples(old, fresh []RuleExamples, given func(list string) bool) []RuleExamples {
	var out []RuleExamples
	for _, e := range old {
		if !given(e.List) {
			out = append(out, e)
		}
	}
	return append(out, fresh...)
}

// knownKeys refuses mapping keys of n that no yaml tag of t names, at
// any depth of the structs t holds, as the yaml decoder's KnownFields
// does (an Unmarshaler's own decoding does not inherit that setting).
func knownKeys(n *yaml.Node, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for _, e := range n.Content {
			if err := knownKeys(e, t.Elem()); err != nil {
				return err
			}
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			fields[name] = f.Type
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			if !ok {
				return fmt.Errorf("line %d: field %s not found in type %s", k.Line, k.Value, t)
			}
			if err := knownKeys(n.Content[i+1], ft); err != nil {
				return err
			}
		}
	}
	return nil
}

// MarshalYAML implements yaml.Marshaler: the rules that carry examples
// are written in the long form, the others as strings. Examples whose
// rule no longer sits at their Index (the lists were changed after
// reading) are left out: the rules are written as they are.
func (p Policy) MarshalYAML() (any, error) {
	var n yaml.Node
	if err := n.Encode(plainPolicy(p)); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	for _, ex := range p.Examples {
		if !p.exampleFits(ex) {
			continue
		}
		seq := mapValue(&n, ex.List)
		if seq == nil || ex.Index > len(seq.Content) {
			continue
		}
		var e yaml.Node
		if err := e.Encode(ruleSpec{Rule: ex.Rule, Match: ex.Match, NotMatch: ex.NotMatch}); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		seq.Content[ex.Index-1] = &e
	}
	return &n, nil
}

// exampleFits reports whether ex's rule is still the rule at ex.Index
// of its list.
func (p *Policy) exampleFits(ex RuleExamples) bool {
	l := p.list(ex.List)
	return l != nil && ex.Index >= 1 && ex.Index <= len(*l) && (*l)[ex.Index-1] == ex.Rule
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// UnmarshalJSON implements json.Unmarshaler like UnmarshalYAML: unknown
// keys are refused, and rule entries are strings or the long form.
func (p *Policy) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	var examples []RuleExamples
	var moved RuleLists
	for _, key := range ruleLists() {
		raw, ok := m[key]
		if !ok {
			continue
		}
		var entries []json.RawMessage
		if err := json.Unmarshal(raw, &entries); err != nil {
			return fmt.Errorf("policy: %s: %w", key, err)
		}
		rules := make([]string, 0, len(entries))
		for j, e := range entries {
			e = bytes.TrimSpace(e)
			if len(e) == 0 || e[0] != '{' {
				var r string
				if err := json.Unmarshal(e, &r); err != nil {
					return fmt.Errorf("policy: %s rule %d: a rule is a string or {rule, match, not_match, enforce}: %w", key, j+1, err)
				}
				rules = append(rules, r)
				continue
			}
			var s ruleSpec
			dec := json.NewDecoder(bytes.NewReader(e))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				return fmt.Errorf("policy: %s rule %d: %w", key, j+1, err)
			}
			if strings.TrimSpace(s.Rule) == "" {
				return fmt.Errorf("policy: %s rule %d: the long form needs its rule", key, j+1)
			}
			lo, err := s.logOnly(key)
			if err != nil {
				return fmt.Errorf("policy: %s rule %d: %w", key, j+1, err)
			}
			if lo {
				moved.add(key, s.Rule)
				continue
			}
			rules = append(rules, s.Rule)
			if len(s.Match) > 0 || len(s.NotMatch) > 0 {
				examples = append(examples, RuleExamples{List: key, Index: len(rules), Rule: s.Rule, Match: s.Match, NotMatch: s.NotMatch})
			}
		}
		fixed, err := json.Marshal(rules)
		if err != nil {
			return fmt.Errorf("policy: %w", err)
		}
		m[key] = fixed
	}
	fixed, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	old := p.Examples
	dec := json.NewDecoder(bytes.NewReader(fixed))
	dec.DisallowUnknownFields()
	if err := dec.Decode((*plainPolicy)(p)); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	p.Examples = mergeExamples(old, examples, func(list string) bool { _, ok := m[list]; return ok })
	p.addLogOnly(moved)
	return nil
}

// MarshalJSON implements json.Marshaler: the rules that carry examples
// are written in the long form, as in MarshalYAML.
func (p Policy) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(plainPolicy(p))
	if err != nil || len(p.Examples) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	for _, key := range ruleLists() {
		l := p.list(key)
		if l == nil || len(*l) == 0 {
			continue
		}
		entries := make([]any, len(*l))
		for i, r := range *l {
			entries[i] = r
		}
		for _, ex := range p.Examples {
			if ex.List == key && p.exampleFits(ex) {
				entries[ex.Index-1] = ruleSpec{Rule: ex.Rule, Match: ex.Match, NotMatch: ex.NotMatch}
			}
		}
		if m[key], err = json.Marshal(entries); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return out, nil
}

// addLogOnly appends the entries marked enforce: false to LogOnly.
func (p *Policy) addLogOnly(moved RuleLists) {
	if len(moved.Allow)+len(moved.Ask)+len(moved.Deny) == 0 {
		return
	}
	if p.LogOnly == nil {
		p.LogOnly = &RuleLists{}
	}
	p.LogOnly.Allow = append(p.LogOnly.Allow, moved.Allow...)
	p.LogOnly.Ask = append(p.LogOnly.Ask, moved.Ask...)
	p.LogOnly.Deny = append(p.LogOnly.Deny, moved.Deny...)
}
