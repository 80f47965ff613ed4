package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/node"
)

// TestWebhookSecretFromEnv: the worker signs webhooks with
// WARDEN_WEBHOOK_SECRET when the config file leaves notify.secret out,
// and the config it hands node.Run passes Check.
func TestWebhookSecretFromEnv(t *testing.T) {
	file := filepath.Join(t.TempDir(), "warden.yaml")
	if err := os.WriteFile(file, []byte("notify:\n  webhooks: [\"http://127.0.0.1:9/hook\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.EnvWebhookSecret, "from-env")
	_, cfg, err := parse([]string{"-config", file})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Notify.Secret != "from-env" {
		t.Errorf("notify.secret = %q, want the one from %s", cfg.Notify.Secret, config.EnvWebhookSecret)
	}
	if err := node.Check(cfg); err != nil {
		t.Errorf("Check: %v", err)
	}
}
