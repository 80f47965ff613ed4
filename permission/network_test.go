package permission

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestNetworkForForms: network_for entries are read as strings or as
// {rule, hosts}, in YAML and JSON; a rule without hosts is written back
// as its string, so a policy or a recorded payload of the string form
// keeps its bytes.
func TestNetworkForForms(t *testing.T) {
	t.Parallel()
	want := []NetworkRule{{Rule: "Bash(npm install:*)"}, {Rule: "Bash(go mod download)", Hosts: []string{"proxy.golang.org", "*.example.org"}}}
	y := `
mode: default
sandbox:
  network_for:
    - "Bash(npm install:*)"
    - rule: "Bash(go mod download)"
      hosts: [proxy.golang.org, "*.example.org"]
`
	var p Policy
	if err := yaml.Unmarshal([]byte(y), &p); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(p.Sandbox.NetworkFor, want, eqNetworkRule) {
		t.Fatalf("YAML: %+v", p.Sandbox.NetworkFor)
	}
	js := `{"sandbox":{"network_for":["Bash(npm install:*)",{"rule":"Bash(go mod download)","hosts":["proxy.golang.org","*.example.org"]}]}}`
	var pj Policy
	if err := json.Unmarshal([]byte(js), &pj); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(pj.Sandbox.NetworkFor, want, eqNetworkRule) {
		t.Fatalf("JSON: %+v", pj.Sandbox.NetworkFor)
	}
	// Round trips: JSON and YAML write the string form for the rule
	// without hosts.
	out, err := json.Marshal(pj.Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != `{"network_for":["Bash(npm install:*)",{"rule":"Bash(go mod download)","hosts":["proxy.golang.org","*.example.org"]}]}` {
		t.Errorf("JSON round trip: %s", got)
	}
	yo, err := yaml.Marshal(p.Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	var back Sandbox
	if err := yaml.Unmarshal(yo, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(back.NetworkFor, want, eqNetworkRule) || !strings.Contains(string(yo), "- Bash(npm install:*)\n") {
		t.Errorf("YAML round trip:\n%s", yo)
	}
	// A context recorded before hosts existed (the string form, in a
	// workflow's policy) decodes and encodes to the same bytes.
	old := `{"mode":"default","sandbox":{"network":true,"network_for":["Bash(npm install:*)"],"auto_allow":true}}`
	var c Context
	if err := json.Unmarshal([]byte(old), &c); err != nil {
		t.Fatal(err)
	}
	if re, _ := json.Marshal(c); string(re) != old {
		t.Errorf("recorded context re-encodes as %s", re)
	}
	if _, err := p.Context(); err != nil {
		t.Errorf("Context: %v", err)
	}
}

func eqNetworkRule(a, b NetworkRule) bool { return a.Rule == b.Rule && slices.Equal(a.Hosts, b.Hosts) }

// TestNetworkForRefused: unknown keys, a missing rule, a bad rule and a
// bad host are refused with what is wrong.
func TestNetworkForRefused(t *testing.T) {
	t.Parallel()
	for _, js := range []string{
		`{"sandbox":{"network_for":[{"rule":"Bash(x)","host":["a.b"]}]}}`,
		`{"sandbox":{"network_for":[{"hosts":["a.b"]}]}}`,
		`{"sandbox":{"network_for":[7]}}`,
	} {
		var p Policy
		if err := json.Unmarshal([]byte(js), &p); err == nil {
			t.Errorf("%s: accepted", js)
		}
	}
	for _, y := range []string{
		"sandbox:\n  network_for:\n    - {rule: \"Bash(x)\", host: [a.b]}\n",
		"sandbox:\n  network_for:\n    - {hosts: [a.b]}\n",
	} {
		var p Policy
		if err := yaml.Unmarshal([]byte(y), &p); err == nil {
			t.Errorf("%q: accepted", y)
		}
	}
	for _, p := range []Policy{
		{Sandbox: &Sandbox{NetworkFor: []NetworkRule{{Rule: "Bash(npm", Hosts: []string{"a.b"}}}}},
		{Sandbox: &Sandbox{NetworkFor: []NetworkRule{{Rule: "Bash(npm:*)", Hosts: []string{"a b"}}}}},
		{Sandbox: &Sandbox{Network: true, Hosts: []string{"x.org:99999"}}},
	} {
		if _, err := p.Context(); err == nil {
			t.Errorf("%+v: accepted", p.Sandbox)
		}
	}
}

// TestHosts: which host entries cover which (a grant including a
// request), and which connections an entry lets through by the address
// dialled.
func TestHosts(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"*", "registry.npmjs.org", "*.example.org", "10.0.0.5", "10.0.0.0/8", "::1", "[::1]:443", "a.b:443", "localhost"} {
		if err := CheckHost(h); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
	for _, h := range []string{"", "a b", "a.b:0", "a.b:x", "*.", "-a.b", "http://a.b", "10.0.0.0/99"} {
		if err := CheckHost(h); err == nil {
			t.Errorf("%q accepted", h)
		}
	}
	covered := []struct {
		grant []string
		req   string
		want  bool
	}{
		{[]string{"*"}, "registry.npmjs.org", true},
		{[]string{"*"}, "8.8.8.8", true},
		{[]string{"*"}, "127.0.0.1", false}, // "*" is public hosts only
		{[]string{"*"}, "10.0.0.0/8", false},
		{[]string{"*.example.org"}, "a.example.org", true},
		{[]string{"*.example.org"}, "*.b.example.org", true},
		{[]string{"*.example.org"}, "example.org", false},
		{[]string{"registry.npmjs.org:443"}, "registry.npmjs.org", false},
		{[]string{"registry.npmjs.org"}, "registry.npmjs.org:443", true},
		{[]string{"10.0.0.0/8"}, "10.1.2.3", true},
		{[]string{"10.0.0.0/8"}, "10.1.0.0/16", true},
		{[]string{"10.1.0.0/16"}, "10.0.0.0/8", false},
		{nil, "a.b", false},
	}
	for _, c := range covered {
		if got := HostCovered(c.grant, c.req) != ""; got != c.want {
			t.Errorf("HostCovered(%q, %q) = %v", c.grant, c.req, got)
		}
	}
	allows := []struct {
		hosts      []string
		host, addr string
		port       int
		want       string
	}{
		{[]string{"*"}, "registry.npmjs.org", "104.16.0.1", 443, "*"},
		{[]string{"*"}, "evil.example", "127.0.0.1", 443, ""}, // a public name resolving to loopback
		{nil, "localhost", "127.0.0.1", 80, ""},
		{[]string{"registry.npmjs.org", "127.0.0.1"}, "registry.npmjs.org", "127.0.0.1", 4873, "127.0.0.1"},
		{[]string{"registry.npmjs.org"}, "other.org", "104.16.0.1", 443, ""},
		{[]string{"*.example.org:443"}, "a.example.org", "93.184.0.1", 80, ""},
		{[]string{"*.example.org:443"}, "a.example.org", "93.184.0.1", 443, "*.example.org:443"},
		{[]string{"10.0.0.0/8"}, "10.2.3.4", "", 22, "10.0.0.0/8"},
	}
	for _, c := range allows {
		if got := HostAllows(c.hosts, c.host, c.port, c.addr); got != c.want {
			t.Errorf("HostAllows(%q, %s:%d via %s) = %q, want %q", c.hosts, c.host, c.port, c.addr, got, c.want)
		}
	}
}

// TestNetworkForMethodsPaths: {rule, hosts, methods, paths} is read in
// YAML and JSON, written back with them, carried into the rule's grant,
// and a lower-case method or a path without its leading slash is
// refused by Check.
func TestNetworkForMethodsPaths(t *testing.T) {
	t.Parallel()
	y := `
sandbox:
  network_for:
    - rule: "Bash(gh api:*)"
      hosts: [api.github.com]
      methods: [GET, HEAD]
      paths: ["/repos/**"]
`
	var p Policy
	if err := yaml.Unmarshal([]byte(y), &p); err != nil {
		t.Fatal(err)
	}
	n := p.Sandbox.NetworkFor
	if len(n) != 1 || !slices.Equal(n[0].Methods, []string{"GET", "HEAD"}) || !slices.Equal(n[0].Paths, []string{"/repos/**"}) {
		t.Fatalf("YAML: %+v", n)
	}
	out, _ := json.Marshal(n[0])
	if string(out) != `{"rule":"Bash(gh api:*)","hosts":["api.github.com"],"methods":["GET","HEAD"],"paths":["/repos/**"]}` {
		t.Errorf("JSON: %s", out)
	}
	var back NetworkRule
	if err := json.Unmarshal(out, &back); err != nil || !slices.Equal(back.Methods, n[0].Methods) {
		t.Errorf("JSON back: %+v %v", back, err)
	}
	only := NetworkRule{Rule: "Bash(curl:*)", Methods: []string{"GET"}}
	if out, _ := json.Marshal(only); string(out) != `{"rule":"Bash(curl:*)","methods":["GET"]}` {
		t.Errorf("methods alone: %s", out)
	}
	pc := &Context{Sandbox: p.Sandbox}
	g := NetworkGrants("Bash", pc, nil, func(string) bool { return true })
	if len(g) != 1 || !slices.Equal(g[0].Methods, []string{"GET", "HEAD"}) || !slices.Equal(g[0].Paths, []string{"/repos/**"}) {
		t.Errorf("grants: %+v", g)
	}
	for _, bad := range []NetworkRule{{Rule: "Bash(curl:*)", Methods: []string{"get"}}, {Rule: "Bash(curl:*)", Paths: []string{"repos/**"}}, {Rule: "Bash(curl:*)", Paths: []string{"/repos/[a"}}} {
		if bad.Check() == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
