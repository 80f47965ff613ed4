package tests

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// TestRealWorkerChannels: the channels beyond files and network (issue
// 41's classes 1 to 3), through the built worker as a user starts it,
// in default (Bash(python3:*)), accept_edits and bypass, and then with
// one layer of backend.local.sandbox_off at a time as its control:
//
//   - unix sockets: listeners the test serves outside the sandbox in a
//     0700 directory of /tmp, under the worker's $HOME and under /run;
//     an allowed call with no network connects to each and sends its
//     marker. Control unix_sockets: /tmp and $HOME are reached (/run is
//     also hidden by the mount layer, so it stays unreached).
//   - keyrings: the test adds a key to its session keyring, which the
//     worker inherits; a call searches for it and reads it, adds a key
//     of its own, and the next call searches for that one. Control
//     keyring: both are reached.
//   - the terminal: the worker runs with a terminal of its own (script(1),
//     as in an operator's terminal); a call opens /dev/tty and pushes a
//     byte into it with TIOCSTI. Control new_session: /dev/tty opens (the
//     terminal is reachable), the push is still refused by tty_ioctls;
//     with both off it works.
//
// Every attempt prints its marker first, so a stopped attempt is shown
// to have run.
func TestRealWorkerChannels(t *testing.T) {
	for _, r := range []struct {
		name  string
		mode  permission.Mode
		rules []string
		off   []string
	}{
		{"default", permission.ModeDefault, []string{"Bash(python3:*)"}, nil},
		{"accept_edits", permission.ModeAcceptEdits, []string{"Bash(python3:*)"}, nil},
		{"bypass", permission.ModeBypass, nil, nil},
		{"unix_sockets_off", permission.ModeBypass, nil, []string{"unix_sockets"}},
		{"keyring_off", permission.ModeBypass, nil, []string{"keyring"}},
		{"new_session_off", permission.ModeBypass, nil, []string{"new_session"}},
		{"new_session_and_tty_ioctls_off", permission.ModeBypass, nil, []string{"new_session", "tty_ioctls"}},
	} {
		t.Run(r.name, func(t *testing.T) {
			extra := ""
			if len(r.off) > 0 {
				extra = "backend:\n  local:\n    sandbox_off: [" + strings.Join(r.off, ", ") + "]\n"
			}
			// The worker starts in a session keyring of its own holding a
			// secret, as a login's (pam_keyinit): it is joined on this
			// goroutine's thread, which starts the worker and, locked,
			// ends with the subtest.
			runtime.LockOSThread()
			key := keyringKey{desc: "warden-test-" + tag(), secret: "KEYRING-SECRET-" + tag()}
			if _, err := unix.KeyctlJoinSessionKeyring("warden-test-" + r.name); err != nil {
				t.Fatalf("join a session keyring: %v", err)
			}
			if _, err := unix.AddKey("user", key.desc, []byte(key.secret), unix.KEY_SPEC_SESSION_KEYRING); err != nil {
				t.Fatalf("add a key to the session keyring: %v", err)
			}
			w := startRealWorker(t, inside, false, extra, ttyArg)
			for _, l := range r.off {
				if !strings.Contains(w.stdout.String(), "sandbox layer "+l+" is OFF") {
					t.Fatalf("the worker does not warn that %s is off:\n%s", l, w.tail())
				}
			}
			m := modeRun{w: w, mode: r.mode, rules: r.rules}
			off := func(l string) bool { return slices.Contains(r.off, l) }
			t.Run("unix_sockets", func(t *testing.T) { channelSockets(t, m, off("unix_sockets")) })
			t.Run("keyring", func(t *testing.T) { channelKeyring(t, m, key, off("keyring")) })
			t.Run("terminal", func(t *testing.T) { channelTerminal(t, m, off("new_session"), off("tty_ioctls")) })
		})
	}
}

// ttyArg, among startRealWorker's extra arguments, runs the worker with
// a terminal of its own as its controlling terminal (script(1)), as a
// worker started in the foreground of an operator's terminal.
const ttyArg = "\x00tty"

// socketListener serves a unix socket at path and records every line
// sent to it.
type socketListener struct {
	mu  sync.Mutex
	got []string
}

func (s *socketListener) has(marker string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.got, func(l string) bool { return strings.Contains(l, marker) })
}

// listenUnix serves a socket at path (its directory made 0700) until
// the test ends.
func listenUnix(t *testing.T, path string) *socketListener {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Dir(path), 0o700)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); os.Remove(path) })
	s := &socketListener{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					s.mu.Lock()
					s.got = append(s.got, sc.Text())
					s.mu.Unlock()
				}
			}()
		}
	}()
	return s
}

// channelSockets: an allowed call with no network reaches the unix
// sockets of /tmp, $HOME and /run.
func channelSockets(t *testing.T, m modeRun, layerOff bool) {
	tagged := "SOCK-" + m.w.tag + "-" + tag()
	places := []struct {
		name, path string
		hidden     bool // hidden by the mount layer too
	}{
		{"a 0700 dir of /tmp", filepath.Join(os.TempDir(), "warden-agent-"+tag(), "agent.sock"), false},
		{"the worker's $HOME", filepath.Join(m.w.home, ".docker", "run", "docker.sock"), false},
		{"/run", filepath.Join("/run", "warden-test-"+tag(), "daemon.sock"), true},
	}
	var as []attempt
	var ls []*socketListener
	for i, p := range places {
		l := listenUnix(t, p.path)
		t.Cleanup(func() { os.RemoveAll(filepath.Dir(p.path)) })
		ls = append(ls, l)
		marker := fmt.Sprintf("%s-%d", tagged, i)
		as = append(as, attempt{name: "connects to the socket in " + p.name, tool: "Bash",
			input: pyCall(fmt.Sprintf("import socket\ndef f():\n  s=socket.socket(socket.AF_UNIX)\n  s.connect(%q)\n  s.sendall(b%q+b'\\n')\n  s.close()\n  return 'sent'\nshow('SOCK', f)\n", p.path, marker))})
	}
	rs := m.turn(t, "sockets", "", 3*time.Minute, [][]attempt{{as[0]}, {as[1]}, {as[2]}}...)
	// The listener reads asynchronously: give it a moment after the turn.
	time.Sleep(300 * time.Millisecond)
	for i, p := range places {
		marker := fmt.Sprintf("%s-%d", tagged, i)
		r := rs[i]
		if !strings.Contains(r.Content, attemptMarker) {
			t.Errorf("%s: %s: never ran:\n%.1500s", m.name(), as[i].name, r.Content)
			continue
		}
		reached := ls[i].has(marker)
		switch {
		case layerOff && !p.hidden && !reached:
			t.Errorf("%s: %s: not reached with only unix_sockets off, so the test proves nothing:\n%.1500s", m.name(), as[i].name, r.Content)
		case layerOff && p.hidden && reached:
			t.Errorf("%s: %s: reached, though /run is hidden:\n%.1500s", m.name(), as[i].name, r.Content)
		case !layerOff && reached:
			t.Errorf("%s: %s: ESCAPED with the sandbox on:\n%.1500s", m.name(), as[i].name, r.Content)
		default:
			t.Logf("%s: %s: reached %v: %.300s", m.name(), as[i].name, reached, strings.ReplaceAll(r.Content, "\n", " | "))
		}
	}
}

// keyctl from python3: search (10) a keyring for a user key and read
// (11) it, or add_key (248) one to the session keyring (-3).
const pyKeyctl = `import ctypes
libc=ctypes.CDLL(None,use_errno=True)
libc.syscall.restype=ctypes.c_long
def search(desc):
  kid=libc.syscall(250,10,-3,b'user',desc.encode(),0)
  if kid<0: raise OSError(ctypes.get_errno(),os.strerror(ctypes.get_errno()))
  buf=ctypes.create_string_buffer(256)
  n=libc.syscall(250,11,kid,buf,256)
  if n<0: raise OSError(ctypes.get_errno(),os.strerror(ctypes.get_errno()))
  return buf.raw[:n].decode()
def add(desc,val):
  kid=libc.syscall(248,b'user',desc.encode(),val.encode(),len(val),-3)
  if kid<0: raise OSError(ctypes.get_errno(),os.strerror(ctypes.get_errno()))
  return kid
`

// keyringKey is a user key of the worker's session keyring.
type keyringKey struct{ desc, secret string }

// channelKeyring: a call reads a key of the worker's session keyring,
// and a key one call adds is there for the next.
func channelKeyring(t *testing.T, m modeRun, key keyringKey, layerOff bool) {
	desc, secret := key.desc, key.secret
	planted := "warden-planted-" + tag()
	plantedVal := "PLANTED-" + m.w.tag
	read := attempt{name: "reads a key of the worker's session keyring", tool: "Bash",
		input: pyCall(pyKeyctl + fmt.Sprintf("show('KEY', lambda: search(%q))\n", desc)), effect: contains(secret)}
	plant := attempt{name: "adds a key to its session keyring", tool: "Bash",
		input: pyCall(pyKeyctl + fmt.Sprintf("show('ADD', lambda: add(%q,%q))\n", planted, plantedVal)), effect: contains("ADD OK")}
	next := attempt{name: "finds the key the previous call added", tool: "Bash",
		input: pyCall(pyKeyctl + fmt.Sprintf("show('KEY', lambda: search(%q))\n", planted)), effect: contains(plantedVal)}
	as := []attempt{read, plant, next}
	rs := m.turn(t, "keyring", "", 3*time.Minute, [][]attempt{{read}, {plant}, {next}}...)
	checkLayer(t, m, as, rs, layerOff, "keyring")
}

// channelTerminal: a call opens the controlling terminal and pushes a
// byte into its input.
func channelTerminal(t *testing.T, m modeRun, sessionOff, ioctlsOff bool) {
	open := attempt{name: "opens the operator's terminal (/dev/tty)", tool: "Bash",
		input: pyCall("show('TTY', lambda: os.ttyname(os.open('/dev/tty', os.O_RDWR)))\n"), effect: contains("TTY OK")}
	push := attempt{name: "pushes input into the operator's terminal (TIOCSTI)", tool: "Bash",
		input:  pyCall("import fcntl,termios\ndef f():\n  fd=os.open('/dev/tty', os.O_RDWR)\n  fcntl.ioctl(fd, termios.TIOCSTI, b'#')\n  return 'pushed'\nshow('STI', f)\n"),
		effect: contains("STI OK")}
	rs := m.turn(t, "terminal", "", 3*time.Minute, [][]attempt{{open}, {push}}...)
	for i, a := range []attempt{open, push} {
		r := rs[i]
		if !strings.Contains(r.Content, attemptMarker) {
			t.Errorf("%s: %s: never ran:\n%.1500s", m.name(), a.name, r.Content)
			continue
		}
		// The terminal opens without the new session; the push needs the
		// ioctl filter off too.
		want := sessionOff && (i == 0 || ioctlsOff)
		got := a.effect(r)
		switch {
		case want && !got:
			t.Errorf("%s: %s: not reached with its layers off, so the test proves nothing:\n%.1500s", m.name(), a.name, r.Content)
		case !want && got:
			t.Errorf("%s: %s: ESCAPED:\n%.1500s", m.name(), a.name, r.Content)
		case i == 1 && sessionOff && !ioctlsOff && !strings.Contains(r.Content, "STI ERR PermissionError"):
			t.Errorf("%s: %s: with only new_session off the push must be refused by the ioctl filter (EPERM):\n%.1500s", m.name(), a.name, r.Content)
		default:
			t.Logf("%s: %s: reached %v: %.300s", m.name(), a.name, got, strings.ReplaceAll(r.Content, "\n", " | "))
		}
	}
}

// checkLayer checks attempts that one layer alone stops: with it on,
// each ran and did not reach its effect; with only it off, each did.
func checkLayer(t *testing.T, m modeRun, as []attempt, rs []model.Message, layerOff bool, layer string) {
	t.Helper()
	for i, a := range as {
		r := rs[i]
		if !strings.Contains(r.Content, attemptMarker) {
			t.Errorf("%s: %s: never ran:\n%.1500s", m.name(), a.name, r.Content)
			continue
		}
		got := a.effect(r)
		switch {
		case layerOff && !got:
			t.Errorf("%s: %s: not reached with only %s off, so the test proves nothing:\n%.1500s", m.name(), a.name, layer, r.Content)
		case !layerOff && got:
			t.Errorf("%s: %s: ESCAPED with the sandbox on:\n%.1500s", m.name(), a.name, r.Content)
		default:
			t.Logf("%s: %s: reached %v: %.300s", m.name(), a.name, got, strings.ReplaceAll(r.Content, "\n", " | "))
		}
	}
}
