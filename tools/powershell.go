package tools

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf16"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/permission"
)

// PowerShell runs a PowerShell script on the call's backend through pwsh
// (or powershell.exe), found by probing the backend once. Its zero value
// probes on every call; give it a ProbeCache (Builtins does) to probe
// once per backend. PowerShell is not analysed: every call asks.
type PowerShell struct {
	// Probes remembers which PowerShell each backend has; nil probes on
	// every call.
	Probes *ProbeCache
}

// PowerShellInput is PowerShell's input.
type PowerShellInput struct {
	Command     string `json:"command" jsonschema_description:"The PowerShell script to run."`
	Description string `json:"description,omitempty" jsonschema_description:"A short description of what the script does."`
	// Timeout is in milliseconds (default 120000, max 600000).
	Timeout int `json:"timeout,omitempty" jsonschema:"minimum=0,maximum=600000" jsonschema_description:"Timeout in milliseconds (default 120000, max 600000)."`
	// NetworkHosts are the hosts the script asks to reach, as Bash's.
	NetworkHosts []string `json:"network_hosts,omitempty" jsonschema_description:"Hosts this script must reach (registry.npmjs.org, *.example.org, host:port); a person is asked unless a rule grants them. Without it the script has the network only where a rule grants it."`
}

func (in PowerShellInput) check() string {
	if strings.TrimSpace(in.Command) == "" {
		return "Command failed: empty command"
	}
	for _, h := range in.NetworkHosts {
		if err := permission.CheckHost(h); err != nil {
			return "Invalid input for PowerShell: network_hosts: " + err.Error()
		}
	}
	return ""
}

// powerShellPrograms are tried in order; the first that runs wins.
func powerShellPrograms() []string { return []string{"pwsh", "powershell.exe"} }

// powerShellSchema is the input schema, derived from the input struct once.
var powerShellSchema = builtinSchema[PowerShellInput]()

// Info implements Tool.
func (PowerShell) Info() Info {
	return Info{
		Name: "PowerShell",
		Description: "Run a PowerShell script in the workspace (pwsh -NoProfile -NonInteractive) and return its output. " +
			"Each call starts in the workspace directory. Output is capped at 30000 characters.",
		InputSchema: powerShellSchema(),
	}
}

// CheckInput implements InputChecker.
func (PowerShell) CheckInput(_ context.Context, _ *Env, input json.RawMessage) error {
	return checkInput[PowerShellInput]("PowerShell", input)
}

// CheckPermissions implements PermissionChecker: PowerShell is not
// analysed, so every call is a (non-safety) ASK.
func (PowerShell) CheckPermissions(_ context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	d := permission.Decision{
		Behavior: permission.Ask,
		Message:  "Execute PowerShell command",
		Reason:   "Tool check: PowerShell commands are not analysed",
	}
	// Only tool-level rules match PowerShell (MatchRule).
	return permission.HostsAsk("PowerShell", d, permission.UngrantedHosts(RequestedHosts("PowerShell", input), "PowerShell", pc, toolNetwork(env), func(content string) bool { return content == "" })), nil
}

// MatchRule implements RuleMatcher: only tool-level rules (no content)
// match PowerShell.
func (PowerShell) MatchRule(_ context.Context, _ *Env, content string, _ json.RawMessage) (bool, error) {
	return content == "", nil
}

// CheckRuleContent implements RuleContentChecker: PowerShell commands
// are not analysed, so no rule content matches them.
func (PowerShell) CheckRuleContent(string) error {
	return errors.New("PowerShell commands are not analysed, so only the rule PowerShell (every call) matches them")
}

// GenerateSuggestions implements Suggester: PowerShell suggests nothing.
func (PowerShell) GenerateSuggestions(context.Context, *Env, json.RawMessage) ([]permission.Rule, error) {
	return []permission.Rule{}, nil
}

// Call implements Tool.
func (ps PowerShell) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	in, err := parseInput[PowerShellInput]("PowerShell", input)
	if err != nil {
		return invalid(err)
	}
	prog, err := ps.Probes.Find(ctx, env.Backend, "powershell", func(ctx context.Context) (string, error) {
		for _, p := range powerShellPrograms() {
			res, err := env.Backend.Exec(ctx, backend.ExecRequest{
				Argv: []string{p, "-NoProfile", "-NonInteractive", "-Command", "exit 0"}, Timeout: BashDefaultTimeout / 4,
			})
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, backend.ErrUnavailable) {
					return "", err
				}
				continue
			}
			if res.ExitCode != 127 && !res.TimedOut {
				return p, nil
			}
		}
		return "", nil
	})
	if err != nil {
		return Fail(err)
	}
	if prog == "" {
		return Errorf("PowerShell is not available on the %s backend (tried %s). Use the Bash tool instead.",
			env.Backend.Name(), strings.Join(powerShellPrograms(), ", "))
	}
	argv := []string{prog, "-NoProfile", "-NonInteractive", "-EncodedCommand", encodePowerShell(in.Command)}
	return runShell(ctx, env, argv, in.Command, in.Timeout)
}

// encodePowerShell encodes a script for -EncodedCommand: base64 of its
// UTF-16LE bytes.
func encodePowerShell(script string) string {
	units := utf16.Encode([]rune(script))
	buf := make([]byte, 2*len(units))
	for i, u := range units {
		binary.LittleEndian.PutUint16(buf[2*i:], u)
	}
	return base64.StdEncoding.EncodeToString(buf)
}
