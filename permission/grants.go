package permission

import (
	"slices"
	"strings"
)

// NetworkGrant is one grant of the network to a call: the hosts it may
// reach through the egress proxy ("*": any public host) and what
// granted them, in the words of the profile's NetworkBy.
type NetworkGrant struct {
	Hosts []string `json:"hosts,omitempty"`
	By    string   `json:"by,omitempty"`
	// Methods and Paths, when set, hold the HTTP(S) requests to Hosts
	// to them (NetworkRule.Methods, Paths).
	Methods []string `json:"methods,omitempty"`
	Paths   []string `json:"paths,omitempty"`
}

// NetworkGrants are the grants of the network a call of the tool name
// gets from the policy pc and the tool's settings (tool): the turn's
// sandbox.network (with sandbox.hosts), the first sandbox.network_for
// rule that matches the call (match says whether a rule content
// matches it), and tools.NAME.network / network_hosts.
func NetworkGrants(name string, pc *Context, tool *NetworkGrant, match func(content string) bool) []NetworkGrant {
	var out []NetworkGrant
	if pc != nil && pc.Sandbox != nil {
		sb := pc.Sandbox
		if sb.Network {
			h := sb.Hosts
			if len(h) == 0 {
				h = []string{"*"}
			}
			by := "the turn's policy: sandbox.network"
			if len(sb.Hosts) > 0 {
				by += " with sandbox.hosts"
			}
			out = append(out, NetworkGrant{Hosts: h, By: by})
		}
		if r, ok := networkRuleFor(name, sb.NetworkFor, match); ok {
			out = append(out, NetworkGrant{Hosts: r.AllowedHosts(), By: "sandbox.network_for rule " + r.Rule, Methods: r.Methods, Paths: r.Paths})
		}
	}
	if tool != nil {
		h := tool.Hosts
		if len(h) == 0 {
			h = []string{"*"}
		}
		out = append(out, NetworkGrant{Hosts: h, By: tool.By})
	}
	return out
}

// networkRuleFor returns the first of rules for the tool name that
// matches the call, its rule written as ParseRule writes it.
func networkRuleFor(name string, rules []NetworkRule, match func(content string) bool) (NetworkRule, bool) {
	for _, n := range rules {
		r, err := ParseRule(n.Rule, Allow)
		if err != nil || r.Tool != name {
			continue
		}
		if r.Content == "" || match != nil && match(r.Content) {
			return NetworkRule{Rule: r.String(), Hosts: n.Hosts, Methods: n.Methods, Paths: n.Paths}, true
		}
	}
	return NetworkRule{}, false
}

// GrantHosts are the hosts of grants, each once.
func GrantHosts(grants []NetworkGrant) []string {
	var out []string
	for _, g := range grants {
		for _, h := range g.Hosts {
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}

// UngrantedHosts are the hosts of req, which a call of the tool name asks
// for, that no grant of NetworkGrants covers.
func UngrantedHosts(req []string, name string, pc *Context, tool *NetworkGrant, match func(content string) bool) []string {
	if len(req) == 0 {
		return nil
	}
	granted := GrantHosts(NetworkGrants(name, pc, tool, match))
	var out []string
	for _, h := range req {
		if HostCovered(granted, h) == "" {
			out = append(out, h)
		}
	}
	return out
}

// HostsAsk is the tool check d of a call that asks for the hosts
// ungranted, which nothing grants: a bypass-immune ASK naming them (a
// safety check: no allow rule silences it, dont_ask and explore deny it,
// bypass skips it and the hosts are then not granted). A DENY stays.
func HostsAsk(name string, d Decision, ungranted []string) Decision {
	if len(ungranted) == 0 || d.Behavior == Deny {
		return d
	}
	hosts := strings.Join(ungranted, ", ")
	why := "network hosts no rule grants: " + hosts
	if d.Behavior == Ask && d.BypassImmune {
		d.Message += "; it also asks for the network to " + hosts + ", which no rule grants"
		d.Reason += "; " + why
		return d
	}
	return Decision{Behavior: Ask, BypassImmune: true,
		Message: "Permission required for " + name + ": the command asks for the network to " + hosts +
			", which no sandbox.network_for rule, sandbox.network or tools." + name + ".network_hosts grants; a person's approval grants them for this call",
		Reason: "Safety check: " + why}
}

// SettingsNetwork is the grant of a tool's settings: tools.NAME.network
// (any public host, or the hosts of network_hosts) or
// tools.NAME.network_hosts alone (naming hosts turns the network on);
// nil for neither.
func SettingsNetwork(name string, network bool, hosts []string) *NetworkGrant {
	switch {
	case len(hosts) > 0:
		return &NetworkGrant{Hosts: slices.Clone(hosts), By: "tools." + name + ".network_hosts"}
	case network:
		return &NetworkGrant{Hosts: []string{"*"}, By: "tools." + name + ".network"}
	}
	return nil
}

// UnixSocketsRule is the first sandbox.unix_sockets_for rule of pc that
// matches a call of the tool name (match says whether a rule content
// matches it), written as ParseRule writes it; "" when none does.
func UnixSocketsRule(name string, pc *Context, match func(content string) bool) string {
	if pc == nil || pc.Sandbox == nil {
		return ""
	}
	for _, s := range pc.Sandbox.UnixSocketsFor {
		r, err := ParseRule(s, Allow)
		if err != nil || r.Tool != name {
			continue
		}
		if r.Content == "" || match != nil && match(r.Content) {
			return r.String()
		}
	}
	return ""
}
