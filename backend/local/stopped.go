package local

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/calls"
)

// The errors a sandboxed process gets where the sandbox stopped it:
// Landlock refuses with EACCES or EPERM, a read-only mount with EROFS.
var fileRefusals = []string{"Permission denied", "Operation not permitted", "Read-only file system"}

// What a program prints when it has no network (a call without one has
// only loopback, and no resolver).
var netRefusals = []string{"Could not resolve host", "Temporary failure in name resolution", "Name or service not known",
	"Network is unreachable", "Connection refused", "getaddrinfo failed", "nodename nor servname"}

// maxNoteScan bounds how much of the output stoppedNote reads (its end:
// the error that ended a program comes last).
const maxNoteScan = 64 << 10

// stoppedNote is what the model reads when a sandboxed call failed on
// something the sandbox probably stopped: that warden's sandbox did, what
// the call may touch, and how to ask for more; "" when the call ended
// well or its output shows no such failure. It is a heuristic: a
// non-zero exit whose output holds "Permission denied", "Operation not
// permitted" or "Read-only file system" (on a path outside the call's
// write grants, or one the guard keeps read-only inside them), or, for
// a call without the network, a failed name lookup or connection. The
// kernel does not tell a process which layer refused it, and a tool
// process runs as the worker's user, so a refusal by the file's own
// permissions reads the same; the note says "probably".
func stoppedNote(prof *calls.Sandbox, write []string, dir string, res backend.ExecResult) string {
	if res.ExitCode == 0 || prof == nil {
		return ""
	}
	out := append(tail(res.Stdout), tail(res.Stderr)...)
	var lines []string
	var paths []string
	for _, l := range bytes.Split(out, []byte("\n")) {
		s := string(l)
		for _, r := range fileRefusals {
			if strings.Contains(s, r) {
				lines = append(lines, strings.TrimSpace(s))
				if p := refusedPath(s, dir); p != "" {
					paths = append(paths, p)
				}
				break
			}
		}
	}
	netLine := ""
	if !prof.Network {
		for _, l := range bytes.Split(out, []byte("\n")) {
			s := string(l)
			for _, r := range netRefusals {
				if strings.Contains(s, r) {
					netLine = strings.TrimSpace(s)
					break
				}
			}
			if netLine != "" {
				break
			}
		}
	}
	if len(lines) == 0 && netLine == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("warden: this call probably failed because warden's sandbox stopped it (the kernel refuses what the call was not granted; a heuristic reading of its output):\n")
	for _, l := range lines[:min(len(lines), 3)] {
		fmt.Fprintf(&b, "  - %s\n", clip(l, 200))
	}
	if netLine != "" {
		fmt.Fprintf(&b, "  - %s (this call has no network)\n", clip(netLine, 200))
	}
	b.WriteString("  It may write only: ")
	if len(prof.Write) == 0 {
		b.WriteString("nothing (a read-only call) but its TMPDIR")
	} else {
		b.WriteString(strings.Join(prof.Write, ", ") + " and its TMPDIR")
	}
	b.WriteString(", never .git's configuration and hooks, the hooks directory git uses, nor .bashrc, .vscode and the like; it reads the system, its working directories and its toolchains, not the rest of the home directory nor the hidden credentials; ")
	if prof.Network {
		if len(prof.Hosts) > 0 {
			b.WriteString("network only to " + strings.Join(prof.Hosts, ", ") + ".\n")
		} else {
			b.WriteString("network to public hosts.\n")
		}
	} else {
		b.WriteString("no network.\n")
	}
	outside, guarded := false, false
	for _, p := range paths {
		if under(p, write) {
			guarded = true
		} else {
			outside = true
		}
	}
	b.WriteString("  To get more, ask rather than work around it:")
	if outside || len(paths) == 0 && len(lines) > 0 {
		b.WriteString(" a write outside those paths needs an Edit/Write allow rule naming the path, or a person's approval of a command that names it;")
	}
	if guarded {
		b.WriteString(" a protected path inside them (a .git, a hooks directory, a dangerous file) needs an Edit/Write allow rule naming it;")
	}
	if len(lines) > 0 {
		b.WriteString(" a read of a hidden file needs a Read allow rule naming it;")
	}
	if netLine != "" || prof.Network {
		b.WriteString(` a host needs network_hosts: ["host"] in the command's input (a person is asked);`)
	}
	s := strings.TrimSuffix(b.String(), ";") + ".\n"
	return s
}

// refusedPath is the path a refusal line names, made absolute against
// dir: the word after "cannot create"/"open"/"remove"/"touch" (sh,
// coreutils), else the last token that looks like a path ("/x", "./x",
// "a/b") before the refusal, else the first after it (Python's
// "Permission denied: '/x'"); "" when there is none.
func refusedPath(line, dir string) string {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\'' || r == '"' || r == '`' || r == ':' || r == '‘' || r == '’' || r == '(' || r == ')' || r == ',' || r == '[' || r == ']'
		})
	}
	pathy := func(f string) bool { return strings.Contains(f, "/") }
	at := len(line)
	for _, r := range fileRefusals {
		if i := strings.Index(line, r); i >= 0 && i < at {
			at = i
		}
	}
	before, after := split(line[:at]), split(line[at:])
	pick := ""
	for i, f := range before {
		if (f == "create" || f == "open" || f == "remove" || f == "touch") && i > 0 && before[i-1] == "cannot" && i+1 < len(before) {
			pick = before[i+1]
			if pick == "directory" && i+2 < len(before) {
				pick = before[i+2]
			}
		}
	}
	for i := len(before) - 1; i >= 0 && pick == ""; i-- {
		if pathy(before[i]) {
			pick = before[i]
		}
	}
	for _, f := range after {
		if pick == "" && pathy(f) {
			pick = f
		}
	}
	if pick == "" {
		return ""
	}
	if !filepath.IsAbs(pick) {
		pick = filepath.Join(dir, pick)
	}
	return filepath.Clean(pick)
}

// tail is the last maxNoteScan bytes of b.
func tail(b []byte) []byte {
	if len(b) > maxNoteScan {
		return b[len(b)-maxNoteScan:]
	}
	return b
}

// clip cuts s to n bytes.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
