package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path"
	"slices"
	"time"

	"github.com/wardenhq/warden/activities"
	"github.com/wardenhq/warden/activities/compact"
	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/chat"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/tools"
)

// Check validates what package config cannot check from the file alone,
// because it takes the code that runs the part: backend.env's entries,
// the permission rules' examples (decided against the built-in tools),
// each content.compaction setting, the webhook secret, and the quorum
// rules against the approvers (client.CheckQuorum). Errors name the
// key. Run calls it before it starts anything.
func Check(cfg config.Config) error {
	var errs []error
	if err := backend.ParseEnvSpec(cfg.Backend.Env); err != nil {
		errs = append(errs, fmt.Errorf("backend.env: %w", err))
	}
	// A rule whose examples fail does not load: it would not do what its
	// author meant.
	if err := decide.CheckExamples(context.Background(), cfg.Policy(), decide.ExampleOptions{Workdir: cfg.Worker.Workdir}); err != nil {
		errs = append(errs, fmt.Errorf("permission: %w", err))
	}
	// A content rule for a built-in tool that matches no content
	// (PowerShell(...), AskUser(...)) would never match; the worker
	// checks the MCP servers' tools once it has connected them.
	if err := decide.CheckPolicyRules(decide.ToolLookup(tools.Builtins()), cfg.Policy()); err != nil {
		errs = append(errs, fmt.Errorf("permission: %w", err))
	}
	// A quorum rule the approvers turns record (inbox.users and
	// inbox.roles, with the operator) could never meet keeps its calls
	// waiting until their deadline: refused here, as at every start.
	if _, err := quorum(cfg); err != nil {
		errs = append(errs, fmt.Errorf("permission.quorum: %w", err))
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Content.Compaction)) {
		if err := compaction(cfg.Content.Compaction[name]).Validate(); err != nil {
			errs = append(errs, fmt.Errorf("content.compaction.%s: %w", name, err))
		}
	}
	for i, r := range cfg.Notify.Routes {
		for _, pat := range []string{r.Match.Namespace, r.Match.Agent, r.Match.Tool, r.Match.Role} {
			if _, err := path.Match(pat, ""); err != nil {
				errs = append(errs, fmt.Errorf("notify.routes[%d].match: %q: %w", i, pat, err))
			}
		}
		if len(r.Webhooks) == 0 {
			errs = append(errs, fmt.Errorf("notify.routes[%d]: no webhooks", i))
		}
	}
	if cfg.Notify.RemindBefore < 0 {
		errs = append(errs, fmt.Errorf("notify.remind_before: %s is negative", cfg.Notify.RemindBefore))
	}
	if len(cfg.Notify.Webhooks) > 0 || len(cfg.Notify.Routes) > 0 {
		// Nothing is sent unsigned or signed with an empty key. The secret
		// checked is the one sender signs with: the config's, with
		// WARDEN_WEBHOOK_SECRET already laid over it (config.FromEnv).
		if _, err := notify.ParseSecret(cfg.Notify.Secret); err != nil {
			errs = append(errs, fmt.Errorf("notify.secret: %w: required when notify.webhooks or notify.routes is set (set it or %s)", err, config.EnvWebhookSecret))
		}
	}
	return errors.Join(errs...)
}

// quorum checks the policy's quorum rules against the approvers the
// config's turns record (client.Approvers of inbox:), with no requester
// known (client.Start checks each turn's): an error for a rule they can
// never meet, warnings for rules only part of whose calls they can.
func quorum(cfg config.Config) ([]string, error) {
	a, err := client.Approvers(cfg.Inbox)
	if err != nil {
		return nil, err
	}
	return client.CheckQuorum(a, cfg.Policy().Quorum, "")
}

// sender is the webhook sender of n, signing with n.Secret (which
// WARDEN_WEBHOOK_SECRET replaces, config.FromEnv); nil without webhooks.
func sender(n config.Notify) *notify.Sender {
	if len(n.Webhooks) == 0 && len(n.Routes) == 0 {
		return nil
	}
	var routes []notify.Route
	for _, r := range n.Routes {
		m := r.Match
		routes = append(routes, notify.Route{Match: notify.Match{Namespace: m.Namespace, Agent: m.Agent, Tool: m.Tool, Role: m.Role},
			Webhooks: r.Webhooks})
	}
	return &notify.Sender{URLs: n.Webhooks, Routes: routes, Secret: n.Secret, HTTPClient: &http.Client{Timeout: 10 * time.Second}}
}

// compaction is the context-window compaction's setting of c.
func compaction(c config.Compaction) compact.Config {
	return compact.Config{Compaction: c}
}

// compactions are the compaction settings by model provider.
func compactions(cs map[string]config.Compaction) map[string]compact.Config {
	out := make(map[string]compact.Config, len(cs))
	for name, c := range cs {
		out[name] = compaction(c)
	}
	return out
}

// slackChat is the worker's Slack poster: nil unless the bot token is in
// the environment (chat.EnvBotToken) and a channel or route is set.
func slackChat(s config.Slack, getenv func(string) string) *activities.Chat {
	token := getenv(chat.EnvBotToken)
	if token == "" || (s.Channel == "" && len(s.Routes) == 0) {
		return nil
	}
	c := &activities.Chat{Service: chat.New(token, s.APIURL, nil), Channel: s.Channel, StepUp: s.StepUp}
	for _, r := range s.Routes {
		m := r.Match
		c.Routes = append(c.Routes, activities.ChatRoute{Match: notify.Match{Namespace: m.Namespace, Agent: m.Agent, Tool: m.Tool, Role: m.Role},
			Channel: r.Channel})
	}
	return c
}
