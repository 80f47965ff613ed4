// Package shell analyses Bash commands for the permission engine, with a
// real parser (mvdan.cc/sh/v3/syntax) rather than regular expressions
// over the raw string.
//
// [Analyze] parses a command once into the simple commands it runs
// ("units"): the commands of lists, pipelines, subshells and blocks, the
// commands behind wrappers (sudo, env, xargs, timeout, nohup, command,
// exec, nice, stdbuf, time), the scripts of "bash -c" and friends, the
// commands of find -exec, and those inside command and process
// substitutions. Words are resolved the way the shell would (quotes,
// escapes, tilde) without running anything; a parameter expansion makes a
// word dynamic, and anything that needs code to run to be understood
// (command, process and arithmetic substitution, complex ${...}
// expansions, eval, loops, conditionals, functions) makes the analysis
// fail. The analysis fails closed: a failed analysis is never read-only,
// never auto-allowed and never matches an allow rule.
//
// [Analysis.Check] applies the layers of AgentScope's Bash
// check_permissions (spec §2) in order; [Analysis.ReadOnly],
// [Analysis.MatchRule] and [Analysis.Suggestions] implement the other
// checker methods. Where the reference behaves accidentally (a [quirk] in
// the spec) this package chooses the safe behaviour; each choice is noted
// where it is made.
package shell
