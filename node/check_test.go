package node

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/notify"
)

// check parses yaml as a config file and runs Check on it.
func check(t *testing.T, yaml string) (config.Config, error) {
	t.Helper()
	c, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("parse %q: %v", yaml, err)
	}
	return c, Check(c)
}

// TestCheckExamples: a config whose rule examples fail does not start a
// worker, and the error names the rule and the example; path examples
// resolve against worker.workdir.
func TestCheckExamples(t *testing.T) {
	t.Parallel()
	bad := "permission:\n  allow:\n    - Bash(ls)\n    - rule: Bash(npm run:*)\n      match: [\"npm run build\", \"npm install\"]\n"
	_, err := check(t, bad)
	var ee *decide.ExampleError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), `permission: 1 rule example(s) fail: allow rule 2 Bash(npm run:*): match example "npm install" does not match`) {
		t.Errorf("config: %v", err)
	}
	if _, err := check(t, "worker: {workdir: /srv/app}\npermission:\n  allow:\n    - {rule: \"Edit(/srv/app/src/**)\", match: [src/main.go]}\n"); err != nil {
		t.Errorf("workdir-relative example: %v", err)
	}
}

// TestCheckBackendEnv: a malformed backend.env entry is refused.
func TestCheckBackendEnv(t *testing.T) {
	t.Parallel()
	if _, err := check(t, "backend:\n  env: [GOPATH, \"CI=1\"]\n"); err != nil {
		t.Errorf("valid backend.env: %v", err)
	}
	if _, err := check(t, "backend:\n  env: [\"BAD-NAME=x\"]\n"); err == nil || !strings.Contains(err.Error(), "backend.env") {
		t.Errorf("bad backend.env error = %v", err)
	}
}

// TestCheckCompaction: each compaction setting is checked by the
// middleware that runs it, and the error names the key.
func TestCheckCompaction(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ yaml, want string }{
		{"content: {compaction: {scripted: {context_window: 0}}}", "content.compaction.scripted: context_window must be a positive"},
		{"content: {compaction: {scripted: {context_window: 100, strategy: fold}}}", `unknown strategy "fold"`},
		{"content: {compaction: {scripted: {context_window: 100, trigger: 0.4, target: 0.6}}}", "target (0.60) must be below trigger (0.40)"},
	} {
		if _, err := check(t, c.yaml); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.yaml, err, c.want)
		}
	}
	c, err := check(t, "content: {compaction: {scripted: {context_window: 8000, strategy: summarize, keep_recent: 3}}}")
	if err != nil {
		t.Fatal(err)
	}
	if got := compactions(c.Content.Compaction)["scripted"]; got.ContextWindow != 8000 || got.Strategy != "summarize" || got.KeepRecent != 3 {
		t.Errorf("compaction = %+v", got)
	}
}

// TestWebhookSecretRequired: webhooks need a usable secret, from the
// file or WARDEN_WEBHOOK_SECRET (laid over it by config.FromEnv); Check
// validates the secret the sender signs with.
func TestWebhookSecretRequired(t *testing.T) {
	t.Setenv(config.EnvWebhookSecret, "")
	for _, in := range []string{
		"notify:\n  webhooks: [\"http://127.0.0.1:9/hook\"]\n",
		"notify:\n  webhooks: [\"http://127.0.0.1:9/hook\"]\n  secret: \"\"\n",
		"notify:\n  webhooks: [\"http://127.0.0.1:9/hook\"]\n  secret: \"   \"\n",
	} {
		if _, err := check(t, in); err == nil || !strings.Contains(err.Error(), "notify.secret") || !errors.Is(err, notify.ErrEmptySecret) {
			t.Errorf("Check(%q) error = %v, want an empty notify.secret error", in, err)
		}
	}
	if _, err := check(t, "notify:\n  webhooks: [\"http://h/\"]\n  secret: \"whsec_!!\"\n"); err == nil ||
		!strings.Contains(err.Error(), "notify.secret") || !errors.Is(err, notify.ErrBadSecret) {
		t.Errorf("malformed whsec_ secret error = %v", err)
	}
	if _, err := check(t, "notify:\n  webhooks: []\n"); err != nil {
		t.Errorf("no webhooks: %v", err)
	}
	c, err := check(t, "notify:\n  webhooks: [\"http://h/\"]\n  secret: \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n")
	if err != nil {
		t.Errorf("valid secret: %v", err)
	}
	if s := sender(c.Notify); s == nil || s.Secret != "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" || s.URLs[0] != "http://h/" {
		t.Errorf("sender %+v", s)
	}
	if sender(config.Notify{}) != nil {
		t.Error("a sender without webhooks")
	}
	// The variable supplies a secret the file leaves out once laid over
	// the config (config.FromEnv); Check and the sender see one value.
	t.Setenv(config.EnvWebhookSecret, "from-env")
	c, err = check(t, "notify:\n  webhooks: [\"http://h/\"]\n")
	if err == nil {
		t.Errorf("Check passed a secret the sender does not have (%s not applied): sender %+v", config.EnvWebhookSecret, sender(c.Notify))
	}
	c.Apply(config.FromEnv(os.Getenv))
	if err := Check(c); err != nil {
		t.Errorf("secret from %s: %v", config.EnvWebhookSecret, err)
	}
	if s := sender(c.Notify); s == nil || s.Secret != "from-env" {
		t.Errorf("sender %+v, want it signing with the secret from %s", s, config.EnvWebhookSecret)
	}
}

// TestCheckQuorum: a worker whose quorum rule its approvers (inbox
// users with their roles, and the operator) can never meet does not
// start; the error names the rule, the number and who could answer.
// A team that can meet it starts, with a warning when only approvers
// with roles complete it.
func TestCheckQuorum(t *testing.T) {
	t.Parallel()
	team := "inbox:\n  users:\n    alice: {token: a}\n    dev: {token: d, roles: [git]}\n  roles:\n    git: {allow: [\"Bash(git:*)\"]}\n"
	rule := func(n int) string {
		return fmt.Sprintf("permission:\n  quorum:\n    - {rule: \"Bash(kubectl delete:*)\", approvals: %d}\n", n)
	}
	_, err := check(t, team+rule(3))
	for _, want := range []string{`permission.quorum: quorum rule "Bash(kubectl delete:*)" needs 3 distinct approvers, but only 2 could ever allow its calls (alice: no roles; operator: no roles); the roles of dev cover none of them`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check: %v, want %q", err, want)
		}
	}
	if _, err := check(t, team+rule(2)); err != nil {
		t.Errorf("two of alice and operator: %v", err)
	}
	if _, err := check(t, rule(5)); err != nil {
		t.Errorf("no inbox users (anyone may answer): %v", err)
	}
	kube := strings.Replace(team, "dev: {token: d, roles: [git]}", "kube: {token: k, roles: [ops]}", 1) + "    ops: {allow: [\"Bash(kubectl:*)\"]}\n"
	c, err := check(t, kube+rule(3))
	if err != nil {
		t.Fatalf("kube covers it: %v", err)
	}
	if w, err := quorum(c); err != nil || len(w) != 1 || !strings.Contains(w[0], "a call of it a safety check asks about") {
		t.Errorf("warnings %q %v", w, err)
	}
}
