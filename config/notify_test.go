package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden/notify"
)

func TestWebhookSecretRequired(t *testing.T) {
	t.Setenv(EnvWebhookSecret, "")
	for _, in := range []string{
		"notify:\n  webhooks: [\"http://127.0.0.1:9/hook\"]\n",
		"notify:\n  webhooks: [\"http://127.0.0.1:9/hook\"]\n  secret: \"\"\n",
		"notify:\n  webhooks: [\"http://127.0.0.1:9/hook\"]\n  secret: \"   \"\n",
	} {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), "notify.secret") || !errors.Is(err, notify.ErrEmptySecret) {
			t.Errorf("Parse(%q) error = %v, want an empty notify.secret error", in, err)
		}
	}
	if _, err := Parse([]byte("notify:\n  webhooks: [\"http://h/\"]\n  secret: \"whsec_!!\"\n")); err == nil ||
		!strings.Contains(err.Error(), "notify.secret") || !errors.Is(err, notify.ErrBadSecret) {
		t.Errorf("malformed whsec_ secret error = %v", err)
	}
	// No webhooks: no secret needed.
	if _, err := Parse([]byte("notify:\n  webhooks: []\n")); err != nil {
		t.Errorf("no webhooks: %v", err)
	}
	c, err := Parse([]byte("notify:\n  webhooks: [\"http://h/\"]\n  secret: \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n"))
	if err != nil || c.Notify.EffectiveSecret() != "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" {
		t.Errorf("valid secret: %v", err)
	}
	// The variable supplies a secret the file leaves out.
	t.Setenv(EnvWebhookSecret, "from-env")
	c, err = Parse([]byte("notify:\n  webhooks: [\"http://h/\"]\n"))
	if err != nil || c.Notify.EffectiveSecret() != "from-env" {
		t.Errorf("secret from %s: %q, %v", EnvWebhookSecret, c.Notify.EffectiveSecret(), err)
	}
}
