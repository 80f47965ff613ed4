package local

import (
	"net"
	"strconv"
	"strings"

	"github.com/wardenhq/warden/backend/local/egress"
	"github.com/wardenhq/warden/backend/local/sandbox/child"
	"github.com/wardenhq/warden/calls"
)

// proxyURL is where a sandboxed call with the network finds its egress
// proxy, inside its own network namespace.
func proxyURL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(child.ProxyPort))
}

// proxyEnv points env's proxy settings at the call's egress proxy: the
// HTTP(S)_PROXY pair in both cases (curl, git, pip, Go, most clients)
// and npm's own, with NO_PROXY emptied so that nothing is tried
// directly (there is no direct way out). ALL_PROXY is removed, not set:
// the proxy speaks HTTP CONNECT, not SOCKS.
func proxyEnv(env []string) []string {
	u := proxyURL()
	set := map[string]string{
		"HTTP_PROXY": u, "HTTPS_PROXY": u, "http_proxy": u, "https_proxy": u,
		"npm_config_proxy": u, "npm_config_https_proxy": u,
		"NO_PROXY": "", "no_proxy": "",
	}
	drop := map[string]bool{"ALL_PROXY": true, "all_proxy": true, "npm_config_noproxy": true}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; !ok && !drop[name] {
			out = append(out, kv)
		}
	}
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
		"npm_config_proxy", "npm_config_https_proxy", "NO_PROXY", "no_proxy"} {
		out = append(out, name+"="+set[name])
	}
	return out
}

// egressPolicy is the egress policy of a profile with the network on:
// its hosts ("*" when it names none, as profiles recorded before hosts
// existed mean) and what granted the network.
func egressPolicy(prof *calls.Sandbox) egress.Policy {
	hosts := prof.Hosts
	if len(hosts) == 0 {
		hosts = []string{"*"}
	}
	return egress.Policy{Hosts: hosts, By: prof.NetworkBy}
}

// maxConnections bounds the records a call's result carries (the
// observer sees them all): a call that opens thousands of connections
// keeps its first ones, refusals first.
const maxConnections = 1000

// connections collects a call's connection records and shows each to
// the backend's observer.
type connections struct {
	obs  egress.Observer
	list []calls.Connection
}

func (c *connections) record(cn calls.Connection) {
	if c.obs != nil {
		c.obs.Connection(cn)
	}
	if len(c.list) < maxConnections {
		c.list = append(c.list, cn)
		return
	}
	if cn.Allowed {
		return
	}
	// A refusal replaces the last allowed record: the refusals are what
	// the model needs to read.
	for i := len(c.list) - 1; i >= 0; i-- {
		if c.list[i].Allowed {
			c.list = append(c.list[:i], c.list[i+1:]...)
			c.list = append(c.list, cn)
			return
		}
	}
}
