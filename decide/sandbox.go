package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
	"github.com/wardenhq/warden/tools"
)

// Profile is the sandbox profile of a call decided as v, recorded with
// the verdict and applied by the local backend to every process the call
// runs:
//
//   - a call allowed as read-only writes nothing (only its private
//     temporary directory);
//   - any other call writes its working directories, and exactly the
//     paths outside them its Bash command writes when a human approves
//     the call or an Edit/Write rule allows the path (an approved `echo
//     x > /etc/app.conf` gets /etc/app.conf, nothing else; bypass mode
//     grants none);
//   - .git/hooks and .git/config of each working directory stay
//     read-only unless an Edit or Write allow rule names them; the local
//     backend keeps every .git read-only (Git: only what git executes or
//     reads as configuration, for a git command a rule or a human
//     allowed), and the dangerous files and directories (.bashrc,
//     .vscode, ...) unless Granted;
//   - the sensitive files inside the working directories (.env, keys)
//     are unreadable unless Read: a human approved a command that reads
//     them, or a Read allow rule names them;
//   - a file tool's call (Read, Write, Edit, Glob, Grep) gets its path
//     outside the working directories when a human approves it or an
//     allow rule naming the path allows it (fileGrants): the file tools
//     hold the profile as processes do;
//   - the network is off unless the turn's policy turns it on for every
//     call (sandbox.network, to sandbox.hosts) or for the calls a rule
//     matches (sandbox.network_for, to the rule's hosts), the tool's
//     settings do (tools.NAME.network, tools.NAME.network_hosts), or a
//     human approves a call that asks for hosts (the network_hosts of Bash
//     and PowerShell);
//     Hosts are the hosts those grants name ("*": any public host);
//   - unix sockets are off unless a sandbox.unix_sockets_for rule of the
//     turn's policy matches the call (never by an approval or a mode:
//     a socket reaches a daemon outside the sandbox);
//
// Bypass mode changes what asks, never the profile.
func Profile(ctx context.Context, c Call, v permission.Verdict) calls.Sandbox {
	pc := permission.Context{}
	if c.Policy != nil {
		pc = *c.Policy
	}
	return profile(ctx, c.bind(&pc), c, &pc, v)
}

// profile is Profile with the call's tool bound as b: the Bash command
// is analysed once, for its writes and for the network rules.
func profile(ctx context.Context, b bound, c Call, pc *permission.Context, v permission.Verdict) calls.Sandbox {
	dirs := callDirs(c.Workdir, pc.WorkingDirs)
	s := calls.Sandbox{Dirs: dirs}
	// Granted by a human (a call that asks runs only once approved) or
	// by a rule; never by a mode: bypass allows the call, not the access.
	human := v.Behavior != permission.Allow
	s.Read = sensitiveReads(ctx, b, c, pc, dirs, human)
	if !v.ReadOnly {
		s.Write = slices.Clone(dirs)
		for _, d := range dirs {
			for _, p := range []string{path.Join(d, ".git", "hooks"), path.Join(d, ".git", "config")} {
				if r, _ := (permission.Paths{Workdir: c.Workdir}).Rule(pc.Allow, []string{"Edit", "Write"}, p); r == nil || r.Content == "" {
					s.Protect = append(s.Protect, p)
				} else {
					s.Granted = append(s.Granted, escapeGlob(p))
				}
			}
		}
		s.Granted = append(s.Granted, dangerousWrites(ctx, b, c, pc, dirs, human)...)
		// git's own writes for a git command a person allowed: by an
		// approval, an allow rule, or the team's sandbox.auto_allow
		// (which never runs history-rewriting git unasked).
		s.Git = gitCommand(ctx, b, c.Input) && (human || v.Layer == permission.LayerAllowRule || v.Layer == permission.LayerRemembered || v.Layer == permission.LayerSandbox)
		for _, p := range outsideWrites(ctx, b, c.Input, dirs) {
			granted := human
			if r, _ := (permission.Paths{Workdir: c.Workdir}).Rule(pc.Allow, []string{"Edit", "Write"}, p); r != nil {
				granted = true
			}
			if granted && !slices.Contains(s.Write, p) {
				s.Write = append(s.Write, p)
			}
		}
	}
	fileGrants(&s, b, c, pc, dirs, human, v.ReadOnly)
	s.Network, s.Hosts, s.NetworkBy, s.HTTP = callNetwork(ctx, b, c, pc, human)
	if r := permission.UnixSocketsRule(toolName(c), pc, func(content string) bool {
		ok, err := b.MatchRule(permission.WithRuleBehavior(ctx, permission.Allow), content, c.Input)
		return err == nil && ok
	}); r != "" {
		s.UnixSockets, s.UnixSocketsBy = true, "sandbox.unix_sockets_for rule "+r
	}
	return s
}

// toolName is the name of the call's tool, "" when it has none.
func toolName(c Call) string {
	if c.Tool == nil {
		return ""
	}
	return c.Tool.Info().Name
}

// callNetwork is the network of a call: the hosts its grants name
// (callGrants), what granted them, and the grants that hold requests to
// methods and paths.
func callNetwork(ctx context.Context, b bound, c Call, pc *permission.Context, human bool) (on bool, hosts []string, by string, http []calls.HTTPRule) {
	grants := callGrants(ctx, b, c, pc, human)
	hosts = permission.GrantHosts(grants)
	if len(hosts) == 0 {
		return false, nil, "", nil
	}
	var bys []string
	for _, g := range grants {
		bys = append(bys, g.By)
		if len(g.Methods) > 0 || len(g.Paths) > 0 {
			http = append(http, calls.HTTPRule{Hosts: g.Hosts, Methods: g.Methods, Paths: g.Paths, By: g.By})
		}
	}
	return true, hosts, strings.Join(bys, "; "), http
}

// callGrants are the grants of the network of a call (permission.NetworkGrants)
// and, when a human decides the call, the grant of the hosts it asks
// for that none of them covers.
func callGrants(ctx context.Context, b bound, c Call, pc *permission.Context, human bool) []permission.NetworkGrant {
	name := ""
	if c.Tool != nil {
		name = c.Tool.Info().Name
	}
	grants := permission.NetworkGrants(name, pc, c.ToolNetwork, func(content string) bool {
		ok, err := b.MatchRule(permission.WithRuleBehavior(ctx, permission.Allow), content, c.Input)
		return err == nil && ok
	})
	if human {
		hosts := permission.GrantHosts(grants)
		var asked []string
		for _, h := range tools.RequestedHosts(name, c.Input) {
			if permission.HostCovered(hosts, h) == "" {
				asked = append(asked, h)
			}
		}
		if len(asked) > 0 {
			grants = append(grants, permission.NetworkGrant{Hosts: asked, By: "network_hosts approved by a person: " + strings.Join(asked, ", ")})
		}
	}
	return grants
}

// Network returns the grants of the network of a call decided as v:
// what the profile's Hosts and NetworkBy are made of (Profile), one
// grant each, in order. "starter policy what-if" replays a recorded
// connection against them.
func Network(ctx context.Context, c Call, v permission.Verdict) []permission.NetworkGrant {
	pc := permission.Context{}
	if c.Policy != nil {
		pc = *c.Policy
	}
	b := c.bind(&pc)
	return callGrants(ctx, b, c, &pc, v.Behavior != permission.Allow)
}

// callDirs are the working directories of a call, cleaned, the workdir
// first.
func callDirs(workdir string, working []string) []string {
	var out []string
	for _, d := range append([]string{workdir}, working...) {
		if d == "" || !path.IsAbs(d) {
			continue
		}
		if d = path.Clean(d); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// outsideWrites are the resolved paths outside dirs a Bash command
// writes. b is the tool bound to the call; its memo keeps the analysis.
func outsideWrites(ctx context.Context, b bound, input json.RawMessage, dirs []string) []string {
	if b.t == nil || b.Name() != "Bash" {
		return nil
	}
	a, err := tools.BashAnalysis(b.env, input)
	if err != nil {
		return nil
	}
	var out []string
	for _, acc := range a.Accesses() {
		if acc.Write && acc.Resolved && !acc.Glob && !permission.Inside(acc.Path, dirs) {
			p := path.Clean(acc.Path)
			if makesDir(acc.Command) && p != "/" {
				p += "/" // a directory the command makes (calls.Sandbox.Write)
			}
			out = append(out, p)
		}
	}
	return out
}

// makesDir reports whether the simple command cmd (as written) makes
// its write operands as directories: mkdir, install -d.
func makesDir(cmd string) bool {
	fs := strings.Fields(cmd)
	for i, f := range fs {
		if strings.Contains(f, "=") && !strings.HasPrefix(f, "-") {
			continue // VAR=value before the command
		}
		switch path.Base(f) {
		case "mkdir":
			return true
		case "install":
			return slices.Contains(fs[i+1:], "-d")
		}
		return false
	}
	return false
}

// autoAllow turns the ASK of a Bash command that asks only because it is
// not read-only into an ALLOW when the policy's sandbox.auto_allow is on
// and the call runs in the local sandbox: its writes stay in the working
// directories and it has no network (granted or asked for). A path
// outside them, a sensitive path, an ask or deny rule, a safety check or
// the network keeps the ASK.
func autoAllow(ctx context.Context, b bound, c Call, pc *permission.Context, v permission.Verdict) permission.Verdict {
	sb := pc.Sandbox
	if !c.Sandboxed || sb == nil || !sb.AutoAllow || c.Tool == nil || c.Tool.Info().Name != "Bash" {
		return v
	}
	if v.Behavior != permission.Ask || v.Layer != permission.LayerMode || v.Rule != nil || v.Tool.Behavior != permission.Passthrough {
		return v
	}
	if on, _, _, _ := callNetwork(ctx, b, c, pc, false); on || len(tools.RequestedHosts("Bash", c.Input)) > 0 {
		return v // the network (granted or asked for) is not confined
	}
	a, err := tools.BashAnalysis(b.env, c.Input) // the decision's analysis, from the memo
	if err != nil {
		return v
	}
	for _, r := range neverAutoAllowed() {
		if a.MatchRule(r, permission.Ask) {
			return v // the sandbox keeps it in the workspace, not from destroying it
		}
	}
	dirs := callDirs(c.Workdir, pc.WorkingDirs)
	v.Decision = permission.Decision{
		Behavior: permission.Allow,
		Message:  fmt.Sprintf("Permission granted for Bash: runs in the sandbox (writes only in %s, network off)", strings.Join(dirs, ", ")),
		Reason:   "Sandbox: auto-allowed (sandbox.auto_allow): " + v.Tool.Message,
	}
	v.Layer = permission.LayerSandbox
	return v
}

// neverAutoAllowed are the rule contents of Bash commands that
// sandbox.auto_allow never runs unasked: they destroy work inside the
// working directories (history-rewriting git), which the sandbox does
// not prevent.
func neverAutoAllowed() []string {
	return []string{"git reset:*", "git clean:*", "git push:*", "git branch -D:*", "git checkout -f:*", "git checkout --:*",
		"git rebase:*", "git filter-branch:*", "git stash drop:*", "git stash clear:*", "git restore:*", "git rm:*"}
}

// gitCommand reports whether the Bash call is a git command: every
// top-level command git, or read-only on its own.
func gitCommand(ctx context.Context, b bound, input json.RawMessage) bool {
	if b.t == nil || b.Name() != "Bash" {
		return false
	}
	a, err := tools.BashAnalysis(b.env, input)
	return err == nil && a.MatchRule("git:*", permission.Allow)
}

// sensitiveReads are the sensitive paths inside dirs the call may read:
// those its Bash command reads when a human approves it (human), and
// the patterns of the Read allow rules that name a sensitive path.
func sensitiveReads(ctx context.Context, b bound, c Call, pc *permission.Context, dirs []string, human bool) []string {
	return grantedPaths(ctx, b, c, pc, dirs, human, false, []string{"Read"}, func(p string, glob bool) bool {
		return (permission.Paths{Home: c.Home, Policy: pc}).SensitiveMatch(p, glob) != ""
	})
}

// dangerousWrites are the dangerous paths inside dirs the call may
// write: those its Bash command writes when a human approves it, and
// the patterns of the Edit and Write allow rules that name one.
func dangerousWrites(ctx context.Context, b bound, c Call, pc *permission.Context, dirs []string, human bool) []string {
	return grantedPaths(ctx, b, c, pc, dirs, human, true, []string{"Edit", "Write"}, func(p string, _ bool) bool {
		return pc.DangerousPath(path.Clean(p))
	})
}

// grantedPaths are the paths inside dirs that match (a sensitive or a
// dangerous path) and that the call was granted: the ones its Bash
// command reads (or, with write, writes) when a human approves it, and
// the patterns of the allow rules of the tools names.
func grantedPaths(ctx context.Context, b bound, c Call, pc *permission.Context, dirs []string, human, write bool, names []string, match func(p string, glob bool) bool) []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if human && b.t != nil && b.Name() == "Bash" {
		if a, err := tools.BashAnalysis(b.env, c.Input); err == nil {
			for _, acc := range a.Accesses() {
				if acc.Write != write || !acc.Resolved || !permission.Inside(globBase(acc), dirs) || !match(acc.Path, acc.Glob) {
					continue
				}
				if acc.Glob {
					add(path.Clean(acc.Path))
				} else {
					add(escapeGlob(path.Clean(acc.Path)))
				}
			}
		}
	}
	if human && !write && b.t != nil && b.Name() == "Grep" {
		// Grep's search runs as a sandboxed process (ripgrep): an
		// approved search of a sensitive file must find it there.
		var in tools.GrepInput
		if err := json.Unmarshal(c.Input, &in); err == nil && in.Path != "" {
			p := in.Path
			if !path.IsAbs(p) {
				p = path.Join(c.Workdir, p)
			}
			if p = path.Clean(p); permission.Inside(p, dirs) && match(p, false) {
				add(escapeGlob(p))
			}
		}
	}
	for _, pat := range rulePatterns(c, pc.Allow, names, dirs) {
		if match(pat, false) {
			add(pat)
		}
	}
	return out
}

// rulePatterns are the absolute patterns of the rules for one of the
// tools names that have a content and reach inside dirs.
func rulePatterns(c Call, rules []permission.Rule, names []string, dirs []string) []string {
	var out []string
	for _, r := range rules {
		if !slices.Contains(names, r.Tool) || r.Content == "" {
			continue
		}
		pat := r.Content
		if !path.IsAbs(pat) {
			if c.Workdir == "" {
				continue
			}
			pat = path.Join(c.Workdir, pat)
		}
		base := shell.GlobBase(pat)
		if permission.Inside(base, dirs) || slices.ContainsFunc(dirs, func(d string) bool { return permission.Inside(d, []string{base}) }) {
			out = append(out, pat)
		}
	}
	return out
}

// globBase is the directory an access's pattern starts from, or its
// path.
func globBase(acc shell.Access) string {
	if acc.Glob {
		return shell.GlobBase(acc.Path)
	}
	return acc.Path
}

// escapeGlob makes the path p a doublestar pattern that matches only p.
func escapeGlob(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`\*?[]{}`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
