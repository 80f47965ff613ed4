package calls

import "strings"

// Sandbox is the kernel sandbox a call's processes run in on the local
// backend, decided with the call's verdict and recorded with it: what
// the call may write and whether it has the network. Everything not
// listed in Write is read-only; the worker's own files are never
// visible. Docker and E2B apply what of it they can express.
type Sandbox struct {
	// Write lists the paths the call's processes may write: the working
	// directories (none for a call allowed as read-only) and exactly the
	// paths outside them the call was decided to write. A path ending in
	// "/" is a directory the command makes (a mkdir target); a path that
	// does not exist yet is granted as itself, never as an ancestor.
	Write []string `json:"write,omitempty"`
	// Dirs are the call's working directories. The file tools follow a
	// link only to a target inside them: a link that leads out is
	// refused, so the target is decided as itself.
	Dirs []string `json:"dirs,omitempty"`
	// Protect lists paths inside Write that stay read-only (.git/hooks
	// and .git/config of each working directory, unless a rule grants
	// them).
	Protect []string `json:"protect,omitempty"`
	// Git says git's own writes in the working directories' .git are
	// allowed: the call is a git command an allow rule or a human
	// allowed. Git's objects, refs, index and logs are then writable;
	// what git executes or reads as configuration (hooks, config,
	// commondir, info, modules, worktrees) stays read-only, and what such
	// a call creates among those names is undone after it. Any other call
	// finds every .git read-only.
	Git bool `json:"git,omitempty"`
	// Read lists the sensitive paths inside the working directories the
	// call may read (doublestar patterns over absolute paths): the ones a
	// human approved the call to read, or an allow rule names. Its
	// processes find the other sensitive files (.env, keys, .npmrc, ...)
	// empty.
	Read []string `json:"read,omitempty"`
	// Granted lists the dangerous paths inside the working directories
	// the call may write (doublestar patterns over absolute paths): named
	// by an Edit or Write allow rule, or written by a command a human
	// approved. The other dangerous files and directories that exist
	// (.bashrc, .vscode, .gitmodules, ...) stay read-only, and those the
	// call creates are moved aside after it.
	Granted []string `json:"granted,omitempty"`
	// Network gives the call a way out: on the local backend a network
	// namespace of its own whose only exit is an egress proxy the worker
	// runs for the call, which lets through the hosts of Hosts and nothing
	// else. NetworkBy says what turned it on (the turn's policy, a rule,
	// the tool's settings, an approval).
	Network   bool   `json:"network,omitempty"`
	NetworkBy string `json:"network_by,omitempty"`
	// Hosts are the hosts the call may reach when Network is on: a name
	// ("registry.npmjs.org"), a suffix ("*.example.org"), an address or
	// a range ("10.0.0.5", "10.0.0.0/8"), each with an optional port
	// (":443"); "*" is any host. A name lets through only public
	// addresses: a loopback, private or link-local address is reached
	// only when an entry names it (an address or a range). Empty with
	// Network on (profiles recorded before hosts existed) means "*".
	Hosts []string `json:"hosts,omitempty"`
	// HTTP hold the HTTP(S) requests to some hosts to methods and paths
	// (sandbox.network_for rules with methods or paths): a request to a
	// host one of them names must pass one of those that name it.
	HTTP []HTTPRule `json:"http,omitempty"`
	// UnixSockets lets the call's processes create unix sockets, so
	// connect to any pathname socket they can reach (an ssh-agent, a
	// docker socket, not hidden); UnixSocketsBy says what granted them
	// (a sandbox.unix_sockets_for rule). Off, socket(AF_UNIX) fails
	// (socketpair works).
	UnixSockets   bool   `json:"unix_sockets,omitempty"`
	UnixSocketsBy string `json:"unix_sockets_by,omitempty"`
	// Limits bound the call's processes (nil: the backend's defaults).
	Limits *Limits `json:"limits,omitempty"`
	// Off records that the worker runs this backend without the sandbox
	// (backend.local.sandbox: off): the call runs as the worker's user.
	Off bool `json:"off,omitempty"`
	// Backend names the backend when it is not the local one (Docker,
	// E2B): their own isolation applies, and what of the profile they
	// can express.
	Backend string `json:"backend,omitempty"`
}

// String says how the call will run, for approvers, the audit and the
// CLI: "write /src/app, network off".
func (s *Sandbox) String() string {
	if s == nil {
		return "not recorded"
	}
	if s.Off {
		return "no sandbox (backend.local.sandbox: off): runs as the worker's user"
	}
	var b strings.Builder
	if s.Backend != "" && s.Backend != "local" {
		b.WriteString(s.Backend + " workspace, ")
	}
	if len(s.Write) == 0 {
		b.WriteString("read-only")
	} else {
		b.WriteString("write " + strings.Join(s.Write, ", "))
	}
	if len(s.Protect) > 0 {
		b.WriteString(" (read-only: " + strings.Join(s.Protect, ", ") + ")")
	}
	if s.Git {
		b.WriteString(", git may write its own files in .git")
	}
	if len(s.Granted) > 0 {
		b.WriteString(", may write " + strings.Join(s.Granted, ", "))
	}
	if len(s.Read) > 0 {
		b.WriteString(", may read " + strings.Join(s.Read, ", "))
	}
	if s.Network {
		hosts := "any public host"
		if len(s.Hosts) > 0 && !(len(s.Hosts) == 1 && s.Hosts[0] == "*") {
			hosts = strings.Join(s.Hosts, ", ")
		}
		b.WriteString(", network to " + hosts)
		if s.NetworkBy != "" {
			b.WriteString(" (" + s.NetworkBy + ")")
		}
		for _, r := range s.HTTP {
			b.WriteString(", requests to " + strings.Join(r.Hosts, ", ") + " held to " + r.String())
		}
	} else {
		b.WriteString(", network off")
	}
	if s.UnixSockets {
		b.WriteString(", unix sockets")
		if s.UnixSocketsBy != "" {
			b.WriteString(" (" + s.UnixSocketsBy + ")")
		}
	}
	if l := s.Limits.String(); l != "" {
		b.WriteString(", limits " + l)
	}
	return b.String()
}

// DefaultSandbox is the profile of a call that has none: one decided
// before profiles were recorded, or a backend operation made outside a
// call. Its working directory wd is writable; it has no network.
func DefaultSandbox(wd string) *Sandbox {
	return &Sandbox{Write: []string{wd}, Dirs: []string{wd}}
}

// Rebased returns s for a call that runs in the workdir wd rather than
// in the workdir it was decided in (s.Dirs[0]: a turn that names no
// workdir runs in each worker's own): what s grants inside the old
// workdir it grants inside wd. It returns s itself when nothing changes.
func Rebased(s *Sandbox, wd string) *Sandbox {
	if s == nil || len(s.Dirs) == 0 || wd == "" || s.Dirs[0] == wd {
		return s
	}
	old := s.Dirs[0]
	move := func(ps []string) []string {
		if ps == nil {
			return nil
		}
		out := make([]string, len(ps))
		for i, p := range ps {
			switch {
			case p == old:
				p = wd
			case strings.HasPrefix(p, old+"/"):
				p = wd + p[len(old):]
			}
			out[i] = p
		}
		return out
	}
	r := *s
	r.Dirs, r.Write, r.Protect = move(s.Dirs), move(s.Write), move(s.Protect)
	r.Read, r.Granted = move(s.Read), move(s.Granted)
	return &r
}

// HTTPRule holds the HTTP(S) requests a call sends to Hosts (host
// entries, as Sandbox.Hosts) to Methods (none: any) and Paths (none:
// any; path globs as the file rules': "*" within a segment, "**" any
// number of segments). By names the rule.
type HTTPRule struct {
	Hosts   []string `json:"hosts"`
	Methods []string `json:"methods,omitempty"`
	Paths   []string `json:"paths,omitempty"`
	By      string   `json:"by,omitempty"`
}

// String says what the rule lets through: "methods GET, HEAD, paths
// /repos/**".
func (r HTTPRule) String() string {
	var out []string
	if len(r.Methods) > 0 {
		out = append(out, "methods "+strings.Join(r.Methods, ", "))
	}
	if len(r.Paths) > 0 {
		out = append(out, "paths "+strings.Join(r.Paths, ", "))
	}
	return strings.Join(out, "; ")
}
