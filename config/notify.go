package config

import (
	"os"
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
