package config

import (
	"fmt"
	"os"

	"github.com/wardenhq/warden/notify"
)

// EnvWebhookSecret names the environment variable that, when set,
// replaces notify.secret (the worker lays it over the file).
const EnvWebhookSecret = "WARDEN_WEBHOOK_SECRET"

// EffectiveSecret is the secret webhooks are signed with: the
// WARDEN_WEBHOOK_SECRET variable when set, else notify.secret.
func (n Notify) EffectiveSecret() string {
	if s := os.Getenv(EnvWebhookSecret); s != "" {
		return s
	}
	return n.Secret
}

// validateNotify rejects webhooks without a usable secret: nothing is
// sent unsigned or signed with an empty key.
func (c Config) validateNotify() []error {
	if len(c.Notify.Webhooks) == 0 {
		return nil
	}
	if _, err := notify.ParseSecret(c.Notify.EffectiveSecret()); err != nil {
		return []error{fmt.Errorf("notify.secret: %w: required when notify.webhooks is set (set it or %s)", err, EnvWebhookSecret)}
	}
	return nil
}
