package tools

import (
	"context"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
)

// Bash limits, from AgentScope's Bash tool.
const (
	BashDefaultTimeout = 120 * time.Second
	BashMaxTimeout     = 600 * time.Second
	// MaxOutputChars caps what a shell tool returns to the model.
	MaxOutputChars = 30000
)

// Bash runs a shell command on the call's backend with /bin/sh -c. Its
// permission checks analyse the command with permission/shell.
type Bash struct{}

// BashInput is Bash's input.
type BashInput struct {
	Command     string `json:"command" jsonschema_description:"The shell command to run."`
	Description string `json:"description,omitempty" jsonschema_description:"A short description of what the command does."`
	// Timeout is in milliseconds (default 120000, max 600000).
	Timeout int `json:"timeout,omitempty" jsonschema:"minimum=0,maximum=600000" jsonschema_description:"Timeout in milliseconds (default 120000, max 600000)."`
	// NetworkHosts are the hosts the command asks to reach through the
	// sandbox's egress proxy; hosts no rule grants make the call ask, and
	// an approval grants them (bypass mode does not).
	NetworkHosts []string `json:"network_hosts,omitempty" jsonschema_description:"Hosts this command must reach (registry.npmjs.org, *.example.org, host:port); a person is asked unless a rule grants them. Without it the command has the network only where a rule grants it."`
}

func (in BashInput) check() string {
	if strings.TrimSpace(in.Command) == "" {
		return "Command failed: empty command"
	}
	for _, h := range in.NetworkHosts {
		if err := permission.CheckHost(h); err != nil {
			return "Invalid input for Bash: network_hosts: " + err.Error()
		}
	}
	return ""
}

// bashSchema is the input schema, derived from the input struct once.
var bashSchema = builtinSchema[BashInput]()

// Info implements Tool.
func (Bash) Info() Info {
	return Info{
		Name: "Bash",
		Description: "Run a shell command in the workspace and return its output. " +
			"Each call starts in the workspace directory; state such as cd does not carry over. " +
			"Output is capped at 30000 characters.",
		InputSchema: bashSchema(),
	}
}

// CheckInput implements InputChecker.
func (Bash) CheckInput(_ context.Context, _ *Env, input json.RawMessage) error {
	return checkInput[BashInput]("Bash", input)
}

// Call implements Tool.
func (Bash) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	in, err := parseInput[BashInput]("Bash", input)
	if err != nil {
		return invalid(err)
	}
	return runShell(ctx, env, []string{"/bin/sh", "-c", in.Command}, in.Command, in.Timeout)
}

// shellConfig builds the analyser's view of the call: the workdir, the
// backend's home (resolved before the decision; unknown makes ~ paths
// unresolvable) and the dangerous-path lists.
func shellConfig(env *Env, home string, pc *permission.Context) shell.Config {
	c := shell.Config{Workdir: workdir(env), Home: home}
	if pc != nil {
		c.WorkingDirs = pc.WorkingDirs
		c.DangerousCommands = pc.DangerousCommands
		if pc.DangerousFiles != nil {
			c.DangerousFiles = *pc.DangerousFiles
			if c.DangerousFiles == nil {
				c.DangerousFiles = []string{}
			}
		}
		if pc.DangerousDirs != nil {
			c.DangerousDirs = *pc.DangerousDirs
			if c.DangerousDirs == nil {
				c.DangerousDirs = []string{}
			}
		}
	}
	return c
}

// ShellConfig is the shell analyser's configuration for a command run in
// env: its workdir, the home and the policy env was bound to.
func ShellConfig(env *Env) shell.Config { return shellConfig(env, homeOf(env), policyOf(env)) }

// BashAnalysis is the analysis of a Bash call's command in env, from
// env's memo when the decision already made it.
func BashAnalysis(env *Env, input json.RawMessage) (*shell.Analysis, error) {
	return analyse(env, input)
}

// analyse returns the analysis of the call's command, parsing it once per
// decision: the first checker method to ask parses it, the others reuse
// it from the environment's memo (Env.Memo).
func analyse(env *Env, input json.RawMessage) (*shell.Analysis, error) {
	var m *Memo
	if env != nil {
		m = env.Memo
	}
	if m != nil && m.analysis != nil && m.raw == string(input) {
		return m.analysis, nil // the same input: neither decoded nor parsed again
	}
	in, err := decodeInput[BashInput]("Bash", input)
	if err != nil {
		return nil, err
	}
	cmd := in.Command
	if m == nil {
		m = &Memo{}
	}
	if m.analysis != nil && m.input == cmd {
		m.raw = string(input)
		return m.analysis, nil
	}
	m.input, m.raw, m.analysis = cmd, string(input), shell.Analyze(cmd, shellConfig(env, homeOf(env), policyOf(env)))
	m.parses++
	return m.analysis, nil
}

// homeOf is the backend home env was bound to ("" unknown).
func homeOf(env *Env) string {
	if env == nil {
		return ""
	}
	return env.Home
}

// policyOf is the policy env was bound to (nil: the default).
func policyOf(env *Env) *permission.Context {
	if env == nil {
		return nil
	}
	return env.Permission
}

// toolNetwork is the settings network env was bound to (nil: none).
func toolNetwork(env *Env) *permission.NetworkGrant {
	if env == nil {
		return nil
	}
	return env.ToolNetwork
}

// CheckPermissions implements PermissionChecker: the path rules on every
// file the command reads or writes (so an allow rule for a command never
// allows a write outside the working directories or a read of a
// sensitive file), then the layers of permission/shell (spec §2.1).
func (Bash) CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	a, err := analyse(env, input)
	if err != nil {
		return permission.Decision{}, err
	}
	mode := permission.ModeDefault
	if pc != nil && pc.Mode != "" {
		mode = pc.Mode
	}
	if a.Empty() || a.Failure() != "" {
		return a.Check(mode), nil
	}
	d := a.Check(mode)
	pd, err := paths(env, pc).Check("Bash", a.Accesses())
	if err != nil {
		return pd, err
	}
	switch {
	case d.Behavior == permission.Ask && d.BypassImmune && pd.Behavior != permission.Deny:
		// A dangerous pattern, command or removal says more than its
		// paths; a protected path (or a path deny rule) still denies, so
		// that bypass, which skips the safety ask, cannot reach it.
	case pd.Behavior != permission.Passthrough:
		d = pd
	case d.Behavior == permission.Passthrough:
		d.Message = "not read-only: " + a.NotReadOnly()
	}
	return permission.HostsAsk("Bash", d, permission.UngrantedHosts(RequestedHosts("Bash", input), "Bash", pc, toolNetwork(env), func(content string) bool {
		return a.MatchRule(content, permission.Allow)
	})), nil
}

// CheckReadOnly implements ReadOnlyChecker: true only for commands the
// analyser fully understands and finds read-only.
func (Bash) CheckReadOnly(ctx context.Context, env *Env, input json.RawMessage) (bool, error) {
	a, err := analyse(env, input)
	if err != nil {
		return false, err
	}
	return a.ReadOnly(), nil
}

// MatchRule implements RuleMatcher, per simple command of a compound
// command; the rule's behaviour comes from permission.RuleBehaviorFrom.
func (Bash) MatchRule(ctx context.Context, env *Env, content string, input json.RawMessage) (bool, error) {
	a, err := analyse(env, input)
	if err != nil {
		return false, err
	}
	b, _ := permission.RuleBehaviorFrom(ctx)
	return a.MatchRule(content, b), nil
}

// GenerateSuggestions implements Suggester with "prefix:*" rules, and
// with Read(DIR/**) or Edit(DIR/**) for each file outside the working
// directories the command reads or writes (the rules the path checks
// consult; sensitive paths ask whatever the rules say).
func (Bash) GenerateSuggestions(ctx context.Context, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	a, err := analyse(env, input)
	if err != nil {
		return nil, err
	}
	out := a.Suggestions()
	ps := paths(env, policyOf(env))
	dirs := ps.WorkingDirs()
	for _, acc := range a.Accesses() {
		if !acc.Resolved || insideDirs(acc.Path, dirs) || ps.SensitiveMatch(acc.Path, acc.Glob) != "" {
			continue
		}
		dir := acc.Path
		if acc.Glob {
			dir = shell.GlobBase(dir)
		} else if acc.Write || !isListing(acc) {
			dir = path.Dir(dir)
		}
		if dir == "/" || dir == "." {
			continue // a rule for the whole file system is not a suggestion
		}
		tool := "Read"
		if acc.Write {
			tool = "Edit"
		}
		r := dirSuggestion(tool, dir)[0]
		if !slices.ContainsFunc(out, func(x permission.Rule) bool { return x.Tool == r.Tool && x.Content == r.Content }) {
			out = append(out, r)
		}
	}
	return out, nil
}

// isListing reports whether a read access is a directory the command
// lists or enters (ls with no operand, cd) rather than a file: the
// heuristic is a command starting with ls, cd, find, tree, du or git.
func isListing(acc shell.Access) bool {
	for _, p := range []string{"ls", "cd", "find", "tree", "du", "git"} {
		if acc.Command == p || strings.HasPrefix(acc.Command, p+" ") {
			return true
		}
	}
	return false
}
