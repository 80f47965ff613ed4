package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// probeChannels runs a python3 probe through a zygote with keep and
// returns its output. Each attempt prints its marker first.
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
	script := `import socket, sys
a, b = socket.socketpair(); a.send(b"p"); print("PAIR", b.recv(1).decode())
print("TRY-UNIX", flush=True)
try:
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1] if len(sys.argv) > 1 else "` + sock + `"); s.sendall(b"MARK\n"); s.close(); print("CONNECTED")
except OSError as e:
    print("REFUSED", e.errno)
`
	z := zygoteOf(t, ZygoteSpecForTest())
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

// TestKeyringsAndKernelChannelsRefused: keyctl, add_key and request_key
// fail with EPERM, and so do bpf, perf_event_open, userfaultfd and
// io_uring_setup; the process has a session keyring of its own. Control:
// with the keyring kept the process's session keyring is the test's,
// and keyctl works.
func TestKeyringsAndKernelChannelsRefused(t *testing.T) {
	dir := t.TempDir()
	script := `import ctypes, os
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
	z := zygoteOf(t, ZygoteSpecForTest())
	out := probeChannels(t, z, dir, Channels{}, script)
	for _, name := range []string{"keyctl", "add_key", "bpf", "perf_event_open", "io_uring_setup", "ioctl_tiocsti_high_bits"} {
		if !strings.Contains(out, "TRY "+name) || !strings.Contains(out, name+" -1 1\n") {
			t.Errorf("%s not refused with EPERM: %q", name, out)
		}
	}
	out = probeChannels(t, z, dir, Channels{Keyring: true, TTYIoctls: true}, script)
	if strings.Contains(out, "keyctl -1") || strings.Contains(out, "add_key -1 1\n") {
		t.Errorf("control: with the keyring kept keyctl still fails: %q", out)
	}
	if strings.Contains(out, "ioctl_tiocsti_high_bits -1 1\n") {
		t.Errorf("control: with tty ioctls kept TIOCSTI still fails with EPERM: %q", out)
	}
}
