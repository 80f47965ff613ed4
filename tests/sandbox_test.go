package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// escapeLab is a workspace laid out as `go run ./cmd/worker` lays out a
// checkout (the data directory and the config file inside the
// workspace), a directory outside it, and listeners the test holds.
type escapeLab struct {
	ws, out, data, cfg, key, keyring, content string
	// listeners stand for the inbox, the metrics endpoint and an outside
	// address; accepted counts connections to each.
	listeners []net.Listener
	accepted  []*atomic.Int32
	frontend  string
	// env is a NAME=value of the worker's own environment that no tool
	// process gets.
	env string
}

// environMarker is an entry of this process's environment as the kernel
// shows it (/proc/self/environ) that the tool environment leaves out.
func environMarker(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]bool{}
	for _, n := range backend.BaseEnvNames() {
		base[n] = true
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		name, _, ok := strings.Cut(kv, "=")
		if ok && len(kv) > len(name)+3 && !base[name] && !strings.HasPrefix(name, "LC_") {
			return kv
		}
	}
	t.Fatal("the worker's environment has nothing a tool does not get")
	return ""
}

const (
	keyMarker     = "wk1.lab-operator-secret"
	keyringMarker = "keyring-lab-secret"
	contentMarker = "content-lab-secret"
	configMarker  = "config-lab-secret"
)

func newEscapeLab(t *testing.T) *escapeLab {
	t.Helper()
	l := &escapeLab{ws: t.TempDir(), out: t.TempDir(), frontend: env.srv.Addr()}
	l.data = filepath.Join(l.ws, ".warden")
	l.cfg = filepath.Join(l.ws, "temporal-dev.yaml")
	l.key = filepath.Join(l.data, "auth", "operator.key")
	l.keyring = filepath.Join(l.data, "auth", "keyring.json")
	l.content = filepath.Join(l.data, "content", "turns", "t1", "c1")
	for p, body := range map[string]string{l.key: keyMarker, l.keyring: keyringMarker, l.content: contentMarker, l.cfg: configMarker,
		filepath.Join(l.ws, "Makefile"): "all:\n\ttouch " + filepath.Join(l.out, "make.txt") + "\n"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "init", "-q", l.ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	// Links planted inside the workspace by someone outside the sandbox.
	for link, target := range map[string]string{"keylink": l.key, "envlink": "/proc/self/environ", "outlink": l.out} {
		if err := os.Symlink(target, filepath.Join(l.ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(l.key, filepath.Join(l.ws, "keyhard")); err != nil {
		t.Fatal(err)
	}
	l.env = environMarker(t)
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.1:0", outsideAddr(t)} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		n := &atomic.Int32{}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				n.Add(1)
				c.Close()
			}
		}()
		t.Cleanup(func() { ln.Close() })
		l.listeners, l.accepted = append(l.listeners, ln), append(l.accepted, n)
	}
	return l
}

// outsideAddr is a listen address on a non-loopback interface, the
// closest this machine has to an outside address.
func outsideAddr(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String() + ":0"
		}
	}
	t.Fatal("no non-loopback IPv4 address to stand for the outside")
	return ""
}

// escape is one attempt: a tool call, and a check of whether its effect
// happened (on disk, in the result, at a listener).
type escape struct {
	name, tool string
	input      map[string]any
	// bypassOnly attempts ask in the other modes before they could run
	// (the engine stops them); the sandbox is what stops them in bypass.
	bypassOnly bool
	// fileTool attempts are refused by the file tools themselves, sandbox
	// or not; with the sandbox off the test shows the link does lead to
	// the secret instead.
	fileTool bool
	// notDefault attempts would ask in default mode (a Write).
	notDefault bool
	happened   func(result string) bool
}

func py(code string) map[string]any {
	return map[string]any{"command": "python3 -c " + shellQuote(code)}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (l *escapeLab) exists(name string) func(string) bool {
	return func(string) bool { _, err := os.Stat(filepath.Join(l.out, name)); return err == nil }
}

func leaked(markers ...string) func(string) bool {
	return func(res string) bool {
		for _, m := range markers {
			if strings.Contains(res, m) {
				return true
			}
		}
		return false
	}
}

func (l *escapeLab) reached(i int) func(string) bool {
	return func(res string) bool {
		return l.accepted[i].Load() > 0 || strings.Contains(res, "CONNECTED")
	}
}

func (l *escapeLab) escapes() []escape {
	pid := os.Getpid()
	connect := func(addr string) string {
		host, port, _ := net.SplitHostPort(addr)
		return fmt.Sprintf("import socket\ns=socket.create_connection((%q,%s),2)\nprint('CONN'+'ECTED')", host, port)
	}
	hook := filepath.Join(l.ws, ".git", "hooks", "pre-commit")
	gitConfig := filepath.Join(l.ws, ".git", "config")
	return []escape{
		// Writes outside the working directories.
		{name: "write outside via an interpreter", tool: "Bash", input: py(fmt.Sprintf("open(%q,'w').write('x')", filepath.Join(l.out, "py.txt"))), happened: l.exists("py.txt")},
		{name: "write outside via a build recipe", tool: "Bash", input: map[string]any{"command": "make -s all"}, happened: l.exists("make.txt")},
		{name: "write outside via git config", tool: "Bash", input: map[string]any{"command": fmt.Sprintf("git -c core.fsmonitor='touch %s' status", filepath.Join(l.out, "git.txt"))}, happened: l.exists("git.txt")},
		{name: "write outside via a redirection", tool: "Bash", input: map[string]any{"command": "echo x > " + filepath.Join(l.out, "redir.txt")}, bypassOnly: true, happened: l.exists("redir.txt")},
		{name: "write outside through a linked directory", tool: "Write", input: map[string]any{"file_path": filepath.Join(l.ws, "outlink", "write.txt"), "content": "x"}, fileTool: true, notDefault: true, happened: l.exists("write.txt")},
		// Reads of warden's secrets.
		{name: "read the operator key directly", tool: "Bash", input: map[string]any{"command": "cat " + l.key}, happened: leaked(keyMarker)},
		{name: "read the secrets via an interpreter", tool: "Bash", input: py(fmt.Sprintf("for p in [%q,%q,%q,%q]:\n  try: print(open(p).read())\n  except Exception as e: print(e)", l.key, l.keyring, l.content, l.cfg)),
			happened: leaked(keyMarker, keyringMarker, contentMarker, configMarker)},
		{name: "read the key through a symbolic link", tool: "Bash", input: map[string]any{"command": "cat keylink"}, happened: leaked(keyMarker)},
		{name: "Read the key through a symbolic link", tool: "Read", input: map[string]any{"file_path": filepath.Join(l.ws, "keylink")}, fileTool: true, happened: leaked(keyMarker)},
		{name: "Read the key through a hard link", tool: "Read", input: map[string]any{"file_path": filepath.Join(l.ws, "keyhard")}, fileTool: true, happened: leaked(keyMarker)},
		{name: "make a hard link to the key", tool: "Bash", input: py(fmt.Sprintf("import os\nos.link(%q,%q)\nprint(open(%q).read())", l.key, filepath.Join(l.ws, "keyhard2"), filepath.Join(l.ws, "keyhard2"))), happened: leaked(keyMarker)},
		// The worker's environment.
		{name: "read the worker's environment", tool: "Bash", input: py(fmt.Sprintf("print(open('/proc/%d/environ').read())", pid)), happened: leaked(l.env)},
		{name: "Read /proc/self/environ through a link", tool: "Read", input: map[string]any{"file_path": filepath.Join(l.ws, "envlink")}, fileTool: true, happened: leaked(l.env)},
		{name: "Read /proc/self as the worker", tool: "Read", input: map[string]any{"file_path": "/proc/self/status"}, fileTool: true,
			happened: func(r string) bool { return strings.Contains(r, fmt.Sprintf("Pid:\t%d", pid)) }},
		{name: "read the worker's memory", tool: "Bash", input: py(fmt.Sprintf("m=open('/proc/%d/maps').readline().split('-')[0]\nf=open('/proc/%d/mem','rb')\nf.seek(int(m,16))\nf.read(8)\nprint('MEM'+'READ')", pid, pid)), happened: leaked("MEMREAD")},
		{name: "read through /proc/PID/root", tool: "Bash", input: py(fmt.Sprintf("print(open('/proc/%d/root%s').read())", pid, l.key)), happened: leaked(keyMarker)},
		// Connections.
		{name: "connect to the frontend", tool: "Bash", input: py(connect(l.frontend)), happened: leaked("CONNECTED")},
		{name: "connect to the inbox", tool: "Bash", input: py(connect(l.listeners[0].Addr().String())), happened: l.reached(0)},
		{name: "connect to the metrics listener", tool: "Bash", input: py(connect(l.listeners[1].Addr().String())), happened: l.reached(1)},
		{name: "connect to an outside address", tool: "Bash", input: py(connect(l.listeners[2].Addr().String())), happened: l.reached(2)},
		// Files that run later.
		{name: "write a git hook", tool: "Bash", input: py(fmt.Sprintf("open(%q,'w').write('#!/bin/sh\\ntouch x\\n')", hook)),
			happened: func(string) bool { _, err := os.Stat(hook); return err == nil }},
		{name: "write git config", tool: "Bash", input: map[string]any{"command": "git config core.hooksPath " + l.out},
			happened: func(string) bool { b, _ := os.ReadFile(gitConfig); return strings.Contains(string(b), "hooksPath") }},
		// Escape attempts.
		{name: "unshare and unmount", tool: "Bash", input: py(fmt.Sprintf("import os\nos.system(\"unshare -Urm sh -c 'umount %s 2>/dev/null; cat %s'\")", l.data, l.key)), happened: leaked(keyMarker)},
		{name: "mount over a directory", tool: "Bash", input: py(fmt.Sprintf("import os\nif os.system('mount -t tmpfs none %s 2>/dev/null')==0:\n  print('MOUN'+'TED'); os.system('umount %s')", l.out, l.out)), happened: leaked("MOUNTED")},
		{name: "a setuid helper", tool: "Bash", input: py(fmt.Sprintf("import os\nos.system('su root -c \"cat %s; touch %s\" 2>&1')", l.key, filepath.Join(l.out, "su.txt"))), happened: func(r string) bool {
			return strings.Contains(r, keyMarker) || l.exists("su.txt")("")
		}},
	}
}

// runEscapes runs the attempts in one turn of mode on a worker whose
// local backend is sandboxed or not, and returns each result's text.
func runEscapes(t *testing.T, l *escapeLab, mode permission.Mode, rules []string, sandboxed bool, es []escape) []string {
	t.Helper()
	out, _ := runEscapesID(t, l, mode, rules, sandboxed, es)
	return out
}

// runEscapesID is runEscapes that also returns the turn's workflow id.
func runEscapesID(t *testing.T, l *escapeLab, mode permission.Mode, rules []string, sandboxed bool, es []escape) ([]string, string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("steps:\n  - tool_calls:\n")
	for _, e := range es {
		in, err := json.Marshal(e.input)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "      - {name: %s, input: %s}\n", e.tool, in)
	}
	b.WriteString("  - text: done\n")
	protected := []string{l.data + "{,/**}", l.cfg}
	cl := startWorker(t, warden.Options{Workdir: l.ws, Protected: protected, Backends: map[string]backend.Backend{
		// Link resolution is a layer of the decision with its own test
		// (TestRealWorkerLinks); it is off here so that the kernel, not
		// the engine, is what meets the planted links.
		"local": &local.Backend{Workdir: l.ws, Hide: []string{l.data, l.cfg}, Unsandboxed: !sandboxed, Off: []string{local.LinksLayer}}}})
	ctx := ctxT(t, 2*time.Minute)
	id := fmt.Sprintf("escape-%s-%v-%d", mode, sandboxed, time.Now().UnixNano())
	pc := policy(t, permission.Policy{Mode: mode, Allow: rules})
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, b.String())},
		Permission: pc, Workdir: l.ws, ApprovalTimeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != len(es) {
		t.Fatalf("%d results for %d calls", len(rs), len(es))
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Content
	}
	return out, id
}

// TestEscapeSuite tries, through real turns on the local backend, to
// escape the sandbox in each mode with broad rules, and checks that
// nothing happened; then runs the same attempts with the sandbox off and
// checks that each one does happen there, so every case can fail.
func TestEscapeSuite(t *testing.T) {
	broad := []string{"Bash(python3:*)", "Bash(make:*)", "Bash(git:*)", "Bash(cat:*)", "Read"}
	modes := []struct {
		mode  permission.Mode
		rules []string
	}{{permission.ModeDefault, broad}, {permission.ModeAcceptEdits, broad}, {permission.ModeBypass, nil}}
	for _, m := range modes {
		t.Run(string(m.mode), func(t *testing.T) {
			l := newEscapeLab(t)
			var es []escape
			for _, e := range l.escapes() {
				if (!e.bypassOnly || m.mode == permission.ModeBypass) && (!e.notDefault || m.mode != permission.ModeDefault) {
					es = append(es, e)
				}
			}
			res := runEscapes(t, l, m.mode, m.rules, true, es)
			for i, e := range es {
				if e.happened(res[i]) {
					t.Errorf("%s: it happened in %s mode with the sandbox on: %q", e.name, m.mode, res[i])
				}
				// The attempt ran: the engine let it through (only the
				// protected key is denied in every mode), so the sandbox is
				// what stopped it. TestRealWorkerEscapes also checks each
				// attempt's own marker.
				if !e.fileTool && !strings.HasPrefix(e.name, "read the operator key directly") &&
					(strings.Contains(res[i], "Permission denied for ") || strings.Contains(res[i], "The user denied")) {
					t.Errorf("%s: the engine stopped it in %s mode, so it never reached the sandbox: %q", e.name, m.mode, res[i])
				}
			}
		})
	}
	t.Run("sandbox off", func(t *testing.T) {
		l := newEscapeLab(t)
		es := l.escapes()
		res, id := runEscapesID(t, l, permission.ModeBypass, nil, false, es)
		// Every verdict says the call ran without the sandbox.
		recs, err := audit.Workflow(ctxT(t, time.Minute), env.c, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Kind == audit.KindPermission && r.Decision == "allow" && !strings.HasPrefix(r.Sandbox, "no sandbox") {
				t.Errorf("%s: audit sandbox %q, want it to say there was none", r.CallID, r.Sandbox)
			}
		}
		for i, e := range es {
			if e.fileTool {
				// The file tools refuse these whatever the sandbox; show
				// that the path does lead where the attempt aimed.
				if !strings.Contains(res[i], "refused") {
					t.Errorf("%s: the file tool did not refuse it: %q", e.name, res[i])
				}
				continue
			}
			if strings.HasPrefix(e.name, "read the operator key directly") {
				// Protected paths are denied by the engine in every mode.
				if !strings.Contains(res[i], "is protected") {
					t.Errorf("%s: not denied by the engine: %q", e.name, res[i])
				}
				continue
			}
			if !e.happened(res[i]) {
				t.Errorf("%s: the attempt did not succeed with the sandbox off, so it proves nothing: %q", e.name, res[i])
			}
		}
		// The planted links do lead to the secrets.
		if b, err := os.ReadFile(filepath.Join(l.ws, "keyhard")); err != nil || string(b) != keyMarker {
			t.Errorf("the planted hard link does not lead to the key: %v", err)
		}
		if b, err := os.ReadFile("/proc/self/status"); err != nil || !strings.Contains(string(b), fmt.Sprintf("Pid:\t%d", os.Getpid())) {
			t.Errorf("/proc/self/status of the worker: %v", err)
		}
	})
}

// TestWorkerFailsClosedWithoutSandbox runs the worker where the kernel
// lets it make no user namespace (a user namespace of its own whose
// limit is 0, standing for a kernel without them): it refuses to start
// and says how to run unconfined; with backend.local.sandbox: off it
// starts and says the sandbox is off.
func TestWorkerFailsClosedWithoutSandbox(t *testing.T) {
	wbin := buildWorker(t)
	workdir, cwd := t.TempDir(), t.TempDir()
	worker := func(cfgText string) *exec.Cmd {
		cfg := filepath.Join(cwd, "config-"+tag()+".yaml")
		if err := os.WriteFile(cfg, []byte(contentConfig()+cfgText), 0o644); err != nil {
			t.Fatal(err)
		}
		return exec.Command("unshare", "-Ur", "sh", "-c", `echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"`, "sh",
			wbin, "--config", cfg, "--temporal-address", env.srv.Addr(), "--namespace", "default",
			"--task-queue", "tq-nosandbox-"+tag(), "--metrics-addr", "off", "--workdir", workdir)
	}
	cmd := worker("")
	cmd.Dir = workdir
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the worker did not exit without a sandbox")
	}
	if err == nil || !strings.Contains(string(out), "cannot sandbox tool processes here") || !strings.Contains(string(out), "backend.local.sandbox: off") {
		t.Fatalf("without a sandbox: %v\n%s", err, out)
	}

	cmd = worker("backend:\n  local:\n    sandbox: \"off\"\n")
	cmd.Dir = workdir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(90 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the worker with the sandbox off exited")
			}
			if strings.HasPrefix(l, "sandbox") {
				if !strings.Contains(l, "OFF (backend.local.sandbox: off)") {
					t.Errorf("start-up line %q", l)
				}
				return
			}
		case <-timeout:
			t.Fatal("the worker with the sandbox off printed no sandbox line")
		}
	}
}
