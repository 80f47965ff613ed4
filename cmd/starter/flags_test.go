package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestFlagHelpWithoutBackticks: no flag's help has a backtick, which
// pflag takes for the name of the flag's value (a help naming
// `approvals list` printed "--hash approvals list"). Every command of
// the tree is walked, so a new flag is checked too.
func TestFlagHelpWithoutBackticks(t *testing.T) {
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			n++
			if strings.Contains(f.Usage, "`") {
				name, _ := pflag.UnquoteUsage(f)
				t.Errorf("%s --%s: help has a backtick (shown as the value's name %q): %s", c.CommandPath(), f.Name, name, f.Usage)
			}
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
	if n < 100 {
		t.Fatalf("only %d flags seen: the walk missed commands", n)
	}
}
