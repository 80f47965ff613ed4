package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ReadOnly reports whether the command only reads: it was analysed
// completely, it runs at least one command, every unit (including
// wrapped and nested ones) is read-only, and nothing is redirected to a
// file. A failed analysis is never read-only.
func (a *Analysis) ReadOnly() bool { return a.NotReadOnly() == "" }

// NotReadOnly returns why the command is not read-only, naming the
// command and the option, assignment or redirection at fault, or "" when
// it is read-only.
func (a *Analysis) NotReadOnly() string {
	if a.fail != "" {
		return a.fail
	}
	if len(a.units) == 0 {
		return "the command runs nothing"
	}
	for _, u := range a.units {
		if why := unitRO(u); why != "" {
			return why
		}
	}
	return ""
}

// writeRedir reports whether r may write a file. Duplications (2>&1,
// >&-) and the harmless devices do not. [quirk] The reference treats any
// ">" in the string as a write, including 2>&1 and "> /dev/null"; this
// package looks at the parsed redirection instead.
func writeRedir(r redir) bool {
	switch r.op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return false
	case syntax.DplIn, syntax.DplOut:
		if !r.target.dynamic && (r.target.val == "-" || isDigits(r.target.val)) {
			return false
		}
		return true
	}
	return !benignDevice(r.target)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// benignDevice reports whether w names a device that writing to is
// harmless.
func benignDevice(w word) bool {
	if w.dynamic || w.glob {
		return false
	}
	switch w.val {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return true
	}
	return strings.HasPrefix(w.val, "/dev/fd/") && isDigits(w.val[len("/dev/fd/"):])
}

// roEnvSafe reports whether assigning name before a command keeps a
// read-only command read-only. It is the spec's SAFE_ENV_VARS without
// PATH, HOME, SHELL, EDITOR and PAGER, which change what runs.
func roEnvSafe(name string) bool {
	switch name {
	case "NODE_ENV", "PYTHONUNBUFFERED", "RUST_LOG", "LANG", "TERM", "NO_COLOR", "FORCE_COLOR",
		"DEBUG", "VERBOSE", "CI", "USER", "TZ", "LC_ALL", "LC_CTYPE", "COLUMNS", "LINES",
		"CLICOLOR", "CLICOLOR_FORCE":
		return true
	}
	return false
}

// suggestEnvSafe is the spec's SAFE_ENV_VARS, used for suggestions.
func suggestEnvSafe(name string) bool {
	switch name {
	case "PATH", "HOME", "SHELL", "EDITOR", "PAGER":
		return true
	}
	return roEnvSafe(name)
}

func unitReadOnly(u *unit) bool { return unitRO(u) == "" }

// unitRO returns "" when u only reads, or else why not, naming the
// command and the option, assignment or redirection that is not
// read-only. It judges u alone: commands u wraps are units of their own.
// The answer is computed once per unit.
func unitRO(u *unit) string {
	if !u.roDone {
		u.roWhy, u.roDone = unitROWhy(u), true
	}
	return u.roWhy
}

func unitROWhy(u *unit) string {
	if why := prefixROWhy(u); why != "" {
		return why
	}
	if len(u.args) == 0 {
		return "" // assignments or input redirections only
	}
	n := u.name()
	if u.privileged {
		return "`" + n + "` runs with sudo or doas"
	}
	if !u.trustedName() {
		return "`" + u.args[0].val + "` is not a command from PATH or a system directory"
	}
	args := u.args[1:]
	if rule := roRule(n); rule != nil {
		return rule(u, n, args)
	}
	if spec, ok := readOnlySpec(n); ok {
		return specROWhy(spec, n, args)
	}
	for _, w := range args {
		if w.dynamic {
			return "`" + n + "` has an argument only known at run time"
		}
	}
	ro := readOnlyForm(n)
	if ro == nil {
		return "`" + n + "` is not on the read-only list"
	}
	if ro(args) {
		return ""
	}
	return "`" + strings.TrimSpace(n+" "+firstArg(args)) + "` is not a read-only form of " + n
}

// prefixROWhy judges what comes around u's words: a prefix assignment
// that changes what runs, or a redirection that writes a file.
func prefixROWhy(u *unit) string {
	for _, as := range u.assigns {
		if !roEnvSafe(as.name) {
			return "the assignment " + as.name + "=… changes what runs or where"
		}
	}
	for _, r := range u.redirs {
		if writeRedir(r) {
			return "the redirection " + r.op.String() + " " + r.target.val + " writes a file"
		}
	}
	return ""
}

// roRule returns the read-only judgement of the commands judged by their
// own rules rather than by an option table (wrappers, find, sed, git),
// or nil.
func roRule(n string) func(u *unit, n string, args []word) string {
	switch n {
	case "command", "env":
		return wrappedRO // the wrapped command is judged on its own
	case "builtin", "time", "timeout", "nice", "stdbuf", "xargs", "sh", "bash", "zsh", "dash", "ksh", "ash", "mksh":
		return transparentRO
	case "find":
		return findRO
	case "sed":
		return sedRO
	case "git":
		return func(_ *unit, _ string, args []word) string { return gitRO(args) }
	}
	return nil
}

// wrappedRO judges command and env alone: the command they run is a
// unit of its own.
func wrappedRO(*unit, string, []word) string { return "" }

// transparentRO judges a transparent wrapper: read-only when what it
// runs is. A shell without -c runs a script file or stdin, which is
// unknown.
func transparentRO(u *unit, n string, _ []word) string {
	if u.inner > 0 || (u.wrapper != "" && !shellName(n)) {
		return ""
	}
	return "`" + n + "` runs a script that cannot be seen"
}

// shellName reports whether n is one of the shells whose -c scripts are
// analysed.
func shellName(n string) bool {
	return oneOf(n, "sh", "bash", "zsh", "dash", "ksh", "ash", "mksh")
}

// findRO judges find by its predicates.
func findRO(_ *unit, _ string, args []word) string {
	for _, w := range args {
		if w.dynamic {
			return "`find` has an argument only known at run time"
		}
		if mutatingFindPred(w.val) {
			return "`find " + w.val + "` writes files or runs programs"
		}
	}
	return ""
}

// sedRO judges sed by its options and expressions (spec §2.5).
func sedRO(_ *unit, _ string, args []word) string {
	for _, w := range args {
		if w.dynamic {
			return "`sed` has an argument only known at run time"
		}
	}
	s := parseSed(args)
	if s.err != "" {
		return "`sed`: " + s.err
	}
	if s.inPlace {
		return "`sed -i` edits files in place"
	}
	return ""
}

// specROWhy judges a command of the read-only list by its options.
func specROWhy(spec optSpec, n string, args []word) string {
	ops, issue := checkOpts(spec, args)
	if issue != nil {
		return "`" + n + " " + issue.opt + "` " + issue.why
	}
	if n == "uniq" && len(ops) > 1 {
		return "`uniq` writes its second operand (" + ops[1].val + ")"
	}
	return ""
}

// readOnlyForm returns, for the tools with read-only forms (docker, gh,
// python, node, npm, pip), whether the arguments are one; it is nil for
// the commands not on the read-only list.
func readOnlyForm(n string) func(args []word) bool {
	switch n {
	case "docker":
		return firstArgIn("ps", "images", "inspect", "logs", "version", "info")
	case "gh":
		return ghReadOnly
	case "python", "python3":
		return onlyArgIn("--version", "-V")
	case "node":
		return onlyArgIn("--version", "-v")
	case "npm":
		return firstArgIn("list", "ls")
	case "pip", "pip3":
		return firstArgIn("list", "show")
	}
	return nil
}

// firstArgIn reports whether the first argument is one of set.
func firstArgIn(set ...string) func(args []word) bool {
	return func(args []word) bool { return len(args) > 0 && oneOf(args[0].val, set...) }
}

// onlyArgIn reports whether there is one argument, one of set.
func onlyArgIn(set ...string) func(args []word) bool {
	return func(args []word) bool { return len(args) == 1 && oneOf(args[0].val, set...) }
}

// ghReadOnly reports whether gh's arguments are a read-only form: gh
// status, gh repo view, gh issue list, gh pr list.
func ghReadOnly(args []word) bool {
	if len(args) == 0 {
		return false
	}
	if args[0].val == "status" {
		return true
	}
	return len(args) >= 2 && (args[0].val == "repo" && args[1].val == "view" ||
		args[0].val == "issue" && args[1].val == "list" ||
		args[0].val == "pr" && args[1].val == "list")
}

func firstArg(args []word) string {
	if len(args) == 0 {
		return ""
	}
	return args[0].val
}

func oneOf(s string, set ...string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

func anyArg(args []word, f func(string) bool) bool {
	for _, w := range args {
		if f(w.val) {
			return true
		}
	}
	return false
}

func mutatingFindPred(v string) bool {
	return oneOf(v, "-delete", "-exec", "-execdir", "-fls", "-fprint", "-fprint0", "-fprintf", "-ok", "-okdir")
}

// gitBadOpt classifies options of read-only git subcommands that write
// a file, run another program (pager, diff or textconv driver, filter,
// gpg) or read outside the repository; "" means none of those.
func gitBadOpt(v string) (string, string) {
	name, _, _ := strings.Cut(v, "=")
	switch name {
	case "--output":
		return name, whyWrites
	case "-O", "--open-files-in-pager", "--ext-diff", "--textconv", "--filters", "--exec", "--upload-pack",
		"--show-signature", "--receive-pack":
		return name, whyExec
	case "--no-index", "--contents":
		return name, "reads files outside the repository"
	}
	if strings.HasPrefix(v, "-O") && len(v) > 2 {
		return "-O", whyExec
	}
	return "", ""
}

// gitRO judges "git ARGS" like unitRO. Global options other than
// --no-pager, -P, --no-optional-locks and -C DIR are not read-only (-c
// sets configuration that can name a pager or hook; --git-dir and
// --work-tree point outside the workspace).
func gitRO(args []word) string {
	i, why := gitROGlobals(args)
	if why != "" {
		return why
	}
	sub, rest := args[i].val, args[i+1:]
	for _, w := range rest {
		if w.dynamic && (w.val == "" || w.val[0] == '$') {
			return "`git " + sub + " " + w.val + "` may be an option (a variable in option position)"
		}
		if name, why := gitBadOpt(w.val); why != "" {
			return "`git " + sub + " " + name + "` " + why
		}
	}
	if rule := gitSubRO(sub); rule != nil {
		return rule(sub, rest)
	}
	return "`git " + sub + "` is not a read-only git subcommand"
}

// gitROGlobals skips the read-only global options of git and returns the
// index of the subcommand, or why the command is not read-only.
func gitROGlobals(args []word) (int, string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := w.val
		switch {
		case w.dynamic && (v == "" || v[0] == '$'):
			return 0, "`git " + v + "` may be an option (a variable in option position)"
		case v == "--no-pager" || v == "-P" || v == "--no-optional-locks":
		case v == "-C":
			i++
		case v == "-c" || strings.HasPrefix(v, "--config-env"):
			return 0, "`git " + v + "` " + whyConfig
		case strings.HasPrefix(v, "-"):
			name, _, _ := strings.Cut(v, "=")
			return 0, "`git " + name + "` is not a known read-only git option"
		default:
			return i, ""
		}
	}
	return 0, "`git` without a subcommand"
}

// gitSubRO returns the read-only judgement of a git subcommand with
// read-only forms, given its arguments; nil for the other subcommands.
func gitSubRO(sub string) func(sub string, rest []word) string {
	switch sub {
	case "status", "log", "diff", "show", "ls-files", "ls-tree", "cat-file", "rev-parse",
		"rev-list", "describe", "shortlog", "blame", "grep":
		return gitKnownOptsRO
	case "branch":
		return gitBranchRO
	case "tag":
		return gitTagRO
	case "remote":
		return gitRemoteRO
	case "config":
		return gitConfigRO
	case "reflog":
		return gitReflogRO
	case "stash":
		return gitStashRO
	}
	return nil
}

// gitKnownOptsRO judges the read-only subcommands by their options.
func gitKnownOptsRO(sub string, rest []word) string {
	if opt := gitUnknownOpt(sub, rest); opt != "" {
		return "`git " + sub + " " + opt + "` is not a known read-only git option"
	}
	return ""
}

// gitBranchRO: [quirk] the reference counts any "git branch ..." (even
// -D) as read-only; here only listing forms are.
func gitBranchRO(_ string, rest []word) string {
	if listOnly(rest, "dDmMcCfu", []string{"--delete", "--move", "--copy", "--force",
		"--set-upstream-to", "--unset-upstream", "--edit-description", "--track", "--no-track", "--create-reflog"},
		[]string{"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"}) {
		return ""
	}
	return "`git branch` with these arguments " + whyRefs
}

// gitTagRO accepts the listing forms of git tag.
func gitTagRO(_ string, rest []word) string {
	if listOnly(rest, "dasufmFev", []string{"--delete", "--annotate", "--sign", "--local-user",
		"--force", "--message", "--file", "--verify", "--edit", "--create-reflog"},
		[]string{"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format", "-n"}) {
		return ""
	}
	return "`git tag` with these arguments " + whyRefs
}

// gitRemoteRO accepts git remote [-v] and git remote get-url.
func gitRemoteRO(_ string, rest []word) string {
	var pos []string
	for _, w := range rest {
		if !strings.HasPrefix(w.val, "-") {
			pos = append(pos, w.val)
		} else if w.val != "-v" && w.val != "--verbose" {
			return "`git remote " + w.val + "` is not a known read-only option"
		}
	}
	if len(pos) == 0 || pos[0] == "get-url" {
		return ""
	}
	if pos[0] == "show" {
		return "`git remote show` " + whyNetwork
	}
	return "`git remote " + pos[0] + "` changes remotes"
}

// gitConfigRO accepts git config when it only gets or lists.
func gitConfigRO(_ string, rest []word) string {
	reading, writing := false, false
	for _, w := range rest {
		switch w.val {
		case "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "get", "list":
			reading = true
		case "--add", "--unset", "--unset-all", "--replace-all", "--edit", "-e", "--rename-section",
			"--remove-section", "set", "unset", "rename-section", "remove-section", "edit":
			writing = true
		}
	}
	if reading && !writing {
		return ""
	}
	return "`git config` with these arguments changes configuration"
}

// gitReflogRO accepts git reflog and git reflog show.
func gitReflogRO(_ string, rest []word) string {
	if len(rest) == 0 || rest[0].val == "show" || strings.HasPrefix(rest[0].val, "-") {
		return ""
	}
	return "`git reflog " + rest[0].val + "` " + whyRefs
}

// gitStashRO accepts git stash list and git stash show.
func gitStashRO(_ string, rest []word) string {
	if len(rest) > 0 && oneOf(rest[0].val, "list", "show") {
		return ""
	}
	return "`git stash` " + whyRefs
}

// listOnly reports whether the arguments of git branch/tag only list:
// no mutating short flag or long option, and positional arguments only
// with -l/--list (as patterns) or as values of the listed options.
func listOnly(rest []word, badShort string, badLong, valued []string) bool {
	list := false
	positional := false
	for i := 0; i < len(rest); i++ {
		v := rest[i].val
		switch {
		case v == "-l" || v == "--list":
			list = true
		case strings.HasPrefix(v, "--"):
			name, _, hasVal := strings.Cut(v, "=")
			if oneOf(name, badLong...) {
				return false
			}
			if oneOf(name, valued...) && !hasVal {
				i++
			}
		case strings.HasPrefix(v, "-") && len(v) > 1:
			if oneOf(v, valued...) {
				i++
				continue
			}
			if strings.ContainsAny(v[1:], badShort) {
				return false
			}
			if strings.Contains(v, "l") {
				list = true
			}
		default:
			positional = true
		}
	}
	return !positional || list
}
