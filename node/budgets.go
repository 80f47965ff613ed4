package node

import (
	"context"
	"errors"
	"fmt"
	"sort"

	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/workflows"
)

// applyBudgets sets the agent budgets of the config (budgets.agents) in
// the agents' budget stores, once the worker runs (the store's Update
// needs it). A window whose store bound already equals the config's is
// left alone, so a restart keeps today's raises; one that differs (the
// config changed, or `starter budget set` changed the store since) is
// set to the config's.
func applyBudgets(ctx context.Context, c tclient.Client, cfg config.Config) error {
	names := make([]string, 0, len(cfg.Budgets.Agents))
	for name := range cfg.Budgets.Agents {
		names = append(names, name)
	}
	sort.Strings(names)
	cl := client.New(c, cfg.Worker.TaskQueue)
	for _, name := range names {
		agent := name
		if agent == "-" {
			agent = ""
		}
		st, err := cl.AgentBudget(ctx, agent)
		if err != nil && !errorsIsNoStore(err) {
			return fmt.Errorf("budgets.agents.%s: %w", name, err)
		}
		ab := cfg.Budgets.Agents[name]
		for _, w := range []struct {
			window, text string
			have         *workflows.Budget
		}{{workflows.WindowDaily, ab.Daily, st.Daily}, {workflows.WindowTotal, ab.Total, st.Total}} {
			if w.text == "" {
				continue
			}
			var b *workflows.Budget
			if w.text != "none" {
				nb, err := client.ParseBudget(w.text, false)
				if err != nil {
					return fmt.Errorf("budgets.agents.%s.%s: %w", name, w.window, err)
				}
				b = &nb
			}
			if sameBudget(b, w.have) {
				continue
			}
			if _, err := cl.SetAgentBudget(ctx, agent, w.window, b, "config"); err != nil {
				return fmt.Errorf("budgets.agents.%s.%s: %w", name, w.window, err)
			}
		}
	}
	return nil
}

func sameBudget(a, b *workflows.Budget) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() && b.IsZero()
	}
	return a.String() == b.String() && a.Warn == b.Warn
}

func errorsIsNoStore(err error) bool { return errors.Is(err, client.ErrNoBudgetStore) }
