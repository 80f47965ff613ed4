package shell

import (
	"strings"
)

// The kinds of dangerous commands (Danger.Kind).
const (
	// DangerPrivilege: the command changes whose privileges run what
	// (sudo, su, doas, a setuid or setgid mode, an owner of root).
	DangerPrivilege = "privilege change"
	// DangerSystem: the command changes the state of the machine rather
	// than of files (kernel modules, firewall, mounts, services, cron,
	// kernel parameters, shutdown).
	DangerSystem = "system state"
	// DangerDevice: the command writes a raw device or its partitions.
	DangerDevice = "raw device"
	// DangerGit: the command destroys git history or uncommitted work.
	DangerGit = "git history"
	// DangerPolicy: the command matches one of the policy's
	// dangerous_commands patterns.
	DangerPolicy = "policy"
)

// Danger is a command a safety check always asks about: no allow rule
// silences it, dont_ask and explore deny it, and only bypass skips it.
type Danger struct {
	// Kind is one of the Danger* kinds.
	Kind string
	// Name names what matched: "sudo", "chmod u+s", "git push --force",
	// "systemctl restart", or the policy's pattern.
	Name string
	// Command is the simple command that trips the check, as written.
	Command string
}

// why is the phrase the message uses for the kind.
func (d Danger) why() string {
	switch d.Kind {
	case DangerPrivilege:
		return "changes privileges"
	case DangerSystem:
		return "changes the state of the system"
	case DangerDevice:
		return "writes a raw device"
	case DangerGit:
		return "destroys git history or uncommitted work"
	}
	return "matches the policy's dangerous_commands"
}

// dangerCheck is one safety check over one simple command: it returns
// the name of what matched, or "".
type dangerCheck struct {
	kind string
	f    func(u *unit, n string, args []word) string
}

// dangerChecks are the dangerous-command checks, in the order they are
// tried on each command: privilege changes, system state, raw devices,
// history-destroying git.
func dangerChecks() []dangerCheck {
	return []dangerCheck{
		{DangerPrivilege, privilegeChange},
		{DangerSystem, systemChange},
		{DangerDevice, deviceWrite},
		{DangerGit, gitDestroys},
	}
}

// DangerousCommand returns the first command of the script, in the order
// the script runs them (commands behind wrappers, in bash -c scripts,
// find -exec and substitutions included), that a dangerous-command check
// flags, and whether there is one. The built-in checks come first, then
// the policy's patterns (Config.DangerousCommands), matched like a deny
// rule's content. A read-only form of a flagged command (systemctl
// status, crontab -l, iptables -L, git clean -n, git push --dry-run) is
// not flagged. An argument only known at run time where it decides
// (chmod's mode, chown's owner, git's subcommand or options of the
// destructive subcommands) is flagged: the check fails closed.
func (a *Analysis) DangerousCommand() (Danger, bool) {
	checks := dangerChecks()
	for _, u := range a.units {
		if len(u.args) == 0 {
			continue
		}
		var args []word
		if len(u.args) > 1 {
			args = u.args[1:]
		}
		n := u.name()
		for _, c := range checks {
			if name := c.f(u, n, args); name != "" {
				return Danger{Kind: c.kind, Name: name, Command: u.text}, true
			}
		}
	}
	for _, p := range a.cfg.DangerousCommands {
		if strings.TrimSpace(p) == "" {
			continue
		}
		for _, u := range a.units {
			for _, c := range u.candidates(false) {
				if MatchPattern(p, c) {
					return Danger{Kind: DangerPolicy, Name: p, Command: u.text}, true
				}
			}
		}
		if MatchPattern(p, a.src) || (a.parseErr && rawWordMatch(p, a.src)) {
			return Danger{Kind: DangerPolicy, Name: p, Command: a.src}, true
		}
	}
	return Danger{}, false
}

// privilegeChange flags sudo, su, doas and their kin, a setuid or setgid
// mode (chmod u+s, chmod 4755, install -m 4755) and an owner or group of
// root (chown root, chown :root, chgrp 0, install -o root).
func privilegeChange(_ *unit, n string, args []word) string {
	switch n {
	case "sudo", "su", "doas", "pkexec", "run0", "runuser", "setpriv", "sg", "newgrp":
		return n
	case "chmod":
		mode, ok := modeOperand(args, chmodOpts)
		switch {
		case !ok:
			return ""
		case mode.dynamic:
			return "chmod with a mode only known at run time"
		case strings.HasPrefix(mode.val, "--reference"):
			return "chmod --reference"
		case setuidMode(mode.val):
			return "chmod " + mode.val
		}
	case "chown", "chgrp":
		owner, ok := modeOperand(args, chownOpts)
		switch {
		case !ok:
			return ""
		case owner.dynamic:
			return n + " to an owner only known at run time"
		case strings.HasPrefix(owner.val, "--reference"):
			return n + " --reference"
		case n == "chown" && rootOwner(owner.val), n == "chgrp" && isRoot(owner.val):
			return n + " " + owner.val
		}
	case "install":
		for i, w := range args {
			v := w.val
			next := ""
			if i+1 < len(args) {
				next = args[i+1].val
				if args[i+1].dynamic && (v == "-m" || v == "-o" || v == "-g") {
					return "install with an owner or mode only known at run time"
				}
			}
			switch {
			case (v == "-m" || v == "--mode") && setuidMode(next), strings.HasPrefix(v, "--mode=") && setuidMode(v[len("--mode="):]),
				strings.HasPrefix(v, "-m") && len(v) > 2 && setuidMode(v[2:]):
				return "install with a setuid or setgid mode"
			case (v == "-o" || v == "--owner" || v == "-g" || v == "--group") && isRoot(next),
				(strings.HasPrefix(v, "--owner=") || strings.HasPrefix(v, "--group=")) && isRoot(v[strings.IndexByte(v, '=')+1:]):
				return "install owned by root"
			}
		}
	}
	return ""
}

// chmodOpts and chownOpts are the options of chmod and chown/chgrp that
// come before the mode or owner operand.
const (
	chmodOpts = " -R --recursive -v --verbose -c --changes -f --silent --quiet --preserve-root --no-preserve-root "
	chownOpts = " -R --recursive -v --verbose -c --changes -f --silent --quiet --preserve-root --no-preserve-root" +
		" -h --no-dereference --dereference -H -L -P "
)

// modeOperand returns the first operand of chmod, chown or chgrp (their
// mode, owner or group), skipping the options in known; --reference and
// --from are returned as they are, since they stand for the operand.
func modeOperand(args []word, known string) (word, bool) {
	for _, w := range args {
		v := w.val
		switch {
		case w.dynamic:
			return w, true
		case v == "--":
			continue
		case strings.HasPrefix(v, "--reference"):
			return w, true
		case strings.HasPrefix(v, "--from="):
			continue
		case strings.Contains(known, " "+v+" "):
			continue
		case len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.Trim(v[1:], "RvcfhHLP") == "" && known == chownOpts:
			continue // a cluster of chown flags (-Rh)
		case len(v) > 1 && v[0] == '-' && strings.Trim(v[1:], "Rvcf") == "" && known == chmodOpts:
			continue // a cluster of chmod flags (-Rv)
		}
		return w, true
	}
	return word{}, false
}

// setuidMode reports whether a chmod mode sets the setuid or setgid bit:
// an octal mode of four or more digits whose fourth digit from the right
// has 4 or 2 (4755, 2755, 06755), or a symbolic mode adding s (u+s,
// g=rxs, +s, a+rwxs).
func setuidMode(m string) bool {
	if m == "" {
		return false
	}
	if strings.Trim(m, "01234567") == "" {
		if len(m) < 4 {
			return false
		}
		d := m[len(m)-4] - '0'
		return d&6 != 0
	}
	op := byte(0)
	for i := 0; i < len(m); i++ {
		switch c := m[i]; c {
		case '+', '=', '-':
			op = c
		case ',':
			op = 0
		case 's':
			if op == '+' || op == '=' {
				return true
			}
		}
	}
	return false
}

// isRoot reports whether an owner or group names root (by name or id).
func isRoot(v string) bool { return v == "root" || v == "0" }

// rootOwner reports whether chown's OWNER[:GROUP] operand gives the
// file to root, as its owner or its group ("root", "0:0", ":root",
// "user.root").
func rootOwner(v string) bool {
	owner, group, ok := strings.Cut(v, ":")
	if !ok {
		owner, group, _ = strings.Cut(v, ".")
	}
	return isRoot(owner) || isRoot(group)
}

// systemChange flags kernel modules, the firewall, mounts, services,
// cron tables, kernel parameters and shutdown; their listing forms are
// not flagged.
func systemChange(_ *unit, n string, args []word) string {
	switch n {
	case "modprobe", "insmod", "rmmod", "depmod", "kmod":
		return n
	case "iptables", "ip6tables", "iptables-legacy", "iptables-nft", "ip6tables-legacy", "ip6tables-nft", "ebtables", "arptables":
		if firewallListing(args) {
			return ""
		}
		return n
	case "iptables-restore", "ip6tables-restore", "iptables-legacy-restore", "iptables-nft-restore":
		return n
	case "nft":
		if p := positional(args); len(p) > 0 && !p[0].dynamic && oneOf(p[0].val, "list", "describe") {
			return ""
		}
		return n
	case "ufw":
		if p := positional(args); len(p) > 0 && !p[0].dynamic && oneOf(p[0].val, "status", "version", "show") {
			return ""
		}
		return n
	case "firewall-cmd":
		for _, w := range args {
			if w.dynamic {
				return n
			}
			ok := false
			for _, p := range []string{"--list", "--get", "--query", "--state", "--info", "--zone", "--permanent", "--help", "-h", "--version", "-V"} {
				if strings.HasPrefix(w.val, p) {
					ok = true
				}
			}
			if !ok {
				return n
			}
		}
		return ""
	case "mount":
		// "mount", "mount -l" and "mount -t TYPE" list mounts.
		for i := 0; i < len(args); i++ {
			w := args[i]
			switch {
			case w.dynamic:
				return n
			case w.val == "-t" || w.val == "--types":
				i++
			case strings.HasPrefix(w.val, "-t") || strings.HasPrefix(w.val, "--types="),
				oneOf(w.val, "-l", "--show-labels", "-v", "--verbose"):
			default:
				return n
			}
		}
		return ""
	case "umount", "swapoff":
		return n
	case "swapon":
		if len(args) > 0 && (hasFlag(args, 's', "--summary") || longOpt(args, "--show")) {
			return ""
		}
		return n
	case "systemctl":
		p := positional(args)
		if len(p) == 0 {
			return "" // systemctl alone lists units
		}
		if p[0].dynamic {
			return "systemctl with a command only known at run time"
		}
		switch sub := p[0].val; sub {
		case "status", "show", "cat", "list-units", "list-unit-files", "list-sockets", "list-timers", "list-jobs",
			"list-dependencies", "list-machines", "list-automounts", "list-paths", "is-active", "is-enabled", "is-failed",
			"is-system-running", "help", "get-default", "show-environment":
			return ""
		default:
			return "systemctl " + sub
		}
	case "service":
		p := positional(args)
		if len(p) == 0 || longOpt(args, "--status-all") || len(p) >= 2 && !p[1].dynamic && p[1].val == "status" {
			return ""
		}
		return "service"
	case "crontab":
		if hasFlag(args, 'l', "--list") && len(positional(args)) == 0 {
			return ""
		}
		return "crontab"
	case "shutdown", "reboot", "halt", "poweroff", "kexec", "telinit":
		return n
	case "init":
		if len(args) > 0 {
			return "init " + args[0].val
		}
	case "sysctl":
		for _, w := range args {
			if w.dynamic || strings.Contains(w.val, "=") {
				return "sysctl (sets a kernel parameter)"
			}
		}
		if hasFlag(args, 'w', "--write") || hasFlag(args, 'p', "--load") || longOpt(args, "--system") {
			return "sysctl (sets a kernel parameter)"
		}
	}
	return ""
}

// firewallListing reports whether iptables-style arguments only list
// rules (-L, -S) and change nothing (no -A, -D, -I, -R, -F, -Z, -N, -X,
// -P, -E).
func firewallListing(args []word) bool {
	for _, w := range args {
		if w.dynamic {
			return false
		}
	}
	if !hasFlag(args, 'L', "--list") && !hasFlag(args, 'S', "--list-rules") {
		return false
	}
	for _, f := range []struct {
		short byte
		long  string
	}{{'A', "--append"}, {'D', "--delete"}, {'I', "--insert"}, {'R', "--replace"}, {'F', "--flush"}, {'Z', "--zero"},
		{'N', "--new-chain"}, {'X', "--delete-chain"}, {'P', "--policy"}, {'E', "--rename-chain"}} {
		if hasFlag(args, f.short, f.long) {
			return false
		}
	}
	return true
}

// positional returns the words of args that are not options.
func positional(args []word) []word {
	var out []word
	for _, w := range args {
		if w.dynamic || !strings.HasPrefix(w.val, "-") {
			out = append(out, w)
		}
	}
	return out
}

// longOpt reports whether one of the long options appears before "--",
// alone or with "=value".
func longOpt(args []word, names ...string) bool {
	for _, w := range args {
		if w.val == "--" {
			return false
		}
		name, _, _ := strings.Cut(w.val, "=")
		if oneOf(name, names...) {
			return true
		}
	}
	return false
}

// shortFlag reports whether the short flag appears, alone or in a
// cluster, before "--".
func shortFlag(args []word, c byte) bool {
	for _, w := range args {
		v := w.val
		if v == "--" {
			return false
		}
		if len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.IndexByte(v[1:], c) >= 0 {
			return true
		}
	}
	return false
}

// deviceWrite flags the partitioning and formatting tools and a device
// file as the operand of a file command (cp, tee, shred, truncate, dd
// of=, ...).
// Redirections to a device and dd, mkfs and fdisk are the dangerous
// patterns of spec §2.4, checked before.
func deviceWrite(u *unit, n string, args []word) string {
	switch n {
	case "mke2fs", "mkswap", "wipefs", "parted", "sgdisk", "gdisk", "sfdisk", "cfdisk", "blkdiscard", "mkdosfs", "mkntfs":
		return n
	}
	for _, w := range u.pathArgs() {
		if rawDevice(w) {
			return n + " on " + w.val
		}
	}
	if n == "dd" {
		for _, w := range args {
			if v, ok := strings.CutPrefix(w.val, "of="); ok && rawDevice(word{val: v, dynamic: w.dynamic, glob: w.glob}) {
				return "dd of=" + v
			}
		}
	}
	return ""
}

// rawDevice reports whether w names a device file other than the
// harmless ones (/dev/null, /dev/stdout, ...).
func rawDevice(w word) bool {
	return !w.dynamic && strings.HasPrefix(w.val, "/dev/") && !benignDevice(w) && !strings.HasPrefix(w.val, "/dev/shm/")
}

// gitGlobalValued are git's global options that take a separate value.
const gitGlobalValued = " -C -c --git-dir --work-tree --namespace --super-prefix --config-env --exec-path "

// gitDestroys flags git commands that destroy history or uncommitted
// work: reset --hard, clean -f, push --force (and its kin: -f,
// --force-with-lease, --force-if-includes, +refspec, --delete, :ref,
// --mirror, --prune), branch -D (and -M, -C, -f), stash drop/clear,
// filter-branch, reflog expire/delete and update-ref; also an alias set
// on the command line (git -c alias.x=...) and a subcommand only known
// at run time.
func gitDestroys(_ *unit, n string, args []word) string {
	if n != "git" {
		return ""
	}
	i := 0
	for ; i < len(args); i++ {
		w := args[i]
		v := w.val
		if w.dynamic {
			return "git with a subcommand or option only known at run time"
		}
		if !strings.HasPrefix(v, "-") {
			break
		}
		name, val, hasVal := strings.Cut(v, "=")
		if v == "-c" && i+1 < len(args) {
			val, hasVal = args[i+1].val, true
			if args[i+1].dynamic {
				return "git -c with a value only known at run time"
			}
		}
		if (name == "-c" || name == "--config-env") && hasVal && strings.HasPrefix(strings.ToLower(val), "alias.") {
			return "git -c alias (an alias set on the command line)"
		}
		if strings.Contains(gitGlobalValued, " "+name+" ") && !strings.Contains(v, "=") {
			i++
		}
	}
	if i >= len(args) {
		return ""
	}
	sub, rest := args[i].val, args[i+1:]
	destructive := map[string]bool{"reset": true, "clean": true, "push": true, "branch": true, "stash": true,
		"reflog": true, "update-ref": true, "filter-branch": true, "filter-repo": true}
	if !destructive[sub] {
		return ""
	}
	for _, w := range rest {
		if w.dynamic && (w.val == "" || w.val[0] == '$') && sub != "filter-branch" && sub != "filter-repo" && sub != "update-ref" {
			return "git " + sub + " with an argument only known at run time"
		}
	}
	switch sub {
	case "reset":
		if longOpt(rest, "--hard") {
			return "git reset --hard"
		}
		if longOpt(rest, "--merge") {
			return "git reset --merge"
		}
	case "clean":
		if hasFlag(rest, 'n', "--dry-run") {
			return ""
		}
		if hasFlag(rest, 'f', "--force") {
			return "git clean -f"
		}
	case "push":
		if hasFlag(rest, 'n', "--dry-run") {
			return ""
		}
		switch {
		case hasFlag(rest, 'f', "--force"):
			return "git push --force"
		case longOpt(rest, "--force-with-lease", "--force-if-includes"):
			return "git push --force-with-lease"
		case longOpt(rest, "--mirror"):
			return "git push --mirror"
		case hasFlag(rest, 'd', "--delete"):
			return "git push --delete"
		case longOpt(rest, "--prune"):
			return "git push --prune"
		}
		pos := positional(rest)
		for j, w := range pos {
			if j == 0 {
				continue // the remote
			}
			if strings.HasPrefix(w.val, "+") {
				return "git push +refspec (a forced update)"
			}
			if strings.HasPrefix(w.val, ":") {
				return "git push :ref (a deletion)"
			}
		}
	case "branch":
		switch {
		case shortFlag(rest, 'D'):
			return "git branch -D"
		case shortFlag(rest, 'M'):
			return "git branch -M"
		case shortFlag(rest, 'C'):
			return "git branch -C"
		case hasFlag(rest, 'f', "--force"):
			return "git branch --force"
		}
	case "stash":
		if p := positional(rest); len(p) > 0 && oneOf(p[0].val, "drop", "clear") {
			return "git stash " + p[0].val
		}
	case "reflog":
		if p := positional(rest); len(p) > 0 && oneOf(p[0].val, "expire", "delete") {
			return "git reflog " + p[0].val
		}
	case "update-ref", "filter-branch", "filter-repo":
		return "git " + sub
	}
	return ""
}
