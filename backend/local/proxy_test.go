package local

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend/local/egress"
)

// TestProxyEnv: the process's proxy settings name its egress proxy,
// whatever the worker's environment said, and nothing is reached
// directly or through SOCKS.
func TestProxyEnv(t *testing.T) {
	env := egress.Env([]string{"PATH=/bin", "HTTPS_PROXY=http://corp:8080", "NO_PROXY=localhost", "ALL_PROXY=socks5://x", "https_proxy=y"})
	want := map[string]string{"PATH": "/bin", "HTTP_PROXY": "http://127.0.0.1:3128", "HTTPS_PROXY": "http://127.0.0.1:3128",
		"http_proxy": "http://127.0.0.1:3128", "https_proxy": "http://127.0.0.1:3128", "npm_config_proxy": "http://127.0.0.1:3128",
		"npm_config_https_proxy": "http://127.0.0.1:3128", "NO_PROXY": "", "no_proxy": ""}
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s twice", k)
		}
		got[k] = v
	}
	if len(got) != len(want) {
		t.Errorf("env %v", env)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
}
