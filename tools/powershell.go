package tools

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"unicode/utf16"

	"github.com/wardenhq/warden/backend"
)

// PowerShell runs a PowerShell script on the call's backend through pwsh
// (or powershell.exe), found by probing the backend once. Its zero value
// probes on every call; give it a ProbeCache (Builtins does) to probe
// once per backend. Its permission checks live in perm_powershell.go.
type PowerShell struct {
	// Probes remembers which PowerShell each backend has; nil probes on
	// every call.
	Probes *ProbeCache
}

// PowerShellInput is PowerShell's input.
type PowerShellInput struct {
	Command     string `json:"command"`
	Description string `json:"description,omitempty"`
	// Timeout is in milliseconds (default 120000, max 600000).
	Timeout int `json:"timeout,omitempty"`
}

var powerShellSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The PowerShell script to run."},
    "description": {"type": "string", "description": "A short description of what the script does."},
    "timeout": {"type": "integer", "minimum": 0, "maximum": 600000, "description": "Timeout in milliseconds (default 120000, max 600000)."}
  },
  "required": ["command"],
  "additionalProperties": false
}`)

// powerShellPrograms are tried in order; the first that runs wins.
var powerShellPrograms = []string{"pwsh", "powershell.exe"}

// Info implements Tool.
func (PowerShell) Info() Info {
	return Info{
		Name: "PowerShell",
		Description: "Run a PowerShell script in the workspace (pwsh -NoProfile -NonInteractive) and return its output. " +
			"Each call starts in the workspace directory. Output is capped at 30000 characters.",
		InputSchema: powerShellSchema,
	}
}

// Call implements Tool.
func (ps PowerShell) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	var in PowerShellInput
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("Invalid input for PowerShell: %v", err)
	}
	if strings.TrimSpace(in.Command) == "" {
		return Errorf("Command failed: empty command")
	}
	prog, err := ps.Probes.Find(ctx, env.Backend, "powershell", func(ctx context.Context) (string, error) {
		for _, p := range powerShellPrograms {
			res, err := env.Backend.Exec(ctx, backend.ExecRequest{
				Argv: []string{p, "-NoProfile", "-NonInteractive", "-Command", "exit 0"}, Timeout: BashDefaultTimeout / 4,
			})
			if err != nil {
				if ctx.Err() != nil {
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
			env.Backend.Name(), strings.Join(powerShellPrograms, ", "))
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

// ProbeCache remembers the result of probing a backend for a program,
// per backend and probe name. It is safe for concurrent use; its zero
// value is ready, and a nil *ProbeCache caches nothing.
type ProbeCache struct {
	mu sync.Mutex
	m  map[probeKey]string
}

type probeKey struct {
	b    backend.Backend
	name string
}

// Find returns the cached result of the probe called name on b, running
// probe when there is none. Errors are not cached. Backends whose
// dynamic value is not comparable are probed every time.
func (c *ProbeCache) Find(ctx context.Context, b backend.Backend, name string, probe func(context.Context) (string, error)) (string, error) {
	if c == nil || !reflect.ValueOf(b).Comparable() {
		return probe(ctx)
	}
	k := probeKey{b, name}
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := probe(ctx)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[probeKey]string{}
	}
	c.m[k] = v
	c.mu.Unlock()
	return v, nil
}
