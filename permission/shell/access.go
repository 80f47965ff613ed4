package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/wardenhq/warden/permission"
)

// Access is one file the command reads or writes, found statically: the
// operands and path options of read-only commands (and the directory they
// list when they name none), and the write targets of every command
// (redirections, operands of file commands, output options). It is the
// access the path rules of package permission check.
type Access = permission.Access

// Accesses returns the files the command reads and writes, in order. A
// failed analysis returns none (it asks anyway).
func (a *Analysis) Accesses() []Access {
	if a.fail != "" {
		return nil
	}
	var out []Access
	add := func(u *unit, w word, write bool) {
		ps, ok := a.resolve(w, u.cwds)
		if !ok {
			out = append(out, Access{Write: write, Path: w.val, Command: u.text, Glob: w.glob})
			return
		}
		for _, p := range ps {
			out = append(out, Access{Write: write, Path: p, Resolved: true, Glob: w.glob, Command: u.text})
		}
	}
	for _, u := range a.units {
		for _, w := range u.writeArgs() {
			add(u, w, true)
		}
		// Input redirections read a file, whatever the command.
		for _, r := range u.redirs {
			if r.op == syntax.RdrIn || r.op == syntax.RdrInOut {
				add(u, r.target, false)
			}
		}
		// The reads of a read-only command are known; so are those of
		// one that only writes through an output redirection ("cat
		// ~/.ssh/id_rsa > out" still reads the key).
		if unitRO(u) != "" && readsUnknown(u) {
			continue
		}
		reads, cwd := u.readArgs(a.cfg.Home)
		first := len(out)
		for _, w := range reads {
			add(u, w, false)
		}
		if cwd {
			if u.cwds == nil {
				out = append(out, Access{Path: ".", Command: u.text})
			}
			for _, c := range u.cwds {
				out = append(out, Access{Path: c, Resolved: true, Command: u.text})
			}
		}
		if u.recursive() {
			for i := first; i < len(out); i++ {
				out[i].Recursive = true
			}
		}
	}
	return out
}

// writeArgs returns the words naming files u writes: pathArgs (write
// redirections and operands of file commands) and the output options of
// commands that otherwise only read or fetch.
func (u *unit) writeArgs() []word {
	out := u.pathArgs()
	if len(u.args) < 2 {
		return out
	}
	var short, long string
	switch u.name() {
	case "sort":
		short, long = "o", "--output"
	case "tree":
		short = "o"
	case "curl":
		short, long = "o", "--output"
	case "wget":
		short, long = "O", "--output-document"
	case "uniq":
		if ops, issue := checkOpts(mustSpec("uniq"), u.args[1:]); issue == nil && len(ops) > 1 {
			out = append(out, ops[1])
		}
		return out
	case "git":
		long = "--output"
	default:
		return out
	}
	args := u.args[1:]
	for i := 0; i < len(args); i++ {
		v := args[i].val
		if v == "--" {
			break
		}
		if long != "" && strings.HasPrefix(v, long) {
			if val, ok := strings.CutPrefix(v, long+"="); ok {
				w := args[i]
				w.val = val
				out = append(out, w)
			} else if v == long && i+1 < len(args) {
				out = append(out, args[i+1])
			}
			continue
		}
		if short == "" || len(v) < 2 || v[0] != '-' || v[1] == '-' {
			continue
		}
		if j := strings.IndexByte(v[1:], short[0]); j >= 0 {
			if rest := v[j+2:]; rest != "" {
				w := args[i]
				w.val = rest
				out = append(out, w)
			} else if i+1 < len(args) {
				out = append(out, args[i+1])
			}
		}
	}
	return out
}

func mustSpec(n string) optSpec {
	s, _ := readOnlySpec(n)
	return s
}

// readArgs returns the words naming files a read-only u reads, and
// whether it also reads its working directory (ls or grep -r without a
// path, git in its repository). home resolves cd without an operand.
func (u *unit) readArgs(home string) (out []word, cwd bool) {
	if len(u.args) == 0 {
		return nil, false
	}
	args := u.args[1:]
	switch n := u.name(); n {
	case "find":
		return findStarts(args), false
	case "sed":
		return parseSed(args).files, false
	case "git":
		out = gitReadArgs(args)
		return out, len(out) == 0
	case "xargs":
		return xargsReadArgs(args), false
	case "cd":
		return cdReadArgs(args, home), false
	default:
		return specReadArgs(n, args)
	}
}

// gitReadArgs returns the directories of git's -C options. Later -C
// options are relative to earlier ones; each is judged as written, which
// fails closed for relative ones only when the working directory is
// unknown.
func gitReadArgs(args []word) []word {
	var out []word
	for i := 0; i < len(args); i++ {
		if args[i].val == "-C" && i+1 < len(args) {
			out = append(out, args[i+1])
			i++
			continue
		}
		if !strings.HasPrefix(args[i].val, "-") {
			break
		}
	}
	return out
}

// xargsReadArgs returns the file of xargs -a FILE, which it reads its
// arguments from.
func xargsReadArgs(args []word) []word {
	var out []word
	for i := 0; i < len(args); i++ {
		v := args[i].val
		switch {
		case v == "-a" || v == "--arg-file":
			if i+1 < len(args) {
				out = append(out, args[i+1])
			}
			i++
		case strings.HasPrefix(v, "--arg-file="):
			w := args[i]
			w.val = v[len("--arg-file="):]
			out = append(out, w)
		case strings.HasPrefix(v, "-a") && len(v) > 2 && !strings.HasPrefix(v, "--"):
			w := args[i]
			w.val = v[2:]
			out = append(out, w)
		case !strings.HasPrefix(v, "-"):
			return out
		}
	}
	return out
}

// cdReadArgs returns the directory cd enters: its operand, the home
// directory without one, $OLDPWD for "cd -".
func cdReadArgs(args []word, home string) []word {
	ops, _ := checkOpts(mustSpec("cd"), args)
	if len(ops) == 0 {
		if home == "" {
			return []word{{val: "$HOME", dynamic: true}}
		}
		return []word{{val: "~", tilde: true}}
	}
	if ops[0].val == "-" {
		return []word{{val: "$OLDPWD", dynamic: true}}
	}
	return ops[:1]
}

// specReadArgs returns the files a command of the read-only list reads:
// its operands (after grep's pattern) and the option values that look
// like paths, and whether it reads its working directory.
func specReadArgs(n string, args []word) (out []word, cwd bool) {
	spec, ok := readOnlySpec(n)
	if !ok || !spec.paths {
		return nil, false
	}
	ops, vals, _ := checkOptsVals(spec, args)
	for _, v := range vals {
		if v.tilde || strings.ContainsRune(v.val, '/') || strings.HasPrefix(v.val, ".") {
			out = append(out, v)
		}
	}
	if spec.pattern && !patternGiven(args) && !anyArg(args, func(v string) bool { return v == "--files" || v == "--type-list" }) && len(ops) > 0 {
		ops = ops[1:]
	}
	for _, w := range ops {
		if w.val == "-" && !w.dynamic {
			continue // stdin
		}
		out = append(out, w)
	}
	if len(ops) == 0 {
		cwd = spec.cwd || (oneOf(n, "grep", "egrep", "fgrep") && recursiveGrep(args))
	}
	return out, cwd
}

// patternGiven reports whether grep's pattern comes from -e or -f, so
// that every operand is a file.
func patternGiven(args []word) bool {
	for _, w := range args {
		v := w.val
		if v == "--" {
			return false
		}
		if strings.HasPrefix(v, "--regexp") || strings.HasPrefix(v, "--file") {
			return true
		}
		if len(v) > 1 && v[0] == '-' && v[1] != '-' {
			for j := 1; j < len(v); j++ {
				if v[j] == 'e' || v[j] == 'f' {
					return true
				}
				if strings.IndexByte("ABCDdm", v[j]) >= 0 {
					break
				}
			}
		}
	}
	return false
}

func recursiveGrep(args []word) bool {
	for _, w := range args {
		v := w.val
		if v == "--recursive" || v == "--dereference-recursive" {
			return true
		}
		if len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.ContainsAny(v, "rR") {
			return true
		}
	}
	return false
}

// GlobBase returns the directory part of a glob pattern before its first
// segment holding a pattern character (permission.GlobBase).
func GlobBase(p string) string { return permission.GlobBase(p) }

// recursive reports whether a read-only u reads whole trees below its
// paths.
func (u *unit) recursive() bool {
	switch u.name() {
	case "rg", "find", "du", "tree":
		return true
	case "grep", "egrep", "fgrep":
		return recursiveGrep(u.args[1:])
	case "ls":
		for _, w := range u.args[1:] {
			v := w.val
			if v == "--recursive" || len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.IndexByte(v, 'R') >= 0 {
				return true
			}
		}
	}
	return false
}

// readsUnknown reports whether a command's reads cannot be listed: it is
// not read-only even with its output redirections taken away.
func readsUnknown(u *unit) bool {
	c := *u
	c.redirs = nil
	for _, r := range u.redirs {
		if !writeRedir(r) {
			c.redirs = append(c.redirs, r)
		}
	}
	return unitROWhy(&c) != ""
}
