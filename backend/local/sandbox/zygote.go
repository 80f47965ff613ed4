package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/backend/local/sandbox/child"
)

// Request is one process a zygote runs (child.Request).
type Request = child.Request

// reply is a zygote's answer (child.Reply).
type reply = child.Reply

// Errors of Zygote.Run.
var (
	// ErrSlow means the zygote cannot run the request as asked; run it
	// with Command, which sets up a sandbox of its own.
	ErrSlow = errors.New("sandbox: the request needs a sandbox of its own")
	// ErrNotFound wraps a program that is not in PATH.
	ErrNotFound = errors.New("executable file not found in $PATH")
	// ErrGone means the zygote went away; a process it ran may have run
	// in part.
	ErrGone = errors.New("sandbox: the zygote exited")
)

// Zygote is a long-lived helper that starts sandboxed processes without
// re-executing the worker for each: it is set up once (user, mount, PID
// and IPC namespaces, the hidden paths, a /proc that shows a process
// only the processes of its own call), and each process it starts gets
// its own network namespace, Landlock domain, process group and no
// capabilities, as from Command. It ends when its Close is called or the
// worker dies, and every process it started with it.
type Zygote struct {
	mu   sync.Mutex // one request message at a time
	ctl  *os.File
	done chan struct{}
	err  error
}

// StartZygote starts a zygote whose processes find hide empty.
func StartZygote(hide []string) (*Zygote, error) {
	b, err := json.Marshal(child.ZygoteSpec{Hide: hide})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: control socket: %w", err)
	}
	ctl, remote := os.NewFile(uintptr(fds[0]), "zygote-control"), os.NewFile(uintptr(fds[1]), "zygote-control")
	uid, gid := os.Getuid(), os.Getgid()
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{child.ZygoteName, string(b)}
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{remote}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Setpgid:                    true,
		// The zygote dies with the worker, and every process it started
		// with it (it is their PID namespace's init).
		Pdeathsig: syscall.SIGKILL,
	}
	z := &Zygote{ctl: ctl, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal follows the thread that started the
		// zygote, so that thread lives exactly as long as the zygote.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(z.done)
			return
		}
		started <- nil
		z.err = cmd.Wait()
		close(z.done)
	}()
	err = <-started
	remote.Close()
	if err != nil {
		ctl.Close()
		return nil, fmt.Errorf("sandbox: start zygote: %w", err)
	}
	return z, nil
}

// Alive reports whether the zygote still runs.
func (z *Zygote) Alive() bool {
	select {
	case <-z.done:
		return false
	default:
		return true
	}
}

// Close stops the zygote and, with it, every process it runs.
func (z *Zygote) Close() error {
	err := z.ctl.Close()
	<-z.done
	return err
}

// Result is how a process ended.
type Result struct {
	ExitCode int
	// Signal ended the process (ExitCode is then -1).
	Signal syscall.Signal
}

// Run runs req, feeding it stdin and copying its output to stdout and
// stderr (each from one goroutine), until it ends or ctx is done, which
// kills it and everything it started.
func (z *Zygote) Run(ctx context.Context, req Request, stdin []byte, stdout, stderr io.Writer) (Result, error) {
	var closers []io.Closer
	closeAll := func() {
		for _, c := range closers {
			c.Close()
		}
		closers = nil
	}
	defer closeAll()
	inR, inW, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return Result{}, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return Result{}, err
	}
	rs, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return Result{}, err
	}
	replies, remote := os.NewFile(uintptr(rs[0]), "zygote-reply"), os.NewFile(uintptr(rs[1]), "zygote-reply")
	closers = append(closers, replies)
	msg, err := json.Marshal(req)
	if err != nil {
		return Result{}, err
	}
	z.mu.Lock()
	err = unix.Sendmsg(int(z.ctl.Fd()), msg, unix.UnixRights(int(inR.Fd()), int(outW.Fd()), int(errW.Fd()), int(remote.Fd())), nil, 0)
	z.mu.Unlock()
	inR.Close()
	outW.Close()
	errW.Close()
	remote.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return Result{}, fmt.Errorf("%w: %w", ErrGone, err)
	}
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); _, _ = io.Copy(stdout, outR) }()
	go func() { defer copies.Done(); _, _ = io.Copy(stderr, errR) }()
	go func() {
		if len(stdin) > 0 {
			_, _ = inW.Write(stdin)
		}
		inW.Close()
	}()
	finish := func() {
		// Once the process is gone its PID namespace is torn down, so
		// every writer of the pipes is gone too; a bound stays anyway.
		done := make(chan struct{})
		go func() { copies.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			outR.Close()
			errR.Close()
			<-done
		}
		outR.Close()
		errR.Close()
	}
	type answer struct {
		r   reply
		err error
	}
	started := make(chan answer, 1)
	go func() { r, _, err := readReply(replies); started <- answer{r, err} }()
	var first reply
	select {
	case a := <-started:
		first, err = a.r, a.err
	case <-ctx.Done():
		// Cancelled before the process started: the zygote cannot tell
		// us it started, and then kills it itself.
		_ = unix.Shutdown(int(replies.Fd()), unix.SHUT_RDWR)
		<-started
		finish()
		return Result{}, ctx.Err()
	}
	if err != nil {
		finish()
		return Result{}, fmt.Errorf("%w: %w", ErrGone, err)
	}
	switch {
	case first.Slow:
		finish()
		return Result{}, ErrSlow
	case first.NotFound:
		finish()
		return Result{}, fmt.Errorf("%w: %s", ErrNotFound, first.Error)
	case first.Error != "":
		finish()
		return Result{}, errors.New("sandbox: " + first.Error)
	}
	last := make(chan reply, 1)
	lastErr := make(chan error, 1)
	go func() {
		r, _, err := readReply(replies)
		if err != nil {
			lastErr <- err
			return
		}
		last <- r
	}()
	var r reply
	select {
	case r = <-last:
	case err = <-lastErr:
	case <-ctx.Done():
		_ = unix.Sendmsg(int(replies.Fd()), []byte("kill"), nil, nil, 0)
		select {
		case r = <-last:
		case err = <-lastErr:
		}
	}
	finish()
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrGone, err)
	}
	return Result{ExitCode: r.ExitCode, Signal: syscall.Signal(r.Signal)}, nil
}

// readReply reads one reply and the descriptor attached to it (-1 when
// none).
func readReply(f *os.File) (reply, int, error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(f.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return reply{}, -1, err
	}
	if n == 0 {
		return reply{}, -1, io.EOF
	}
	fd := -1
	if oobn > 0 {
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if fds, err := unix.ParseUnixRights(&m); err == nil && len(fds) > 0 {
					fd = fds[0]
				}
			}
		}
	}
	var r reply
	if err := json.Unmarshal(buf[:n], &r); err != nil {
		return reply{}, -1, fmt.Errorf("bad reply: %w", err)
	}
	return r, fd, nil
}
