package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wardenhq/warden/backend"
)

// Bash limits, from AgentScope's Bash tool.
const (
	BashDefaultTimeout = 120 * time.Second
	BashMaxTimeout     = 600 * time.Second
	// MaxOutputChars caps what a shell tool returns to the model.
	MaxOutputChars = 30000
)

// Bash runs a shell command on the call's backend with /bin/sh -c.
// Its permission checks live in perm_bash.go.
type Bash struct{}

// BashInput is Bash's input.
type BashInput struct {
	Command     string `json:"command"`
	Description string `json:"description,omitempty"`
	// Timeout is in milliseconds (default 120000, max 600000).
	Timeout int `json:"timeout,omitempty"`
}

var bashSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The shell command to run."},
    "description": {"type": "string", "description": "A short description of what the command does."},
    "timeout": {"type": "integer", "minimum": 0, "maximum": 600000, "description": "Timeout in milliseconds (default 120000, max 600000)."}
  },
  "required": ["command"],
  "additionalProperties": false
}`)

// Info implements Tool.
func (Bash) Info() Info {
	return Info{
		Name: "Bash",
		Description: "Run a shell command in the workspace and return its output. " +
			"Each call starts in the workspace directory; state such as cd does not carry over. " +
			"Output is capped at 30000 characters.",
		InputSchema: bashSchema,
	}
}

// Call implements Tool.
func (Bash) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	var in BashInput
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("Invalid input for Bash: %v", err)
	}
	if strings.TrimSpace(in.Command) == "" {
		return Errorf("Command failed: empty command")
	}
	return runShell(ctx, env, []string{"/bin/sh", "-c", in.Command}, in.Command, in.Timeout)
}

// runShell runs argv on the env's backend and formats the result the way
// AgentScope's shell tools do. timeoutMS <= 0 means the default.
func runShell(ctx context.Context, env *Env, argv []string, command string, timeoutMS int) Stream {
	timeout := BashDefaultTimeout
	if timeoutMS > 0 {
		timeout = min(time.Duration(timeoutMS)*time.Millisecond, BashMaxTimeout)
	}
	req := backend.ExecRequest{
		Argv:      argv,
		Dir:       env.Workdir,
		Timeout:   timeout,
		MaxOutput: 4 * MaxOutputChars, // bytes; the character cap applies below
	}
	var (
		res backend.ExecResult
		err error
	)
	if s, ok := env.Backend.(backend.Streamer); ok && env.Progress != nil {
		res, err = s.ExecStream(ctx, req, func(stream int, p []byte) {
			name := "stdout"
			if stream == 2 {
				name = "stderr"
			}
			env.Progress(name, p)
		})
	} else {
		res, err = env.Backend.Exec(ctx, req)
	}
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, backend.ErrUnavailable) {
			return Fail(err)
		}
		return Errorf("Command failed: %s\nError: %v", command, err)
	}
	stdout, stderr := decode(res.Stdout), decode(res.Stderr)
	if res.TimedOut {
		return Errorf("Command timed out after %dms: %s", timeout.Milliseconds(), command)
	}
	if res.ExitCode != 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "Command failed: %s\n", command)
		fmt.Fprintf(&b, "Exit code: %d\n", res.ExitCode)
		if stdout != "" {
			b.WriteString("\nStdout:\n" + stdout)
		}
		if stderr != "" {
			b.WriteString("\nStderr:\n" + stderr)
		}
		return Single(Chunk{Text: Truncate(b.String(), MaxOutputChars), IsError: true,
			Metadata: map[string]any{"exit_code": res.ExitCode}})
	}
	out := stdout
	if stderr != "" {
		out += "\n" + stderr
	}
	return Single(Chunk{Text: Truncate(out, MaxOutputChars), Metadata: map[string]any{"exit_code": 0}})
}

// decode turns process output into text: invalid UTF-8 is replaced and
// CRLF becomes LF.
func decode(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(s, "\r\n", "\n")
}
