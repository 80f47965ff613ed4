package decide

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// netCall is a Bash call of cmd asking for hosts, under pc.
func netCall(t *testing.T, cmd string, hosts []string, pc *permission.Context) Call {
	t.Helper()
	in, err := json.Marshal(tools.BashInput{Command: cmd, NetworkHosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	return Call{Tool: tools.Bash{}, Input: in, Workdir: "/src/app", Home: "/home/dev", Policy: pc, Sandboxed: true}
}

// decideProfile decides c and returns the verdict and its profile.
func decideProfile(t *testing.T, c Call) (permission.Verdict, calls.Sandbox) {
	t.Helper()
	ctx := context.Background()
	v, err := Verdict(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return v, Profile(ctx, c, v)
}

// TestProfileHosts: the profile's hosts come from what granted the
// network: sandbox.network (any public host, or sandbox.hosts), the
// network_for rule that matches (its hosts, or any), the tool's
// settings (network_hosts); a call nothing grants has no network.
func TestProfileHosts(t *testing.T) {
	t.Parallel()
	allowAll := []permission.Rule{{Tool: "Bash", Behavior: permission.Allow}}
	cases := []struct {
		name   string
		sb     *permission.Sandbox
		tool   *permission.NetworkGrant
		cmd    string
		hosts  []string
		by     string
		string string
	}{
		{"none", nil, nil, "npm install", nil, "", "network off"},
		{"network true", &permission.Sandbox{Network: true}, nil, "make", []string{"*"}, "sandbox.network", "network to any public host"},
		{"network hosts", &permission.Sandbox{Network: true, Hosts: []string{"*.corp.example"}}, nil, "make", []string{"*.corp.example"}, "sandbox.hosts", "network to *.corp.example"},
		{"rule string form", &permission.Sandbox{NetworkFor: permission.NetworkRules("Bash(npm install:*)")}, nil, "npm install left-pad", []string{"*"}, "sandbox.network_for rule Bash(npm install:*)", "network to any public host"},
		{"rule with hosts", &permission.Sandbox{NetworkFor: []permission.NetworkRule{{Rule: "Bash(npm install:*)", Hosts: []string{"npm.example.internal", "*.example.org"}}}}, nil,
			"npm install left-pad", []string{"npm.example.internal", "*.example.org"}, "sandbox.network_for rule Bash(npm install:*)", "network to npm.example.internal, *.example.org"},
		{"rule does not match", &permission.Sandbox{NetworkFor: []permission.NetworkRule{{Rule: "Bash(npm install:*)", Hosts: []string{"npm.example.internal"}}}}, nil, "make", nil, "", "network off"},
		{"tool settings", nil, permission.SettingsNetwork("Bash", false, []string{"proxy.golang.org"}), "go mod download", []string{"proxy.golang.org"}, "tools.Bash.network_hosts", "network to proxy.golang.org (tools.Bash.network_hosts)"},
		{"tool network", nil, permission.SettingsNetwork("Bash", true, nil), "go mod download", []string{"*"}, "tools.Bash.network", "network to any public host"},
		{"rule and tool", &permission.Sandbox{NetworkFor: []permission.NetworkRule{{Rule: "Bash(go:*)", Hosts: []string{"sum.golang.org"}}}}, permission.SettingsNetwork("Bash", true, []string{"proxy.golang.org"}),
			"go mod download", []string{"sum.golang.org", "proxy.golang.org"}, "rule Bash(go:*); tools.Bash.network_hosts", ""},
		{"rule with methods and paths", &permission.Sandbox{NetworkFor: []permission.NetworkRule{{Rule: "Bash(gh api:*)", Hosts: []string{"api.github.com"}, Methods: []string{"GET"}, Paths: []string{"/repos/**"}}}}, nil,
			"gh api repos/o/r", []string{"api.github.com"}, "sandbox.network_for rule Bash(gh api:*)", "requests to api.github.com held to methods GET; paths /repos/**"},
	}
	for _, c := range cases {
		call := netCall(t, c.cmd, nil, &permission.Context{Mode: permission.ModeDefault, Sandbox: c.sb, Allow: allowAll})
		call.ToolNetwork = c.tool
		v, p := decideProfile(t, call)
		if v.Behavior != permission.Allow {
			t.Errorf("%s: %s (%s), want allowed by the rule", c.name, v.Behavior, v.Reason)
		}
		if !slices.Equal(p.Hosts, c.hosts) || p.Network != (c.hosts != nil) || !strings.Contains(p.NetworkBy, c.by) {
			t.Errorf("%s: network %v hosts %q by %q, want %q by %q", c.name, p.Network, p.Hosts, p.NetworkBy, c.hosts, c.by)
		}
		if held := strings.Contains(c.string, "held to"); held != (len(p.HTTP) == 1) || held && (p.HTTP[0].By != c.by || !slices.Equal(p.HTTP[0].Methods, []string{"GET"})) {
			t.Errorf("%s: HTTP rules %+v", c.name, p.HTTP)
		}
		if !strings.Contains(p.String(), c.string) {
			t.Errorf("%s: String() = %q, want %q in it", c.name, p.String(), c.string)
		}
	}
}

// TestRequestedHosts: a call that asks for hosts nothing grants asks,
// whatever the allow rules say, naming the hosts; approved, its profile
// gets them. Hosts a grant covers do not ask. Bypass neither asks nor
// grants them; dont_ask and explore deny; a deny rule still denies;
// sandbox.auto_allow never runs such a call unasked.
func TestRequestedHosts(t *testing.T) {
	t.Parallel()
	allow := []permission.Rule{{Tool: "Bash", Content: "npm install:*", Behavior: permission.Allow}}
	pc := func(mode permission.Mode, sb *permission.Sandbox) *permission.Context {
		return &permission.Context{Mode: mode, Allow: allow, Sandbox: sb}
	}
	req := []string{"registry.npmjs.org"}

	// Control: the same call without network_hosts is allowed by the rule.
	if v, p := decideProfile(t, netCall(t, "npm install left-pad", nil, pc(permission.ModeDefault, nil))); v.Behavior != permission.Allow || p.Network {
		t.Fatalf("control: %s, network %v", v.Behavior, p.Network)
	}
	// Asked for, granted by nothing: ASK naming the host; the profile
	// of the asked call (it runs only once approved) grants it.
	v, p := decideProfile(t, netCall(t, "npm install left-pad", req, pc(permission.ModeDefault, nil)))
	if v.Behavior != permission.Ask || !v.BypassImmune || v.Layer != permission.LayerSafety || !strings.Contains(v.Reason, "registry.npmjs.org") || !strings.Contains(v.Message, "registry.npmjs.org") {
		t.Fatalf("asked hosts: %s %s %q %q", v.Behavior, v.Layer, v.Reason, v.Message)
	}
	if !p.Network || !slices.Equal(p.Hosts, req) || !strings.Contains(p.NetworkBy, "approved by a person") {
		t.Errorf("approved profile: network %v hosts %q by %q", p.Network, p.Hosts, p.NetworkBy)
	}
	if s := p.String(); !strings.Contains(s, "network to registry.npmjs.org (network_hosts approved by a person") {
		t.Errorf("String() = %q", s)
	}
	// A rule whose hosts cover the request: no ask, the rule's hosts.
	sb := &permission.Sandbox{NetworkFor: []permission.NetworkRule{{Rule: "Bash(npm install:*)", Hosts: []string{"*.npmjs.org"}}}}
	v, p = decideProfile(t, netCall(t, "npm install left-pad", req, pc(permission.ModeDefault, sb)))
	if v.Behavior != permission.Allow || !slices.Equal(p.Hosts, []string{"*.npmjs.org"}) || strings.Contains(p.NetworkBy, "approved") {
		t.Errorf("covered: %s %q, hosts %q by %q", v.Behavior, v.Reason, p.Hosts, p.NetworkBy)
	}
	// A host beyond the rule's: asks for that one, and the approval adds it.
	v, p = decideProfile(t, netCall(t, "npm install left-pad", []string{"registry.npmjs.org", "10.0.0.5:4873"}, pc(permission.ModeDefault, sb)))
	if v.Behavior != permission.Ask || !strings.Contains(v.Reason, "10.0.0.5:4873") || strings.Contains(v.Reason, "registry.npmjs.org") {
		t.Errorf("partly covered: %s %q", v.Behavior, v.Reason)
	}
	if !slices.Equal(p.Hosts, []string{"*.npmjs.org", "10.0.0.5:4873"}) {
		t.Errorf("partly covered, approved: hosts %q", p.Hosts)
	}
	// "*" does not cover a private address.
	v, _ = decideProfile(t, netCall(t, "npm install", []string{"127.0.0.1"}, pc(permission.ModeDefault, &permission.Sandbox{Network: true})))
	if v.Behavior != permission.Ask {
		t.Errorf("loopback under network: true: %s, want ask", v.Behavior)
	}
	// The tool's settings grant.
	c := netCall(t, "npm install left-pad", req, pc(permission.ModeDefault, nil))
	c.ToolNetwork = permission.SettingsNetwork("Bash", false, []string{"registry.npmjs.org"})
	if v, p := decideProfile(t, c); v.Behavior != permission.Allow || !slices.Equal(p.Hosts, req) || p.NetworkBy != "tools.Bash.network_hosts" {
		t.Errorf("tool settings: %s, hosts %q by %q", v.Behavior, p.Hosts, p.NetworkBy)
	}
	// Bypass: nothing asks, and the hosts are not granted.
	v, p = decideProfile(t, netCall(t, "npm install left-pad", req, pc(permission.ModeBypass, nil)))
	if v.Behavior != permission.Allow || p.Network || len(p.Hosts) != 0 {
		t.Errorf("bypass: %s, network %v hosts %q, want allowed without the network", v.Behavior, p.Network, p.Hosts)
	}
	// dont_ask and explore deny.
	for _, m := range []permission.Mode{permission.ModeDontAsk, permission.ModeExplore} {
		if v, _ := decideProfile(t, netCall(t, "npm install left-pad", req, pc(m, nil))); v.Behavior != permission.Deny {
			t.Errorf("%s: %s, want deny", m, v.Behavior)
		}
	}
	// A deny rule denies.
	deny := pc(permission.ModeDefault, nil)
	deny.Deny = []permission.Rule{{Tool: "Bash", Content: "npm:*", Behavior: permission.Deny}}
	if v, _ := decideProfile(t, netCall(t, "npm install left-pad", req, deny)); v.Behavior != permission.Deny {
		t.Errorf("deny rule: %s", v.Behavior)
	}
	// sandbox.auto_allow does not allow a call that asks for hosts;
	// control: the same command without hosts is auto-allowed.
	auto := &permission.Context{Mode: permission.ModeDefault, Sandbox: &permission.Sandbox{AutoAllow: true}}
	if v, _ := decideProfile(t, netCall(t, "make build", nil, auto)); v.Behavior != permission.Allow || v.Layer != permission.LayerSandbox {
		t.Fatalf("auto_allow control: %s %s", v.Behavior, v.Layer)
	}
	if v, _ := decideProfile(t, netCall(t, "make build", req, auto)); v.Behavior != permission.Ask {
		t.Errorf("auto_allow with hosts: %s (%s), want ask", v.Behavior, v.Reason)
	}
	c = netCall(t, "make build", nil, auto)
	c.ToolNetwork = permission.SettingsNetwork("Bash", true, nil)
	if v, _ := decideProfile(t, c); v.Behavior == permission.Allow {
		t.Errorf("auto_allow with tools.Bash.network: allowed (%s)", v.Reason)
	}
	// A bad host is an input error the model reads.
	if _, err := Verdict(context.Background(), netCall(t, "npm install", []string{"http://x y"}, pc(permission.ModeDefault, nil))); err == nil ||
		!strings.Contains(err.Error(), "network_hosts") {
		t.Errorf("bad host: %v", err)
	}
}

// TestPowerShellRequestedHosts: PowerShell's network_hosts asks like
// Bash's, whatever a PowerShell allow rule says; approved, the profile
// gets them; a tool-level network_for rule's hosts cover them.
func TestPowerShellRequestedHosts(t *testing.T) {
	t.Parallel()
	in, _ := json.Marshal(tools.PowerShellInput{Command: "Invoke-WebRequest https://registry.npmjs.org", NetworkHosts: []string{"registry.npmjs.org"}})
	pc := &permission.Context{Mode: permission.ModeDefault, Allow: []permission.Rule{{Tool: "PowerShell", Behavior: permission.Allow}}}
	c := Call{Tool: tools.PowerShell{}, Input: in, Workdir: "/src/app", Policy: pc}
	v, p := decideProfile(t, c)
	if v.Behavior != permission.Ask || !strings.Contains(v.Reason, "registry.npmjs.org") || !slices.Equal(p.Hosts, []string{"registry.npmjs.org"}) {
		t.Errorf("asked: %s %q, hosts %q", v.Behavior, v.Reason, p.Hosts)
	}
	pc.Sandbox = &permission.Sandbox{NetworkFor: []permission.NetworkRule{{Rule: "PowerShell", Hosts: []string{"*.npmjs.org"}}}}
	if v, p := decideProfile(t, c); v.Behavior != permission.Allow || !slices.Equal(p.Hosts, []string{"*.npmjs.org"}) {
		t.Errorf("granted: %s %q, hosts %q", v.Behavior, v.Reason, p.Hosts)
	}
}
