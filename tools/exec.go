package tools

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/backend"
)

// Process helpers of the shell tools (Bash, PowerShell) and of the tools
// that probe a backend for a program (PowerShell, Grep).

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
	if res.Limit != "" {
		return Single(Chunk{Text: Truncate(limitText(res.Limit, command, stdout, stderr), MaxOutputChars) + networkNote(res), IsError: true,
			Metadata: withConnections(map[string]any{"exit_code": res.ExitCode, "limit": res.Limit}, res)})
	}
	if res.TimedOut {
		return Single(Chunk{Text: fmt.Sprintf("Command timed out after %dms: %s", timeout.Milliseconds(), command) + networkNote(res),
			IsError: true, Metadata: withConnections(map[string]any{}, res)})
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
		return Single(Chunk{Text: Truncate(b.String(), MaxOutputChars) + networkNote(res), IsError: true,
			Metadata: withConnections(map[string]any{"exit_code": res.ExitCode}, res)})
	}
	out := stdout
	if stderr != "" {
		out += "\n" + stderr
	}
	return Single(Chunk{Text: Truncate(out, MaxOutputChars) + networkNote(res),
		Metadata: withConnections(map[string]any{"exit_code": 0}, res)})
}

// maxNoteLines bounds the refusals a network note lists one by one.
const maxNoteLines = 20

// networkNote is what the model reads of the connections the sandbox's
// egress proxy refused: one line each (repeats counted), saying why and
// what would allow it, and how many were not recorded; "" when none was
// refused.
func networkNote(res backend.ExecResult) string {
	var lines []string
	count := map[string]int{}
	// hostRefused: a refusal of a host (not of a request the proxy saw,
	// which has a path), which network_hosts can ask for.
	hostRefused := res.RefusalsDropped != ""
	for _, c := range res.Connections {
		if c.Allowed {
			continue
		}
		hostRefused = hostRefused || c.Path == ""
		line := c.By
		if line == "" {
			line = c.String()
		}
		if count[line] == 0 {
			lines = append(lines, line)
		}
		count[line]++
	}
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nNetwork: the sandbox refused these connections:\n")
	for i, l := range lines {
		if i == maxNoteLines {
			rest := 0
			for _, l := range lines[i:] {
				rest += count[l]
			}
			fmt.Fprintf(&b, "- and %d more refusals for %d other targets (listed in the audit)\n", rest, len(lines)-i)
			break
		}
		b.WriteString("- " + l)
		if n := count[l]; n > 1 {
			fmt.Fprintf(&b, " (%d times)", n)
		}
		b.WriteString("\n")
	}
	if res.RefusalsDropped != "" {
		b.WriteString(res.RefusalsDropped + "\n")
	}
	if res.ConnectionsDropped > 0 {
		fmt.Fprintf(&b, "(%d more connections were not recorded: a result keeps %d, refusals first.)\n", res.ConnectionsDropped, len(res.Connections))
	}
	if hostRefused {
		b.WriteString("A command can ask for a host it needs with the input network_hosts: [\"host\"] (a person is asked).\n")
	}
	return b.String()
}

// withConnections adds the call's connections to a result's metadata
// (for the audit), when it made any, and how many were not kept.
func withConnections(md map[string]any, res backend.ExecResult) map[string]any {
	if len(res.Connections) > 0 {
		md["connections"] = res.Connections
	}
	if res.ConnectionsDropped > 0 {
		md["connections_dropped"] = res.ConnectionsDropped
	}
	if res.RefusalsDropped != "" {
		md["refusals_dropped"] = res.RefusalsDropped
	}
	return md
}

// limitText is what the model reads of a call a limit ended: which
// limit, and the output so far.
func limitText(limit, command, stdout, stderr string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Command stopped: %s\nCommand: %s\n", limit, command)
	if stdout != "" {
		b.WriteString("\nStdout:\n" + stdout)
	}
	if stderr != "" {
		b.WriteString("\nStderr:\n" + stderr)
	}
	return b.String()
}

// decode turns process output into text: invalid UTF-8 is replaced and
// CRLF becomes LF.
func decode(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(s, "\r\n", "\n")
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
