package decide

import (
	"fmt"
	"io"

	"github.com/wardenhq/warden/permission"
)

// FailedExamples counts the results whose rule did not do what the
// example says.
func FailedExamples(rs []ExampleResult) int {
	n := 0
	for _, r := range rs {
		if !r.OK() {
			n++
		}
	}
	return n
}

// WriteExamples writes every rule of p (deny, ask, allow, then
// dangerous_commands, each in its list's order) with what it matched of
// its examples in rs (TestExamples' results), and a last line counting
// the rules, examples and failures of the policy file name.
func WriteExamples(w io.Writer, name string, p permission.Policy, rs []ExampleResult) {
	lists := []struct {
		name  string
		rules []string
	}{{permission.ListDeny, p.Deny}, {permission.ListAsk, p.Ask}, {permission.ListAllow, p.Allow}, {permission.ListDangerousCommands, p.DangerousCommands}}
	rules := 0
	for _, l := range lists {
		for i, rule := range l.rules {
			rules++
			fmt.Fprintf(w, "%s rule %d  %s\n", l.name, i+1, rule)
			n := 0
			for _, r := range rs {
				if r.List == l.name && r.Index == i+1 {
					n++
					fmt.Fprintln(w, r.line())
				}
			}
			if n == 0 {
				fmt.Fprintln(w, "  (no examples)")
			}
		}
	}
	fmt.Fprintf(w, "%s: %d rules, %d examples, %d failed\n", name, rules, len(rs), FailedExamples(rs))
}

// line is the result's line under its rule in WriteExamples: ok or
// FAIL, what the rule did, the example and its kind (or why it could
// not be checked).
func (r ExampleResult) line() string {
	status := "ok  "
	if !r.OK() {
		status = "FAIL"
	}
	what := "matches       "
	if !r.Matched {
		what = "does not match"
	}
	want := "match"
	if !r.Want {
		want = "not_match"
	}
	if r.Err != "" {
		return fmt.Sprintf("  %s  %q (%s example): %s", status, r.Example, want, r.Err)
	}
	return fmt.Sprintf("  %s  %s %q (%s example)", status, what, r.Example, want)
}
