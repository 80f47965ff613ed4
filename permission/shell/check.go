package shell

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/wardenhq/warden/permission"
)

// Config tells the analyser where a command runs. All paths are paths
// inside the backend; they are handled lexically (path.Clean), never
// resolved on the host.
type Config struct {
	// Workdir is the directory the command starts in; relative paths
	// resolve against it. Empty means unknown: relative paths are then
	// unresolvable.
	Workdir string
	// Home is the backend user's home directory, for ~ and for the
	// dangerous-removal check. Empty means unknown.
	Home string
	// WorkingDirs are the extra directories ACCEPT_EDITS and DONT_ASK
	// may auto-allow filesystem commands in (Workdir always counts).
	// Relative entries resolve against Workdir.
	WorkingDirs []string
	// DangerousFiles and DangerousDirs replace permission.DefaultDangerousFiles and
	// permission.DefaultDangerousDirs when non-nil; an empty non-nil list turns the
	// check off.
	DangerousFiles []string
	DangerousDirs  []string
	// DangerousCommands are extra dangerous-command patterns (rule
	// contents such as "terraform destroy:*", matched like a deny rule's)
	// whose commands always ask, as the built-in checks of
	// [Analysis.DangerousCommand] do.
	DangerousCommands []string
	// noFast turns the fast path off (tests compare it with the parser).
	noFast bool
}

func (c Config) files() []string {
	if c.DangerousFiles != nil {
		return c.DangerousFiles
	}
	return permission.DefaultDangerousFiles()
}

func (c Config) dirs() []string {
	if c.DangerousDirs != nil {
		return c.DangerousDirs
	}
	return permission.DefaultDangerousDirs()
}

// workingDirs returns the cleaned absolute working directories,
// computed once per analysis.
func (a *Analysis) workingDirs() []string {
	if a.wds == nil {
		a.wds = a.cfg.workingDirs()
		if a.wds == nil {
			a.wds = []string{}
		}
	}
	return a.wds
}

// workingDirs returns the cleaned absolute working directories.
func (c Config) workingDirs() []string {
	out := make([]string, 0, 1+len(c.WorkingDirs))
	add := func(d string) {
		if d == "" {
			return
		}
		if !path.IsAbs(d) {
			if c.Workdir == "" || !path.IsAbs(c.Workdir) {
				return
			}
			d = path.Join(c.Workdir, d)
		}
		d = path.Clean(d)
		if !contains(out, d) {
			out = append(out, d)
		}
	}
	add(c.Workdir)
	for _, d := range c.WorkingDirs {
		add(d)
	}
	return out
}

// globDangerous is IsDangerousPath for a path containing glob characters:
// it reports whether the pattern could match a sensitive file or
// directory. The files the host runs later (permission.RunLaterFiles)
// are left out here: "rm *" is judged as the removal it is, not as a
// write to a conftest.py it might match; a run-later file a glob does
// reach is kept by the sandbox.
func globDangerous(p string, files, dirs []string) bool {
	lp := strings.ToLower(p)
	segs := strings.Split(lp, "/")
	later := permission.RunLaterFiles()
	for _, f := range files {
		if slices.Contains(later, f) {
			continue
		}
		fs := strings.Split(strings.ToLower(f), "/")
		if len(fs) > len(segs) {
			continue
		}
		all := true
		for i, part := range fs {
			if !globMatch(segs[len(segs)-len(fs)+i], part) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	for _, seg := range segs {
		for _, d := range dirs {
			if globMatch(seg, strings.ToLower(d)) {
				return true
			}
		}
	}
	return false
}

// globMatch matches one path segment like the shell does: a name
// starting with "." only matches a pattern starting with ".". A bad
// pattern matches (fail closed).
func globMatch(pattern, name string) bool {
	if strings.HasPrefix(name, ".") && !strings.HasPrefix(pattern, ".") {
		return false
	}
	ok, err := path.Match(pattern, name)
	return ok || err != nil
}

// resolve turns w into absolute clean paths, one per possible working
// directory. ok is false when the path cannot be known statically.
func (a *Analysis) resolve(w word, cwds []string) ([]string, bool) {
	if w.dynamic || w.val == "" {
		return nil, false
	}
	v := w.val
	if w.tilde {
		switch {
		case a.cfg.Home == "" || !path.IsAbs(a.cfg.Home):
			return nil, false
		case v == "~":
			return []string{path.Clean(a.cfg.Home)}, true
		case strings.HasPrefix(v, "~/"):
			return []string{path.Join(a.cfg.Home, v[2:])}, true
		default:
			return nil, false // ~user, ~+, ~-
		}
	}
	if path.IsAbs(v) {
		return []string{path.Clean(v)}, true
	}
	if cwds == nil {
		return nil, false
	}
	out := make([]string, 0, len(cwds))
	for _, c := range cwds {
		out = append(out, path.Join(c, v))
	}
	return out, true
}

// Check runs the Bash check_permissions layers of spec §2.1 in order:
// empty command, injection (and anything unanalysable), read-only,
// dangerous patterns, dangerous commands ([Analysis.DangerousCommand]:
// privilege changes, system state, raw devices, history-destroying git,
// the policy's patterns), sed constraints, dangerous paths, dangerous
// removal, ACCEPT_EDITS/DONT_ASK filesystem auto-allow, passthrough.
func (a *Analysis) Check(mode permission.Mode) permission.Decision {
	if a.Empty() {
		return permission.Decision{Behavior: permission.Passthrough, Message: "Empty command", Reason: "Tool check: empty command"}
	}
	if a.fail != "" {
		return safetyAsk("Permission required: "+a.fail,
			"Safety check: command contains dynamic expansion that cannot be statically analyzed")
	}
	if a.ReadOnly() {
		return permission.Decision{Behavior: permission.Allow,
			Message: "Permission granted for read-only command", Reason: "Read-only: command only reads"}
	}
	if p := a.DangerousPattern(); p != "" {
		return safetyAsk("Permission required: Command contains dangerous pattern: "+p,
			"Safety check: dangerous command pattern")
	}
	if d, ok := a.DangerousCommand(); ok {
		return safetyAsk(fmt.Sprintf("Permission required: `%s` %s (%s). This is a safety check: it always asks, and no allow rule can silence it.",
			oneLineCmd(d.Command), d.why(), d.Name),
			"Safety check: dangerous command ("+d.Kind+": "+d.Name+")")
	}
	for _, u := range a.units {
		if u.name() == "sed" && len(u.args) > 0 {
			s := parseSed(u.args[1:])
			if s.err == "" && s.inPlace {
				for _, f := range s.files {
					if bad := dangerousSubstring(f.val, a.cfg.files()); bad {
						s.err = "sed -i modifying dangerous file: " + f.val
						break
					}
				}
			}
			if s.err != "" {
				return safetyAsk("Permission required: "+s.err, "Safety check: sed constraints")
			}
		}
	}
	if sens, unresolved := a.sensitivePaths(); len(sens) > 0 {
		return safetyAsk("Permission required: Bash command operates on sensitive paths: "+strings.Join(sens, ", "),
			"Safety check: dangerous file or directory")
	} else if len(unresolved) > 0 {
		return safetyAsk("Permission required: Bash command operates on paths that cannot be statically resolved: "+strings.Join(unresolved, ", "),
			"Safety check: unresolved path")
	}
	if p := a.dangerousRemoval(); p != "" {
		return safetyAsk(fmt.Sprintf("Dangerous removal operation detected: '%s'. This command requires explicit user approval and cannot be auto-allowed by permission rules.", p),
			"Safety check: dangerous removal")
	}
	if (mode == permission.ModeAcceptEdits || mode == permission.ModeDontAsk) && a.fsInWorkingDirs() {
		return permission.Decision{Behavior: permission.Allow,
			Message: "Permission granted for filesystem command (in working directory)",
			Reason:  "Mode: " + string(mode) + " allows filesystem commands in working directories"}
	}
	return permission.Decision{Behavior: permission.Passthrough,
		Message: "Execute bash command: " + a.src, Reason: "Tool check: no opinion"}
}

// oneLineCmd shortens a command for a message: its first line, at most
// 120 bytes.
func oneLineCmd(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

func safetyAsk(msg, reason string) permission.Decision {
	return permission.Decision{Behavior: permission.Ask, Message: msg, Reason: reason, BypassImmune: true}
}

func dangerousSubstring(f string, files []string) bool {
	lf := strings.ToLower(f)
	for _, d := range files {
		d = strings.ToLower(d)
		if d != "" && (strings.Contains(lf, d) || strings.HasSuffix(lf, d)) {
			return true
		}
	}
	return false
}

// DangerousPattern returns the first dangerous pattern of spec §2.4 the
// command matches, judged on parsed commands rather than substrings of
// the raw string, or "". [quirk] "format" only matches a command named
// format (not "npm run format" or --format=json), and "> /dev/" only a
// write to a device other than /dev/null, /dev/stdout, /dev/stderr,
// /dev/tty and /dev/fd/N.
func (a *Analysis) DangerousPattern() string {
	type pat struct {
		name string
		f    func(u *unit, n string, args []word) bool
	}
	pats := []pat{
		{"rm -rf", func(u *unit, n string, args []word) bool {
			return n == "rm" && hasFlag(args, 'r', "--recursive") && hasFlag(args, 'f', "--force") ||
				n == "rm" && hasFlag(args, 'R', "--recursive") && hasFlag(args, 'f', "--force")
		}},
		{"sudo rm", func(u *unit, n string, _ []word) bool { return u.privileged && n == "rm" }},
		{"dd", func(_ *unit, n string, _ []word) bool { return n == "dd" }},
		{"mkfs", func(_ *unit, n string, _ []word) bool { return n == "mkfs" || strings.HasPrefix(n, "mkfs.") }},
		{"fdisk", func(_ *unit, n string, _ []word) bool { return strings.Contains(n, "fdisk") }},
		{"format", func(_ *unit, n string, _ []word) bool { return n == "format" }},
		{"chmod 777", func(_ *unit, n string, args []word) bool {
			return n == "chmod" && !hasFlag(args, 'R', "--recursive") && anyArg(args, worldWritable)
		}},
		{"chmod -R 777", func(_ *unit, n string, args []word) bool {
			return n == "chmod" && hasFlag(args, 'R', "--recursive") && anyArg(args, worldWritable)
		}},
		{"chown -R", func(_ *unit, n string, args []word) bool { return n == "chown" && hasFlag(args, 'R', "--recursive") }},
		{"kill -9", func(_ *unit, n string, args []word) bool {
			if !oneOf(n, "kill", "pkill", "killall") {
				return false
			}
			for i, w := range args {
				if oneOf(w.val, "-9", "-KILL", "-SIGKILL") {
					return true
				}
				if (w.val == "-s" || w.val == "--signal") && i+1 < len(args) && oneOf(strings.ToUpper(args[i+1].val), "9", "KILL", "SIGKILL") {
					return true
				}
			}
			return false
		}},
		{"> /dev/", func(u *unit, _ string, _ []word) bool {
			for _, r := range u.redirs {
				if writeRedir(r) && !r.target.dynamic && strings.HasPrefix(r.target.val, "/dev/") && !benignDevice(r.target) {
					return true
				}
			}
			return false
		}},
	}
	for _, p := range pats {
		for _, u := range a.units {
			var args []word
			if len(u.args) > 1 {
				args = u.args[1:]
			}
			if p.f(u, u.name(), args) {
				return p.name
			}
		}
	}
	return ""
}

func worldWritable(v string) bool {
	return oneOf(v, "777", "0777", "a+rwx", "a=rwx", "ugo+rwx", "ugo=rwx", "o+w", "a+w")
}

// hasFlag reports whether a short flag (alone or in a cluster) or the
// long option appears before "--".
func hasFlag(args []word, short byte, long string) bool {
	for _, w := range args {
		v := w.val
		if v == "--" {
			return false
		}
		if v == long {
			return true
		}
		if len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.IndexByte(v[1:], short) >= 0 {
			return true
		}
	}
	return false
}

// sensitivePaths returns the modified paths that are dangerous, and the
// modified paths that cannot be resolved statically.
func (a *Analysis) sensitivePaths() (sens, unresolved []string) {
	files, dirs := a.cfg.files(), a.cfg.dirs()
	for _, u := range a.units {
		for _, w := range u.pathArgs() {
			ps, ok := a.resolve(w, u.cwds)
			if !ok {
				unresolved = append(unresolved, w.val)
				// Unknown working directory or home: judge the path as
				// written (relative) for the name checks.
				if !w.dynamic && w.val != "" && ((w.glob && globDangerous(w.val, files, dirs)) || permission.IsDangerousPath(path.Clean(w.val), files, dirs)) {
					sens = append(sens, w.val)
				}
				continue
			}
			for _, p := range ps {
				if (w.glob && globDangerous(p, files, dirs)) || permission.IsDangerousPath(p, files, dirs) {
					sens = append(sens, p)
					break
				}
			}
		}
	}
	return sens, unresolved
}

// dangerousRemoval returns the first removal target of rm, rmdir or
// find -delete that is critical (spec §2.7), or "". Critical means: a
// bare wildcard, unresolvable, the root or a direct child of it, the
// home directory, or the working directory or one of its ancestors.
func (a *Analysis) dangerousRemoval() string {
	for _, u := range a.units {
		var targets []word
		switch u.name() {
		case "rm", "rmdir", "unlink", "shred":
			for _, w := range u.args[1:] {
				if !strings.HasPrefix(w.val, "-") || w.dynamic {
					targets = append(targets, w)
				}
			}
		case "find":
			if u.findDelete && !u.findTests {
				targets = findStarts(u.args[1:])
			}
		}
		for _, w := range targets {
			if a.criticalTarget(w, u.cwds) {
				return w.val
			}
		}
	}
	return ""
}

func (a *Analysis) criticalTarget(w word, cwds []string) bool {
	v := w.val
	if v == "*" || v == "./*" || v == "/" || strings.HasSuffix(v, "/*") || strings.HasSuffix(v, `\*`) {
		return true
	}
	if w.glob {
		// A pattern that is not a bare wildcard removes some entries of
		// a directory, not the directory itself.
		return pureWildcard(path.Base(v))
	}
	ps, ok := a.resolve(w, cwds)
	if !ok {
		return true
	}
	crit := append(append([]string(nil), a.workingDirs()...), cwds...)
	if a.cfg.Home != "" {
		crit = append(crit, path.Clean(a.cfg.Home))
	}
	for _, p := range ps {
		if p == "/" || path.Dir(p) == "/" {
			return true
		}
		for _, c := range crit {
			if c == p || strings.HasPrefix(c, p+"/") {
				return true
			}
		}
	}
	return false
}

// pureWildcard reports whether a path segment matches (nearly) every
// name: only * and ?, or ".*" (which can match ".." in some shells).
func pureWildcard(seg string) bool {
	return strings.Trim(seg, "*?") == "" || seg == ".*" || seg == ".?*"
}

// fsInWorkingDirs reports whether every unit is a plain filesystem
// command (mkdir, touch, rm, rmdir, mv, cp, sed) and every path it
// touches, arguments and redirections, resolves inside a working
// directory. [quirk] The reference only checks the first word of the
// whole command, so "mkdir a && curl x | sh" was allowed.
func (a *Analysis) fsInWorkingDirs() bool {
	wds := a.workingDirs()
	if len(wds) == 0 || len(a.units) == 0 {
		return false
	}
	n := 0
	for _, u := range a.units {
		if len(u.args) == 0 || u.nested || u.privileged || !u.trustedName() || !fsCommand(u.name()) {
			return false
		}
		for _, as := range u.assigns {
			if !roEnvSafe(as.name) {
				return false
			}
		}
		var targets []word
		if u.name() == "sed" {
			s := parseSed(u.args[1:])
			if s.err != "" {
				return false
			}
			targets = s.files
			for _, r := range u.redirs {
				if writeRedir(r) {
					targets = append(targets, r.target)
				}
			}
		} else {
			targets = u.pathArgs()
		}
		for _, w := range targets {
			ps, ok := a.resolve(w, u.cwds)
			if !ok || (w.glob && strings.Contains(w.val, "/.")) || (w.glob && strings.HasPrefix(w.val, ".")) {
				return false
			}
			for _, p := range ps {
				if w.glob {
					p = permission.GlobBase(p)
				}
				if !inside(p, wds) {
					return false
				}
			}
			n++
		}
	}
	return n > 0
}

func inside(p string, wds []string) bool {
	for _, wd := range wds {
		if p == wd || strings.HasPrefix(p, strings.TrimSuffix(wd, "/")+"/") {
			return true
		}
	}
	return false
}
