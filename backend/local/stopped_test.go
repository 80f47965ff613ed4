package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoppedNote: a sandboxed call that fails on what the sandbox
// refused (a write outside its grants, a write to the .git config the
// guard keeps read-only, a name lookup without the network) reads that
// warden's sandbox stopped it, what it may touch and how to ask; the
// same write unsandboxed succeeds (the control: the refusal is the
// sandbox's), and a failure of the program's own (a missing file) reads
// no such note.
func TestStoppedNote(t *testing.T) {
	ws := newRepo(t)
	outside := t.TempDir()
	target := filepath.Join(outside, "out.txt")
	b := newBackend(t, ws, true)
	prof := callProfile(ws, false)
	for _, c := range []struct {
		name, script string
		want         []string
	}{
		{"write outside", "echo ATTEMPT; echo x > " + target, []string{"warden's sandbox stopped it", "It may write only: " + ws, "Edit/Write allow rule naming the path"}},
		{"guarded .git config", "echo ATTEMPT; echo x >> .git/config", []string{"warden's sandbox stopped it", "a protected path inside them"}},
		{"no network", `echo ATTEMPT; python3 -c "import socket; socket.getaddrinfo('example.com', 80)"`, []string{"warden's sandbox stopped it", "this call has no network", `network_hosts: ["host"]`}},
		{"own failure", "echo ATTEMPT; cat ./no-such-file", nil},
	} {
		res := run(t, b, ws, prof, c.script)
		if !strings.Contains(string(res.Stdout), "ATTEMPT") || res.ExitCode == 0 {
			t.Fatalf("%s: did not run, or did not fail: %+v %s", c.name, res, res.Stderr)
		}
		t.Logf("%s: %s", c.name, res.Stderr)
		for _, w := range c.want {
			if !strings.Contains(string(res.Stderr), w) {
				t.Errorf("%s: the result does not say %q: %s", c.name, w, res.Stderr)
			}
		}
		if c.want == nil && strings.Contains(string(res.Stderr), "warden's sandbox") {
			t.Errorf("%s: a failure of the program's own is blamed on the sandbox: %s", c.name, res.Stderr)
		}
	}
	// Control: unsandboxed, the same write succeeds and says nothing.
	u := newBackend(t, ws, true)
	u.Unsandboxed = true
	res := run(t, u, ws, prof, "echo ATTEMPT; echo x > "+target)
	if _, err := os.Stat(target); err != nil || res.ExitCode != 0 || strings.Contains(string(res.Stderr), "warden") {
		t.Errorf("control: unsandboxed, the write outside: %v, %+v %s", err, res, res.Stderr)
	}
}

// TestRefusedPath: the path a refusal line names, in the shapes sh,
// coreutils and Python print.
func TestRefusedPath(t *testing.T) {
	for line, want := range map[string]string{
		"/bin/sh: 1: cannot create .git/config: Read-only file system":   "/w/.git/config",
		"cat: /etc/shadow: Permission denied":                            "/etc/shadow",
		"PermissionError: [Errno 13] Permission denied: '/root/x'":       "/root/x",
		"touch: cannot touch '/opt/a': Permission denied":                "/opt/a",
		"mkdir: cannot create directory ‘out/x’: Permission denied":      "/w/out/x",
		"bash: line 1: /usr/local/bin/tool: Operation not permitted":     "/usr/local/bin/tool",
		"error: could not lock config file: Permission denied (no path)": "",
		"OSError: [Errno 30] Read-only file system: 'src/config'":        "/w/src/config",
	} {
		if got := refusedPath(line, "/w"); got != want {
			t.Errorf("%q: %q, want %q", line, got, want)
		}
	}
}
