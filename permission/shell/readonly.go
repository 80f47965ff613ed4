package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ReadOnly reports whether the command only reads: it was analysed
// completely, it runs at least one command, every unit (including
// wrapped and nested ones) is read-only, and nothing is redirected to a
// file. A failed analysis is never read-only.
func (a *Analysis) ReadOnly() bool {
	if a.fail != "" || len(a.units) == 0 {
		return false
	}
	for _, u := range a.units {
		if !unitReadOnly(u) {
			return false
		}
	}
	return true
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

func unitReadOnly(u *unit) bool {
	for _, as := range u.assigns {
		if !roEnvSafe(as.name) {
			return false
		}
	}
	for _, r := range u.redirs {
		if writeRedir(r) {
			return false
		}
	}
	if len(u.args) == 0 {
		return true // assignments or input redirections only
	}
	if u.privileged || !u.trustedName() {
		return false
	}
	args := u.args[1:]
	switch n := u.name(); n {
	case "command":
		return true // the wrapped command is judged on its own
	case "builtin", "time", "timeout", "nice", "stdbuf", "xargs", "sh", "bash", "zsh", "dash", "ksh", "ash", "mksh":
		// Transparent wrappers: read-only when what they run is. A shell
		// without -c runs a script file or stdin, which is unknown.
		return u.inner > 0 || (u.wrapper != "" && n != "sh" && n != "bash" && n != "zsh" && n != "dash" && n != "ksh" && n != "ash" && n != "mksh")
	case "env":
		return true
	// Commands whose arguments cannot make them write or run anything.
	// [quirk] tee is in the reference's SAFE_COMMANDS but writes files,
	// so it is not read-only here.
	case "echo", "printf", "pwd", "cd", "true", "false", "ls", "cat", "head", "tail", "wc",
		"stat", "file", "which", "whereis", "type", "grep", "egrep", "fgrep", "more",
		"basename", "dirname", "realpath", "readlink", "whoami", "id", "uname", "du", "df",
		"diff", "cmp", "nl", "tac", "cut", "uniq", "md5sum", "sha1sum", "sha256sum", ":":
		return true
	}
	// Commands with options that write or run programs: every word must
	// be static to be sure.
	for _, w := range args {
		if w.dynamic {
			return false
		}
	}
	switch u.name() {
	case "rg":
		return !anyArg(args, func(v string) bool { return v == "--pre" || strings.HasPrefix(v, "--pre=") })
	case "ag", "ack":
		return !anyArg(args, func(v string) bool { return strings.HasPrefix(v, "--pager") })
	case "tree":
		return !anyArg(args, func(v string) bool {
			return v == "-o" || (strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v, "o"))
		})
	case "less":
		return !anyArg(args, func(v string) bool {
			return strings.HasPrefix(v, "-o") || strings.HasPrefix(v, "-O") || strings.HasPrefix(v, "--log-file") || strings.HasPrefix(v, "--LOG-FILE")
		})
	case "sort":
		return !anyArg(args, func(v string) bool {
			return strings.HasPrefix(v, "--output") || (strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v, "o"))
		})
	case "find":
		return !anyArg(args, mutatingFindPred)
	case "sed":
		s := parseSed(args)
		return s.err == "" && !s.inPlace
	case "git":
		return gitReadOnly(args)
	case "docker":
		return len(args) > 0 && oneOf(args[0].val, "ps", "images", "inspect", "logs", "version", "info")
	case "gh":
		if len(args) == 1 {
			return args[0].val == "status"
		}
		return len(args) >= 2 && (args[0].val == "repo" && args[1].val == "view" ||
			args[0].val == "issue" && args[1].val == "list" ||
			args[0].val == "pr" && args[1].val == "list" ||
			args[0].val == "status")
	case "python", "python3":
		return len(args) == 1 && oneOf(args[0].val, "--version", "-V")
	case "node":
		return len(args) == 1 && oneOf(args[0].val, "--version", "-v")
	case "npm":
		return len(args) > 0 && oneOf(args[0].val, "list", "ls")
	case "pip", "pip3":
		return len(args) > 0 && oneOf(args[0].val, "list", "show")
	}
	return false
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

// gitReadOnly judges "git ARGS". Global options other than --no-pager,
// -C DIR, -P and --no-optional-locks (e.g. -c, which can set a pager or
// hook) make it not read-only, as do options that write a file or run a
// pager program.
func gitReadOnly(args []word) bool {
	i := 0
	for ; i < len(args); i++ {
		v := args[i].val
		switch {
		case v == "--no-pager" || v == "-P" || v == "--no-optional-locks":
		case v == "-C":
			i++
		case strings.HasPrefix(v, "-"):
			return false
		default:
			goto sub
		}
	}
	return false
sub:
	sub, rest := args[i].val, args[i+1:]
	if anyArg(rest, func(v string) bool {
		return strings.HasPrefix(v, "--output") || strings.HasPrefix(v, "-O") ||
			strings.HasPrefix(v, "--open-files-in-pager") || strings.HasPrefix(v, "--ext-diff") ||
			strings.HasPrefix(v, "--exec")
	}) {
		return false
	}
	switch sub {
	case "status", "log", "diff", "show", "ls-files", "ls-tree", "cat-file", "rev-parse",
		"rev-list", "describe", "shortlog", "blame", "grep":
		return true
	case "branch":
		// [quirk] The reference counts any "git branch ..." (even -D) as
		// read-only; here only listing forms are.
		return listOnly(rest, "dDmMcCfu", []string{"--delete", "--move", "--copy", "--force",
			"--set-upstream-to", "--unset-upstream", "--edit-description", "--track", "--no-track", "--create-reflog"},
			[]string{"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"})
	case "tag":
		return listOnly(rest, "dasufmFev", []string{"--delete", "--annotate", "--sign", "--local-user",
			"--force", "--message", "--file", "--verify", "--edit", "--create-reflog"},
			[]string{"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format", "-n"})
	case "remote":
		var pos []string
		for _, w := range rest {
			if !strings.HasPrefix(w.val, "-") {
				pos = append(pos, w.val)
			} else if w.val != "-v" && w.val != "--verbose" {
				return false
			}
		}
		return len(pos) == 0 || oneOf(pos[0], "show", "get-url")
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
		return reading && !writing
	case "reflog":
		return len(rest) == 0 || rest[0].val == "show" || strings.HasPrefix(rest[0].val, "-")
	case "stash":
		return len(rest) > 0 && oneOf(rest[0].val, "list", "show")
	}
	return false
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
