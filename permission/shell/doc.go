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
// Plain commands (words, simple quotes, ";", "&&", "||", "|" and plain
// redirections) skip the parser: a fast path builds the same units, and
// a test and a fuzz target check that the two agree. An [Analyzer] reuses
// parsers across calls.
//
// Read-only is judged per command from a table of its options
// (options.go): options that write a file, run another program or read
// configuration able to do either, and any option the table does not
// know, make the command not read-only, and [Analysis.NotReadOnly] says
// which. [Analysis.Accesses] lists the files a command reads (operands
// and path options of read-only commands, the directory a listing
// reads) and writes (redirections, operands of file commands, output
// options), resolved against the working directories a cd chain may
// leave, for the path rules of the tools package.
//
// [Analysis.Check] applies the layers of AgentScope's Bash
// check_permissions (spec §2) in order; [Analysis.ReadOnly],
// [Analysis.MatchRule] and [Analysis.Suggestions] implement the other
// checker methods. Where the reference behaves accidentally (a [quirk] in
// the spec) this package chooses the safe behaviour; each choice is noted
// where it is made.
package shell
