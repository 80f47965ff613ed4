package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend/local/sandbox/child"
)

// probeChannels runs a python3 probe through z with keep and returns its
// output. Each attempt prints its marker first.
func probeChannels(t *testing.T, z *Zygote, dir string, keep Channels, script string) string {
	t.Helper()
	var out, errs bytes.Buffer
	res, err := z.Run(context.Background(), Request{Write: []string{dir}, Dir: dir, Argv: []string{"/usr/bin/python3", "-c", script},
		Env: testEnv, Keep: keep}, nil, &out, &errs)
	if err != nil {
		t.Fatal(err)
	}
	s := out.String() + errs.String()
	t.Logf("keep %+v -> exit %d signal %d: %q", keep, res.ExitCode, res.Signal, s)
	return s
}

// TestUnixSocketsRefused: socket(AF_UNIX) fails with EACCES, so a
// listener in a 0700 directory of /tmp is not reached; socketpair works.
// Control: with unix sockets kept (a grant, or the layer off) the
// listener receives the marker.
func TestUnixSocketsRefused(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			got <- line
			c.Close()
		}
	}()
	script := `import socket
a, b = socket.socketpair(); a.send(b"p"); print("PAIR", b.recv(1).decode())
print("TRY-UNIX", flush=True)
try:
    s = socket.socket(socket.AF_UNIX); s.connect("` + sock + `"); s.sendall(b"MARK\n"); s.close(); print("CONNECTED")
except OSError as e:
    print("REFUSED", e.errno)
`
	z := zygoteOf(t, child.ZygoteSpec{})
	out := probeChannels(t, z, dir, Channels{}, script)
	if !strings.Contains(out, "TRY-UNIX") || !strings.Contains(out, "REFUSED 13") || !strings.Contains(out, "PAIR p") {
		t.Errorf("socket(AF_UNIX) not refused with EACCES, or socketpair broken: %q", out)
	}
	select {
	case m := <-got:
		t.Errorf("the listener was reached: %q", m)
	default:
	}
	out = probeChannels(t, z, dir, Channels{UnixSockets: true}, script)
	if !strings.Contains(out, "CONNECTED") || <-got != "MARK\n" {
		t.Errorf("control: with unix sockets kept the listener was not reached: %q", out)
	}
}

// TestKeyringsAndKernelChannelsRefused: keyctl and add_key fail with
// EPERM, and so do bpf, perf_event_open, io_uring_setup and TIOCSTI
// (given with high bits set: compared on its low 32 bits). Control: with
// the keyring and tty ioctls kept, keyctl reads the session keyring (the
// test's) and the ioctl fails with the kernel's own errno, not EPERM.
func TestKeyringsAndKernelChannelsRefused(t *testing.T) {
	dir := t.TempDir()
	script := `import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    print("TRY", name, flush=True)
    r = libc.syscall(nr, *args)
    print(name, r, ctypes.get_errno() if r == -1 else 0, flush=True)
call("keyctl", 250, 0, -3, 0)
call("add_key", 248, b"user", b"warden-probe", b"x", 1, -3)
call("bpf", 321, 0, 0, 0)
call("perf_event_open", 298, 0, 0, -1, -1, 0)
call("io_uring_setup", 425, 1, 0)
call("ioctl_tiocsti_high_bits", 16, 0, 0x5412 | (1 << 32), b"x")
`
	z := zygoteOf(t, child.ZygoteSpec{})
	out := probeChannels(t, z, dir, Channels{}, script)
	for _, name := range []string{"keyctl", "add_key", "bpf", "perf_event_open", "io_uring_setup", "ioctl_tiocsti_high_bits"} {
		if !strings.Contains(out, "TRY "+name) || !strings.Contains(out, name+" -1 1\n") {
			t.Errorf("%s not refused with EPERM: %q", name, out)
		}
	}
	// The control adds no key: the kept session keyring is the test's.
	control := strings.Replace(script, `call("add_key"`, `0 and call("add_key"`, 1)
	out = probeChannels(t, z, dir, Channels{Keyring: true, TTYIoctls: true}, control)
	if !strings.Contains(out, "TRY keyctl") || strings.Contains(out, "keyctl -1") {
		t.Errorf("control: with the keyring kept keyctl still fails: %q", out)
	}
	if !strings.Contains(out, "TRY ioctl_tiocsti_high_bits") || strings.Contains(out, "ioctl_tiocsti_high_bits -1 1\n") {
		t.Errorf("control: with tty ioctls kept TIOCSTI still fails with EPERM: %q", out)
	}
}

// TestNoControllingTerminal: a tool process leads a session of its own,
// so it has no controlling terminal (/dev/tty: ENXIO). Control: kept in
// the zygote's session it is a process group of that session.
func TestNoControllingTerminal(t *testing.T) {
	dir := t.TempDir()
	script := `import os
print("TRY-SESSION", flush=True)
print("LEADER" if os.getsid(0) == os.getpid() else "MEMBER")
`
	z := zygoteOf(t, child.ZygoteSpec{})
	if out := probeChannels(t, z, dir, Channels{}, script); !strings.Contains(out, "TRY-SESSION") || !strings.Contains(out, "LEADER") {
		t.Errorf("a tool process does not lead a session of its own: %q", out)
	}
	if out := probeChannels(t, z, dir, Channels{Session: true}, script); !strings.Contains(out, "MEMBER") {
		t.Errorf("control: kept in the zygote's session it still leads one: %q", out)
	}
	// The one-shot helper too.
	out, err := run(t, Spec{Write: []string{dir}, Dir: dir}, `python3 -c 'import os; print("TRY-SESSION"); print("LEADER" if os.getsid(0) == os.getpid() else "MEMBER")'`)
	if err != nil || !strings.Contains(out, "LEADER") {
		t.Errorf("the helper's tool does not lead a session of its own: %v %q", err, out)
	}
}
