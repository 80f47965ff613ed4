package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/config"
)

// TestBrokerFromConfig: backend.secrets are read from the environment
// given; a missing variable stops the start, naming it but no value;
// the broker's bundle is written and its placeholders given.
func TestBrokerFromConfig(t *testing.T) {
	secrets := map[string]config.Secret{"GH_TOKEN": {FromEnv: "MY_GH", Hosts: []string{"api.github.com"}, Header: "Authorization", Format: "Bearer %s"}}
	if _, _, err := broker(secrets, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "MY_GH") {
		t.Errorf("missing variable: %v", err)
	}
	br, dir, err := broker(secrets, func(k string) string {
		if k == "MY_GH" {
			return "ghp_VALUE"
		}
		return ""
	})
	if err != nil {
		t.Skip(err) // no system CA bundle on this machine
	}
	defer os.RemoveAll(dir)
	if _, err := os.Stat(filepath.Join(dir, "ca-bundle.pem")); err != nil {
		t.Error(err)
	}
	env := strings.Join(br.Env(nil, true), "\n")
	if strings.Contains(env, "ghp_VALUE") || !strings.Contains(env, "GH_TOKEN=warden-secret-GH_TOKEN-") || !strings.Contains(env, "SSL_CERT_FILE=") {
		t.Errorf("env:\n%s", env)
	}
}
