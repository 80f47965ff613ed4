package egress

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/calls"
)

// httpRule is a compiled calls.HTTPRule.
type httpRule struct {
	calls.HTTPRule
	hosts Hosts
}

// compileHTTP compiles a policy's HTTP rules; a rule whose hosts do
// not parse holds its hosts to nothing.
func compileHTTP(rules []calls.HTTPRule) []httpRule {
	out := make([]httpRule, 0, len(rules))
	for _, r := range rules {
		hr := httpRule{HTTPRule: r}
		hr.hosts, _ = Compile(r.Hosts)
		out = append(out, hr)
	}
	return out
}

// held are the rules that hold the requests to host:port (their hosts
// name it).
func (s *server) held(host string, port int) []httpRule {
	var out []httpRule
	for _, r := range s.http {
		if _, ref := r.hosts.byName(host, port); ref == nil {
			out = append(out, r)
		}
	}
	return out
}

// allows reports whether r lets method reach p.
func (r httpRule) allows(method, p string) bool {
	if len(r.Methods) > 0 && !slices.Contains(r.Methods, method) {
		return false
	}
	if len(r.Paths) == 0 {
		return true
	}
	// The path globs of the file rules: "*" within a segment, "**" any
	// number of segments (a pattern that does not parse matches nothing).
	return slices.ContainsFunc(r.Paths, func(pat string) bool {
		ok, _ := doublestar.Match(pat, p)
		return ok
	})
}

// checkHTTP returns nil when one of the rules held lets the request
// (method, u) to host:port through, else the refusal naming them. A
// path with dot segments is refused whatever the rules: the host could
// resolve it to a path they do not let through.
func checkHTTP(held []httpRule, host string, port int, method string, u *url.URL) *Refusal {
	p := u.Path
	if p == "" {
		p = "/"
	}
	target := fmt.Sprintf("%s %s%s", method, net2(host, port), p)
	if clean := path.Clean(p); clean != p && clean+"/" != p {
		return &Refusal{Host: host, Port: port, Why: fmt.Sprintf("warden: %s is refused: the path has dot segments or doubled slashes, which the method and path rules for %s do not let through (send %s)", target, host, clean)}
	}
	for _, r := range held {
		if r.allows(method, p) {
			return nil
		}
	}
	var rules []string
	for _, r := range held {
		what := r.By
		if what == "" {
			what = "a rule"
		}
		var lets []string
		if len(r.Methods) > 0 {
			lets = append(lets, "methods "+strings.Join(r.Methods, ", "))
		}
		if len(r.Paths) > 0 {
			lets = append(lets, "paths "+strings.Join(r.Paths, ", "))
		}
		rules = append(rules, fmt.Sprintf("%s lets through to %s only %s", what, strings.Join(r.Hosts, ", "), strings.Join(lets, " and ")))
	}
	return &Refusal{Host: host, Port: port, Why: fmt.Sprintf("warden: %s is refused: %s; a sandbox.network_for rule for this call naming %s with method %s and a path matching %s would allow it",
		target, strings.Join(rules, "; "), host, method, p)}
}

func net2(host string, port int) string {
	return host + ":" + strconv.Itoa(port)
}
