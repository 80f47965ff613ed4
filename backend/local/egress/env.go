package egress

import (
	"net"
	"strconv"
	"strings"

	"github.com/wardenhq/warden/backend/local/sandbox/child"
)

// URL is where a sandboxed call with the network finds its egress
// proxy, inside its own network namespace.
func URL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(child.ProxyPort))
}

// Env points env's proxy settings at the call's egress proxy: the
// HTTP(S)_PROXY pair in both cases (curl, git, pip, Go, most clients)
// and npm's own, with NO_PROXY emptied so that nothing is tried
// directly (there is no direct way out). ALL_PROXY is removed, not set:
// the proxy speaks HTTP CONNECT, not SOCKS.
func Env(env []string) []string {
	u := URL()
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
