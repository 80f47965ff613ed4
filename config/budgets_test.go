package config

import (
	"strings"
	"testing"
)

// TestValidateBudgets: budgets.agents needs a window per agent, and
// NAME=VALUE items (or none) in each.
func TestValidateBudgets(t *testing.T) {
	for _, c := range []struct {
		agents map[string]AgentBudget
		want   string
	}{
		{map[string]AgentBudget{"ops": {Daily: "cost=5,tokens=2M"}, "-": {Total: "none"}}, ""},
		{map[string]AgentBudget{"ops": {}}, "budgets.agents.ops: set daily or total"},
		{map[string]AgentBudget{"ops": {Daily: "cost5"}}, `budgets.agents.ops.daily: item "cost5"`},
	} {
		errs := Config{Budgets: Budgets{Agents: c.agents}}.validateBudgets()
		got := ""
		for _, e := range errs {
			got += e.Error() + "\n"
		}
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%v: errors %q, want %q", c.agents, got, c.want)
		}
	}
}
