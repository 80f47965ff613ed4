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
	switch n {
	case "command":
		return "" // the wrapped command is judged on its own
	case "builtin", "time", "timeout", "nice", "stdbuf", "xargs", "sh", "bash", "zsh", "dash", "ksh", "ash", "mksh":
		// Transparent wrappers: read-only when what they run is. A shell
		// without -c runs a script file or stdin, which is unknown.
		if u.inner > 0 || (u.wrapper != "" && n != "sh" && n != "bash" && n != "zsh" && n != "dash" && n != "ksh" && n != "ash" && n != "mksh") {
			return ""
		}
		return "`" + n + "` runs a script that cannot be seen"
	case "env":
		return ""
	case "find":
		for _, w := range args {
			if w.dynamic {
				return "`find` has an argument only known at run time"
			}
			if mutatingFindPred(w.val) {
				return "`find " + w.val + "` writes files or runs programs"
			}
		}
		return ""
	case "sed":
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
	case "git":
		return gitRO(args)
	}
	if spec, ok := readOnlySpec(n); ok {
		ops, issue := checkOpts(spec, args)
		if issue != nil {
			return "`" + n + " " + issue.opt + "` " + issue.why
		}
		if n == "uniq" && len(ops) > 1 {
			return "`uniq` writes its second operand (" + ops[1].val + ")"
		}
		return ""
	}
	for _, w := range args {
		if w.dynamic {
			return "`" + n + "` has an argument only known at run time"
		}
	}
	switch n {
	case "docker":
		if len(args) > 0 && oneOf(args[0].val, "ps", "images", "inspect", "logs", "version", "info") {
			return ""
		}
	case "gh":
		if len(args) == 1 && args[0].val == "status" || len(args) >= 2 && (args[0].val == "repo" && args[1].val == "view" ||
			args[0].val == "issue" && args[1].val == "list" ||
			args[0].val == "pr" && args[1].val == "list" ||
			args[0].val == "status") {
			return ""
		}
	case "python", "python3":
		if len(args) == 1 && oneOf(args[0].val, "--version", "-V") {
			return ""
		}
	case "node":
		if len(args) == 1 && oneOf(args[0].val, "--version", "-v") {
			return ""
		}
	case "npm":
		if len(args) > 0 && oneOf(args[0].val, "list", "ls") {
			return ""
		}
	case "pip", "pip3":
		if len(args) > 0 && oneOf(args[0].val, "list", "show") {
			return ""
		}
	default:
		return "`" + n + "` is not on the read-only list"
	}
	return "`" + strings.TrimSpace(n+" "+firstArg(args)) + "` is not a read-only form of " + n
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
	i := 0
	for ; i < len(args); i++ {
		w := args[i]
		v := w.val
		switch {
		case w.dynamic && (v == "" || v[0] == '$'):
			return "`git " + v + "` may be an option (a variable in option position)"
		case v == "--no-pager" || v == "-P" || v == "--no-optional-locks":
		case v == "-C":
			i++
		case v == "-c" || strings.HasPrefix(v, "--config-env"):
			return "`git " + v + "` " + whyConfig
		case strings.HasPrefix(v, "-"):
			name, _, _ := strings.Cut(v, "=")
			return "`git " + name + "` is not a known read-only git option"
		default:
			goto sub
		}
	}
	return "`git` without a subcommand"
sub:
	sub, rest := args[i].val, args[i+1:]
	for _, w := range rest {
		if w.dynamic && (w.val == "" || w.val[0] == '$') {
			return "`git " + sub + " " + w.val + "` may be an option (a variable in option position)"
		}
		if name, why := gitBadOpt(w.val); why != "" {
			return "`git " + sub + " " + name + "` " + why
		}
	}
	switch sub {
	case "status", "log", "diff", "show", "ls-files", "ls-tree", "cat-file", "rev-parse",
		"rev-list", "describe", "shortlog", "blame", "grep":
		if opt := gitUnknownOpt(sub, rest); opt != "" {
			return "`git " + sub + " " + opt + "` is not a known read-only git option"
		}
		return ""
	case "branch":
		// [quirk] The reference counts any "git branch ..." (even -D) as
		// read-only; here only listing forms are.
		if listOnly(rest, "dDmMcCfu", []string{"--delete", "--move", "--copy", "--force",
			"--set-upstream-to", "--unset-upstream", "--edit-description", "--track", "--no-track", "--create-reflog"},
			[]string{"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"}) {
			return ""
		}
		return "`git branch` with these arguments " + whyRefs
	case "tag":
		if listOnly(rest, "dasufmFev", []string{"--delete", "--annotate", "--sign", "--local-user",
			"--force", "--message", "--file", "--verify", "--edit", "--create-reflog"},
			[]string{"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format", "-n"}) {
			return ""
		}
		return "`git tag` with these arguments " + whyRefs
	case "remote":
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
	case "config":
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
	case "reflog":
		if len(rest) == 0 || rest[0].val == "show" || strings.HasPrefix(rest[0].val, "-") {
			return ""
		}
		return "`git reflog " + rest[0].val + "` " + whyRefs
	case "stash":
		if len(rest) > 0 && oneOf(rest[0].val, "list", "show") {
			return ""
		}
		return "`git stash` " + whyRefs
	}
	return "`git " + sub + "` is not a read-only git subcommand"
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
