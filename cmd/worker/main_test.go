package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
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

// TestUIPortHelp: --help names the UI port's real default once, with no
// "(default -1)" after it; control: --ui-port 0 still turns the UI off.
func TestUIPortHelp(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	_, _, _ = parse([]string{"-h"})
	os.Stderr = old
	w.Close()
	b, _ := io.ReadAll(r)
	help := string(b)
	if !strings.Contains(help, "Web UI port (default 8233; 0 turns the UI off)") || strings.Contains(help, "(default -1)") {
		t.Errorf("--help:\n%s", help)
	}
	t.Chdir(t.TempDir())
	_, cfg, err := parse([]string{"--ui-port", "0"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.UIPort != 0 {
		t.Errorf("--ui-port 0: UI port %d", cfg.Server.UIPort)
	}
}
