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
	if rule := systemRule(n); rule != nil {
		return rule(n, args)
	}
	return ""
}

// systemRule returns the check of the system command n: it returns what
// matched, or "" for a form that only lists. It is nil for the commands
// that do not change the system.
func systemRule(n string) func(n string, args []word) string {
	switch n {
	case "modprobe", "insmod", "rmmod", "depmod", "kmod",
		"iptables-restore", "ip6tables-restore", "iptables-legacy-restore", "iptables-nft-restore",
		"umount", "swapoff", "shutdown", "reboot", "halt", "poweroff", "kexec", "telinit":
		return flagAlways
	case "iptables", "ip6tables", "iptables-legacy", "iptables-nft", "ip6tables-legacy", "ip6tables-nft", "ebtables", "arptables":
		return flagUnless(firewallListing)
	case "nft":
		return flagUnless(firstPositionalIn("list", "describe"))
	case "ufw":
		return flagUnless(firstPositionalIn("status", "version", "show"))
	case "firewall-cmd":
		return flagUnless(firewallCmdQuery)
	case "mount":
		return flagUnless(mountListing)
	case "swapon":
		return flagUnless(swapListing)
	case "systemctl":
		return systemctlChange
	case "service":
		return serviceChange
	case "crontab":
		return flagUnless(crontabListing)
	case "init":
		return initChange
	case "sysctl":
		return sysctlChange
	}
	return nil
}

// flagAlways flags the command n whatever its arguments.
func flagAlways(n string, _ []word) string { return n }

// flagUnless flags the command n unless listing reports that its arguments
// only list.
func flagUnless(listing func(args []word) bool) func(n string, args []word) string {
	return func(n string, args []word) string {
		if listing(args) {
			return ""
		}
		return n
	}
}

// firstPositionalIn reports whether the first positional argument is
// known statically and one of set.
func firstPositionalIn(set ...string) func(args []word) bool {
	return func(args []word) bool {
		p := positional(args)
		return len(p) > 0 && !p[0].dynamic && oneOf(p[0].val, set...)
	}
}

// firewallCmdQuery reports whether every argument of firewall-cmd is a
// query, a listing or a scope option.
func firewallCmdQuery(args []word) bool {
	for _, w := range args {
		if w.dynamic {
			return false
		}
		ok := false
		for _, p := range []string{"--list", "--get", "--query", "--state", "--info", "--zone", "--permanent", "--help", "-h", "--version", "-V"} {
			if strings.HasPrefix(w.val, p) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// mountListing reports whether mount's arguments only list mounts:
// "mount", "mount -l" and "mount -t TYPE".
func mountListing(args []word) bool {
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w.dynamic:
			return false
		case w.val == "-t" || w.val == "--types":
			i++
		case strings.HasPrefix(w.val, "-t") || strings.HasPrefix(w.val, "--types="),
			oneOf(w.val, "-l", "--show-labels", "-v", "--verbose"):
		default:
			return false
		}
	}
	return true
}

// swapListing reports whether swapon only shows the swap areas.
func swapListing(args []word) bool {
	return len(args) > 0 && (hasFlag(args, 's', "--summary") || longOpt(args, "--show"))
}

// crontabListing reports whether crontab only lists the table.
func crontabListing(args []word) bool {
	return hasFlag(args, 'l', "--list") && len(positional(args)) == 0
}

// systemctlChange flags the systemctl commands other than those that
// show or list; systemctl alone lists units.
func systemctlChange(_ string, args []word) string {
	p := positional(args)
	if len(p) == 0 {
		return ""
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
}

// serviceChange flags service other than "service", "service
// --status-all" and "service NAME status".
func serviceChange(_ string, args []word) string {
	p := positional(args)
	if len(p) == 0 || longOpt(args, "--status-all") || len(p) >= 2 && !p[1].dynamic && p[1].val == "status" {
		return ""
	}
	return "service"
}

// initChange flags init with a runlevel.
func initChange(_ string, args []word) string {
	if len(args) > 0 {
		return "init " + args[0].val
	}
	return ""
}

// sysctlChange flags sysctl when it sets a kernel parameter.
func sysctlChange(_ string, args []word) string {
	for _, w := range args {
		if w.dynamic || strings.Contains(w.val, "=") {
			return "sysctl (sets a kernel parameter)"
		}
	}
	if hasFlag(args, 'w', "--write") || hasFlag(args, 'p', "--load") || longOpt(args, "--system") {
		return "sysctl (sets a kernel parameter)"
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
	i, why := gitDestroyGlobals(args)
	if why != "" || i >= len(args) {
		return why
	}
	sub, rest := args[i].val, args[i+1:]
	switch sub {
	case "update-ref", "filter-branch", "filter-repo":
		return "git " + sub
	}
	check := gitDestroyCheck(sub)
	if check == nil {
		return ""
	}
	for _, w := range rest {
		if w.dynamic && (w.val == "" || w.val[0] == '$') {
			return "git " + sub + " with an argument only known at run time"
		}
	}
	return check(rest)
}

// gitDestroyGlobals skips git's global options and returns the index of
// the subcommand (len(args) when there is none), or what to flag: an
// option only known at run time or an alias set with -c.
func gitDestroyGlobals(args []word) (int, string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := w.val
		if w.dynamic {
			return i, "git with a subcommand or option only known at run time"
		}
		if !strings.HasPrefix(v, "-") {
			return i, ""
		}
		name, val, hasVal := strings.Cut(v, "=")
		if v == "-c" && i+1 < len(args) {
			val, hasVal = args[i+1].val, true
			if args[i+1].dynamic {
				return i, "git -c with a value only known at run time"
			}
		}
		if (name == "-c" || name == "--config-env") && hasVal && strings.HasPrefix(strings.ToLower(val), "alias.") {
			return i, "git -c alias (an alias set on the command line)"
		}
		if strings.Contains(gitGlobalValued, " "+name+" ") && !strings.Contains(v, "=") {
			i++
		}
	}
	return len(args), ""
}

// gitDestroyCheck returns the check of a git subcommand with
// destructive forms: given the subcommand's arguments, it names the
// destructive form used, or returns "". It is nil for the other
// subcommands.
func gitDestroyCheck(sub string) func(rest []word) string {
	switch sub {
	case "reset":
		return gitResetDestroys
	case "clean":
		return gitCleanDestroys
	case "push":
		return gitPushDestroys
	case "branch":
		return gitBranchDestroys
	case "stash":
		return gitSubDestroys("git stash ", "drop", "clear")
	case "reflog":
		return gitSubDestroys("git reflog ", "expire", "delete")
	}
	return nil
}

// gitResetDestroys flags reset --hard and --merge.
func gitResetDestroys(rest []word) string {
	if longOpt(rest, "--hard") {
		return "git reset --hard"
	}
	if longOpt(rest, "--merge") {
		return "git reset --merge"
	}
	return ""
}

// gitCleanDestroys flags clean -f unless it is a dry run.
func gitCleanDestroys(rest []word) string {
	if hasFlag(rest, 'n', "--dry-run") {
		return ""
	}
	if hasFlag(rest, 'f', "--force") {
		return "git clean -f"
	}
	return ""
}

// gitPushDestroys flags the forced, mirroring, deleting and pruning
// forms of push unless it is a dry run.
func gitPushDestroys(rest []word) string {
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
	return ""
}

// gitBranchDestroys flags the forced forms of branch (-D, -M, -C, -f).
func gitBranchDestroys(rest []word) string {
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
	return ""
}

// gitSubDestroys flags a subcommand of git stash or git reflog among
// subs, named after prefix.
func gitSubDestroys(prefix string, subs ...string) func(rest []word) string {
	return func(rest []word) string {
		if p := positional(rest); len(p) > 0 && oneOf(p[0].val, subs...) {
			return prefix + p[0].val
		}
		return ""
	}
}
