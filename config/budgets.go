package config

import (
	"fmt"
	"sort"
	"strings"
)

// Budgets declares agent budgets the worker applies to the agents'
// budget stores when it starts.
type Budgets struct {
	// Agents are the agents' bounds, by agent label ("-": the turns
	// without one).
	Agents map[string]AgentBudget `yaml:"agents"`
}

// AgentBudget is an agent's daily (UTC day) and total bound, each
// written as `starter budget set` takes it ("cost=5,tokens=2M"; "none"
// clears it; empty leaves the store's as it is).
type AgentBudget struct {
	Daily string `yaml:"daily"`
	Total string `yaml:"total"`
}

// validateBudgets checks the shape of budgets.agents: every agent sets a
// window, every window is none or NAME=VALUE items (the worker parses
// the amounts when it starts and fails on a bad one).
func (c Config) validateBudgets() []error {
	var errs []error
	names := make([]string, 0, len(c.Budgets.Agents))
	for name := range c.Budgets.Agents {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b := c.Budgets.Agents[name]
		key := "budgets.agents." + name
		if strings.TrimSpace(name) == "" {
			errs = append(errs, fmt.Errorf("budgets.agents: an empty agent name (use - for the turns without a label)"))
		}
		if b.Daily == "" && b.Total == "" {
			errs = append(errs, fmt.Errorf("%s: set daily or total", key))
		}
		for _, w := range []struct{ name, v string }{{"daily", b.Daily}, {"total", b.Total}} {
			if w.v == "" || w.v == "none" {
				continue
			}
			for _, item := range strings.Split(w.v, ",") {
				if k, v, ok := strings.Cut(item, "="); !ok || strings.TrimSpace(k) == "" || strings.TrimSpace(v) == "" {
					errs = append(errs, fmt.Errorf("%s.%s: item %q: want NAME=VALUE (cost=5,tokens=2M) or none", key, w.name, item))
				}
			}
		}
	}
	return errs
}
