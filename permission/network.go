package permission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"gopkg.in/yaml.v3"
)

// NetworkRule is one entry of Sandbox.NetworkFor: the calls Rule
// matches get the network, to Hosts (none: any public host, "*").
// It is written as the rule alone ("Bash(npm install:*)") or as
// {rule, hosts, methods, paths}; a rule without hosts, methods or paths
// is written back as the plain string, so policies and recorded
// histories of the string form keep their bytes.
type NetworkRule struct {
	Rule  string   `json:"rule" yaml:"rule"`
	Hosts []string `json:"hosts,omitempty" yaml:"hosts,omitempty"`
	// Methods and Paths, when set, hold the HTTP(S) requests the rule's
	// calls send to its hosts to those methods (GET, HEAD) and those
	// paths ("/repos/**": the path globs of the file rules, "*" within a
	// segment, "**" any number of segments); the egress proxy sees each
	// request (it terminates TLS for those hosts) and refuses the others
	// with a 403 naming the rule.
	Methods []string `json:"methods,omitempty" yaml:"methods,omitempty"`
	Paths   []string `json:"paths,omitempty" yaml:"paths,omitempty"`
}

// plain reports whether n is written as its rule alone.
func (n NetworkRule) plain() bool {
	return len(n.Hosts) == 0 && len(n.Methods) == 0 && len(n.Paths) == 0
}

// NetworkRules makes string rules NetworkRules without hosts.
func NetworkRules(rules ...string) []NetworkRule {
	out := make([]NetworkRule, len(rules))
	for i, r := range rules {
		out[i] = NetworkRule{Rule: r}
	}
	return out
}

// AllowedHosts are the hosts the rule's calls may reach: Hosts, or "*".
func (n NetworkRule) AllowedHosts() []string {
	if len(n.Hosts) == 0 {
		return []string{"*"}
	}
	return n.Hosts
}

// Check reports a rule that does not parse or a host entry that is not
// valid.
func (n NetworkRule) Check() error {
	if _, err := ParseRule(n.Rule, Allow); err != nil {
		return err
	}
	for _, h := range n.Hosts {
		if err := CheckHost(h); err != nil {
			return fmt.Errorf("rule %s: %w", n.Rule, err)
		}
	}
	for _, m := range n.Methods {
		if m == "" || strings.ContainsFunc(m, func(r rune) bool { return r < 'A' || r > 'Z' }) {
			return fmt.Errorf("rule %s: method %q: an HTTP method in capitals (GET, HEAD, POST)", n.Rule, m)
		}
	}
	for _, p := range n.Paths {
		if !strings.HasPrefix(p, "/") {
			return fmt.Errorf("rule %s: path %q: must start with /", n.Rule, p)
		}
		if !doublestar.ValidatePattern(p) {
			return fmt.Errorf("rule %s: path %q: not a path pattern (*, **, ?, [class], {a,b})", n.Rule, p)
		}
	}
	return nil
}

// networkRuleFields is NetworkRule without its methods.
type networkRuleFields NetworkRule

// MarshalJSON writes a rule without hosts as its string.
func (n NetworkRule) MarshalJSON() ([]byte, error) {
	if n.plain() {
		return json.Marshal(n.Rule)
	}
	return json.Marshal(networkRuleFields(n))
}

// UnmarshalJSON reads the string form or {rule, hosts}, refusing other
// keys.
func (n *NetworkRule) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*n = NetworkRule{}
		return json.Unmarshal(b, &n.Rule)
	}
	var f networkRuleFields
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return fmt.Errorf("network_for: a rule is a string or {rule, hosts, methods, paths}: %w", err)
	}
	if strings.TrimSpace(f.Rule) == "" {
		return errors.New("network_for: {rule, hosts} needs its rule")
	}
	*n = NetworkRule(f)
	return nil
}

// MarshalYAML writes a rule without hosts as its string.
func (n NetworkRule) MarshalYAML() (any, error) {
	if n.plain() {
		return n.Rule, nil
	}
	return networkRuleFields(n), nil
}

// UnmarshalYAML reads the string form or {rule, hosts}, refusing other
// keys.
func (n *NetworkRule) UnmarshalYAML(v *yaml.Node) error {
	if v.Kind == yaml.ScalarNode {
		*n = NetworkRule{}
		return v.Decode(&n.Rule)
	}
	if v.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a network_for rule is a string or {rule, hosts}", v.Line)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if k := v.Content[i].Value; k != "rule" && k != "hosts" && k != "methods" && k != "paths" {
			return fmt.Errorf("line %d: unknown key %q in a network_for rule (want rule, hosts, methods, paths)", v.Content[i].Line, k)
		}
	}
	var f networkRuleFields
	if err := v.Decode(&f); err != nil {
		return err
	}
	if strings.TrimSpace(f.Rule) == "" {
		return fmt.Errorf("line %d: {rule, hosts} needs its rule", v.Line)
	}
	*n = NetworkRule(f)
	return nil
}
