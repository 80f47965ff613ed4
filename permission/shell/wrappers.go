package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// add records u and the units it runs: wrapped commands, bash -c
// scripts and find -exec commands. It also tracks cd.
func (a *Analysis) add(u *unit, depth int) {
	a.units = append(a.units, u)
	if len(u.args) == 0 {
		return
	}
	if u.args[0].dynamic || u.args[0].glob {
		a.failf("Command name cannot be statically resolved")
		return
	}
	if depth > 4*maxDepth {
		a.failf("Command nesting is too deep to analyze")
		return
	}
	args := u.args[1:]
	switch n := u.name(); n {
	case "eval", "trap", "fc", "enable":
		a.failf("Command contains %s which cannot be statically analyzed", n)
	case "cd":
		a.cd(u)
	case "pushd", "popd":
		a.cwds = nil
	case "sudo", "doas":
		a.sudo(u, n, args, depth)
	case "env":
		a.env(u, args, depth)
	case "command":
		a.command(u, args, depth)
	case "xargs":
		a.xargs(u, args, depth)
	case "find":
		a.find(u, args, depth)
	case "sh", "bash", "zsh", "dash", "ksh", "ash", "mksh":
		a.shellC(u, args, depth)
	default:
		if rest, ok := wrapped(n, args); ok {
			a.wrap(u, n, rest, nil, depth, false, false)
		}
	}
}

// wrapped returns the command the plain wrapper n (builtin, nohup, exec,
// time, nice, stdbuf, timeout) runs, given its arguments; ok is false
// when n is not one.
func wrapped(n string, args []word) (rest []word, ok bool) {
	switch n {
	case "builtin", "nohup":
		if len(args) > 0 && args[0].val == "--" {
			return args[1:], true
		}
		return args, true
	case "exec":
		return afterOpts(args, "a", ""), true
	case "time":
		return afterOpts(args, "fo", ""), true
	case "nice":
		return afterOpts(args, "n", "adjustment"), true
	case "stdbuf":
		return afterOpts(args, "ioe", "input output error"), true
	case "timeout":
		rest = afterOpts(args, "sk", "signal kill-after")
		if len(rest) > 0 {
			rest = rest[1:] // the duration
		}
		return rest, true
	}
	return nil, false
}

// afterOpts is skipOpts without its ok: nil when an option is dynamic.
func afterOpts(args []word, withValue, longValue string) []word {
	rest, _ := skipOpts(args, withValue, longValue)
	return rest
}

// sudo records the command sudo or doas runs, with privileges.
func (a *Analysis) sudo(u *unit, n string, args []word, depth int) {
	rest, ok := skipOpts(args, "ugCDhprtUTR", "")
	if !ok {
		a.failf("Command contains %s options which cannot be statically analyzed", n)
		return
	}
	a.wrap(u, n, rest, nil, depth, true, false)
}

// command records the command "command" runs; command -v/-V only looks
// a name up.
func (a *Analysis) command(u *unit, args []word, depth int) {
	rest, _ := skipOpts(args, "", "")
	for _, w := range args[:len(args)-len(rest)] {
		if strings.ContainsAny(w.val, "vV") {
			return
		}
	}
	a.wrap(u, "command", rest, nil, depth, false, false)
}

// wrap records the command rest run by wrapper u.
func (a *Analysis) wrap(u *unit, kind string, rest []word, assigns []assign, depth int, privileged, unknownCwd bool) {
	u.wrapper = kind
	if len(rest) == 0 && len(assigns) == 0 {
		return
	}
	in := &unit{
		text:       joinWords(rest),
		assigns:    assigns,
		args:       rest,
		nested:     true,
		privileged: u.privileged || privileged,
		cwds:       u.cwds,
	}
	if unknownCwd {
		in.cwds = nil
	}
	u.inner++
	if len(rest) == 0 {
		a.units = append(a.units, in)
		return
	}
	a.add(in, depth+1)
}

func joinWords(ws []word) string {
	var b strings.Builder
	for i, w := range ws {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.val)
	}
	return b.String()
}

// skipOpts skips leading options. Short options listed in withValue take
// a value (attached or as the next word), as do the long options listed
// (space separated) in longValue. It stops at "--" (skipped) or at the
// first non-option word. ok is false when an option word is dynamic.
func skipOpts(args []word, withValue, longValue string) (rest []word, ok bool) {
	longs := strings.Fields(longValue)
	for i := 0; i < len(args); i++ {
		v := args[i].val
		if args[i].dynamic && strings.HasPrefix(v, "-") {
			return nil, false
		}
		if v == "--" {
			return args[i+1:], true
		}
		if len(v) < 2 || v[0] != '-' {
			return args[i:], true
		}
		if strings.HasPrefix(v, "--") {
			name, _, hasVal := strings.Cut(v[2:], "=")
			for _, l := range longs {
				if l == name && !hasVal {
					i++
				}
			}
			continue
		}
		for j := 1; j < len(v); j++ {
			if strings.IndexByte(withValue, v[j]) >= 0 {
				if j == len(v)-1 {
					i++
				}
				break
			}
		}
	}
	return nil, true
}

func (a *Analysis) cd(u *unit) {
	rest, _ := skipOpts(u.args[1:], "", "")
	if len(rest) == 0 {
		if a.cfg.Home == "" {
			a.cwds = nil
			return
		}
		rest = []word{{val: "~", tilde: true}}
	}
	if rest[0].val == "-" {
		a.cwds = nil
		return
	}
	ps, ok := a.resolve(rest[0], a.cwds)
	if !ok || a.cwds == nil {
		a.cwds = nil
		return
	}
	// cd may fail, so the old directories stay possible, unless the
	// commands after it only run when it succeeded (cd X && ...).
	next := append([]string(nil), a.cwds...)
	if a.andLeft {
		next = next[:0]
	}
	for _, p := range ps {
		if !contains(next, p) {
			next = append(next, p)
		}
	}
	if len(next) > maxCwds {
		next = nil
	}
	a.cwds = next
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func (a *Analysis) env(u *unit, args []word, depth int) {
	var assigns []assign
	unknownCwd := false
	i := 0
loop:
	for ; i < len(args); i++ {
		v := args[i].val
		switch {
		case args[i].dynamic && strings.HasPrefix(v, "-"):
			a.failf("Command contains env options which cannot be statically analyzed")
			return
		case v == "--":
			i++
			break loop
		case v == "-S" || strings.HasPrefix(v, "--split-string") || (strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v, "S")):
			a.failf("Command contains env -S which cannot be statically analyzed")
			return
		case v == "-u" || v == "--unset":
			i++
		case v == "-C" || v == "--chdir":
			i++
			unknownCwd = true
		case strings.HasPrefix(v, "--chdir=") || strings.HasPrefix(v, "-C"):
			unknownCwd = true
		case strings.HasPrefix(v, "-"):
		case strings.Contains(v, "=") && validName(v[:strings.IndexByte(v, '=')]):
			name, val, _ := strings.Cut(v, "=")
			w := args[i]
			w.val = val
			assigns = append(assigns, assign{name: name, value: w})
		default:
			break loop
		}
	}
	rest := []word{}
	if i < len(args) {
		rest = args[i:]
	}
	a.wrap(u, "env", rest, assigns, depth, false, unknownCwd)
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func (a *Analysis) xargs(u *unit, args []word, depth int) {
	rest, ok := skipOpts(args, "adEILnPs", "arg-file delimiter eof max-args max-lines max-procs max-chars process-slot-var")
	if !ok {
		a.failf("Command contains xargs options which cannot be statically analyzed")
		return
	}
	replace := ""
	for i, w := range args[:len(args)-len(rest)] {
		switch {
		case w.val == "-I" && i+1 < len(args):
			replace = args[i+1].val
		case strings.HasPrefix(w.val, "-I") && len(w.val) > 2:
			replace = w.val[2:]
		case w.val == "-i" || strings.HasPrefix(w.val, "--replace"):
			replace = "{}"
		}
	}
	if len(rest) == 0 {
		rest = []word{{val: "echo"}}
	}
	in := make([]word, 0, len(rest)+1)
	for _, w := range rest {
		if replace != "" && strings.Contains(w.val, replace) {
			w.dynamic = true
		}
		in = append(in, w)
	}
	// The arguments xargs reads from stdin are unknown.
	in = append(in, word{val: "$XARGS", dynamic: true})
	a.wrap(u, "xargs", in, nil, depth, false, false)
}

// findTests are find predicates that restrict which files an action
// applies to.
func findTest(p string) bool {
	switch p {
	case "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
		"-type", "-newer", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-size",
		"-user", "-group", "-perm", "-empty", "-links", "-inum", "-samefile", "-lname", "-ilname":
		return true
	}
	return false
}

func (a *Analysis) find(u *unit, args []word, depth int) {
	// Start paths come first; the expression starts at the first word
	// beginning with "-", "(" or "!".
	i := 0
	for ; i < len(args); i++ {
		v := args[i].val
		if strings.HasPrefix(v, "-") || v == "(" || v == "!" {
			break
		}
	}
	for ; i < len(args); i++ {
		v := args[i].val
		switch {
		case findTest(v):
			u.findTests = true
		case v == "-delete":
			u.findDelete = true
		case v == "-fprint" || v == "-fprint0" || v == "-fls" || v == "-fprintf":
			if i+1 < len(args) {
				u.redirs = append(u.redirs, redir{op: syntax.RdrOut, target: args[i+1]})
			}
		case v == "-exec" || v == "-execdir" || v == "-ok" || v == "-okdir":
			j := i + 1
			var cmd []word
			for ; j < len(args) && args[j].val != ";" && args[j].val != "+"; j++ {
				w := args[j]
				if strings.Contains(w.val, "{}") {
					w.dynamic = true
				}
				cmd = append(cmd, w)
			}
			unknown := v == "-execdir" || v == "-okdir"
			a.wrap(u, "find", cmd, nil, depth, false, unknown)
			i = j
		}
	}
}

// shellC analyses "bash -c SCRIPT": the script is parsed and its commands
// are nested units. A dynamic script makes the analysis fail.
func (a *Analysis) shellC(u *unit, args []word, depth int) {
	hasC := false
	var script *word
	for i := 0; i < len(args); i++ {
		v := args[i].val
		if v == "--" || v == "-" {
			break
		}
		if strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+") {
			if v == "-o" || v == "+o" || v == "-O" || v == "+O" {
				i++
				continue
			}
			if !strings.HasPrefix(v, "--") && strings.Contains(v, "c") {
				hasC = true
			}
			continue
		}
		if hasC {
			script = &args[i]
		}
		break
	}
	u.wrapper = path.Base(u.args[0].val)
	if !hasC {
		return // runs a script file or stdin: an ordinary command
	}
	if script == nil || script.dynamic {
		a.failf("Command contains a %s -c script which cannot be statically analyzed", u.name())
		return
	}
	f, err := a.parse(script.val)
	if err != nil {
		a.failf("Command parsing failed, cannot verify safety")
		return
	}
	saved := a.cwds
	a.cwds = u.cwds
	before := len(a.units)
	a.stmts(script.val, f.Stmts, depth+1, true, nil)
	u.inner += len(a.units) - before
	a.cwds = saved
}
