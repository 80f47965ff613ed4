package child

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// ZygoteName is the argv[0] that makes a binary act as the zygote: a
// long-lived helper, set up once (namespaces, hidden paths, its own
// /proc), that starts each tool process already sandboxed. It saves the
// worker from re-executing its own 300 MB binary for every call.
const ZygoteName = "warden-sandbox-zygote"

// ZygoteSpec is what a zygote is started with: the paths every process
// it starts finds empty.
type ZygoteSpec struct {
	Hide []string `json:"hide,omitempty"`
}

// Request asks a zygote for one process. It travels as one message on
// the zygote's control socket, with four descriptors: stdin, stdout,
// stderr and the socket the replies come back on.
type Request struct {
	Write   []string `json:"write,omitempty"`
	Protect []string `json:"protect,omitempty"`
	// Hide, Pin and Read are as in Spec, for this process only (the
	// zygote's own hidden paths apply to every process).
	Hide    []string `json:"hide,omitempty"`
	Pin     []string `json:"pin,omitempty"`
	Read    []string `json:"read,omitempty"`
	Network bool     `json:"network,omitempty"`
	Dir     string   `json:"dir"`
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
}

// Reply is a zygote's answer: first Started or an error, then, once the
// process has exited, Exited. Any message the worker sends on the reply
// socket in between kills the process's group.
type Reply struct {
	Started bool   `json:"started,omitempty"`
	Error   string `json:"error,omitempty"`
	// NotFound says the program is not in PATH (exit code 127).
	NotFound bool `json:"not_found,omitempty"`
	// Slow says the zygote cannot run this request as asked (its mounts
	// protect a path the request may write): run it with a helper.
	Slow     bool `json:"slow,omitempty"`
	Exited   bool `json:"exited,omitempty"`
	ExitCode int  `json:"exit_code,omitempty"`
	// Signal is the signal that ended the process, 0 if it exited.
	Signal int `json:"signal,omitempty"`
}

// ControlFD is the zygote's control socket (its first extra file).
const ControlFD = 3

// zygote serves requests until its control socket closes.
func zygote(arg string) error {
	var spec ZygoteSpec
	if err := json.Unmarshal([]byte(arg), &spec); err != nil {
		return fmt.Errorf("bad spec: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("private mounts: %w", err)
	}
	for _, p := range spec.Hide {
		if err := hide(p); err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
	}
	// Each process is in its own Landlock domain, and hidepid hides the
	// entries of processes a process may not ptrace: those of the other
	// calls, and of the zygote.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "hidepid=2"); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	z := &zygoteState{protected: map[string]bool{}}
	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(ControlFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil {
			return fmt.Errorf("control socket: %w", err)
		}
		if n == 0 {
			return nil // the worker closed it: its processes die with us
		}
		fds, err := rights(oob[:oobn])
		if err != nil || len(fds) != 4 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			continue
		}
		var req Request
		if err := json.Unmarshal(buf[:n], &req); err != nil {
			_ = reply(fds[3], Reply{Error: "bad request: " + err.Error()}, -1)
			closeAll(fds)
			continue
		}
		go z.serve(req, fds)
	}
}

type zygoteState struct {
	mu sync.Mutex
	// protected are the paths made read-only in the zygote's mount
	// namespace so far (for every later process too).
	protected map[string]bool
}

func rights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		f, err := unix.ParseUnixRights(&m)
		if err != nil {
			return fds, err
		}
		fds = append(fds, f...)
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// reply sends r on sock, with fd attached when it is not negative.
func reply(sock int, r Reply, fd int) error {
	b, _ := json.Marshal(r)
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	return unix.Sendmsg(sock, b, oob, nil, 0)
}

// serve starts one process, reports it started, waits for it and
// reports how it ended.
func (z *zygoteState) serve(req Request, fds []int) {
	sock := fds[3]
	defer unix.Close(sock)
	if slow, err := z.protect(req); err != nil || slow {
		closeAll(fds[:3])
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		_ = reply(sock, Reply{Slow: slow, Error: msg}, -1)
		return
	}
	type started struct {
		pid int
		err error
	}
	ch := make(chan started, 1)
	go func() {
		// This thread takes the process's restrictions and is never
		// given back: it ends with this goroutine.
		runtime.LockOSThread()
		pid, err := spawn(req, fds[:3])
		ch <- started{pid, err}
	}()
	s := <-ch
	closeAll(fds[:3])
	if s.err != nil {
		var nf *notFound
		_ = reply(sock, Reply{Error: s.err.Error(), NotFound: errors.As(s.err, &nf)}, -1)
		return
	}
	if err := reply(sock, Reply{Started: true}, -1); err != nil {
		// The worker stopped waiting (its call was cancelled): nobody
		// would see the process end, so it does not run on.
		_ = syscall.Kill(-s.pid, syscall.SIGKILL)
	}
	go func() {
		// A message from the worker (a timeout, a cancellation) kills the
		// process and everything it started in its group.
		buf := make([]byte, 16)
		if n, _, _, _, err := unix.Recvmsg(sock, buf, nil, 0); err == nil && n > 0 {
			_ = syscall.Kill(-s.pid, syscall.SIGKILL)
		}
	}()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(s.pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	// What it left behind in its group goes with it.
	_ = syscall.Kill(-s.pid, syscall.SIGKILL)
	r := Reply{Exited: true, ExitCode: ws.ExitStatus()}
	if ws.Signaled() {
		r.ExitCode, r.Signal = -1, int(ws.Signal())
	}
	_ = reply(sock, r, -1)
}

// protect makes the request's Protect paths read-only in the zygote's
// mount namespace. It reports slow when an earlier request protected a
// path this one may write (a rule granted it): that needs a mount
// namespace of its own.
func (z *zygoteState) protect(req Request) (slow bool, err error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	want := map[string]bool{}
	for _, p := range req.Protect {
		want[p] = true
	}
	for p := range z.protected {
		if want[p] {
			continue
		}
		for _, w := range req.Write {
			if within(p, w) {
				return true, nil
			}
		}
	}
	for _, p := range req.Protect {
		if z.protected[p] {
			continue
		}
		if _, err := os.Lstat(p); err != nil {
			continue // nothing to protect yet
		}
		if err := readOnly(p); err != nil {
			return false, fmt.Errorf("protect %s: %w", p, err)
		}
		z.protected[p] = true
	}
	return false, nil
}

func within(p, dir string) bool {
	return p == dir || dir == "/" || (len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/')
}

// spawn runs on a locked thread: it gives the thread the process's
// network namespace and restrictions, then forks the process from it
// (a child inherits the forking thread's namespaces and credentials).
func spawn(req Request, stdio []int) (pid int, err error) {
	if len(req.Argv) == 0 {
		return 0, errors.New("empty argv")
	}
	prog, err := lookPathIn(req.Argv[0], req.Env)
	if err != nil {
		return 0, err
	}
	if !req.Network {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return 0, fmt.Errorf("network namespace: %w", err)
		}
		if err := loopbackUp(); err != nil {
			return 0, fmt.Errorf("loopback: %w", err)
		}
	}
	if err := dropCapabilities(); err != nil {
		return 0, err
	}
	if err := landlock(Spec{Write: req.Write}); err != nil {
		return 0, err
	}
	attr := &syscall.ProcAttr{
		Dir:   req.Dir,
		Env:   req.Env,
		Files: []uintptr{uintptr(stdio[0]), uintptr(stdio[1]), uintptr(stdio[2])},
		// Its own process group: when it ends, or is killed, the group
		// goes with it.
		Sys: &syscall.SysProcAttr{Setpgid: true},
	}
	pid, err = syscall.ForkExec(prog, req.Argv, attr)
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", prog, err)
	}
	return pid, nil
}

// lookPathIn is lookPath with the PATH of env.
func lookPathIn(name string, env []string) (string, error) {
	path := ""
	for _, kv := range env {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			path = kv[5:]
		}
	}
	return lookPathList(name, path)
}
