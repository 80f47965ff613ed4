package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/backend/local/sandbox/child"
)

// Request is one process a zygote runs (child.Request).
type Request = child.Request

// Rlimit is one resource limit of a process (child.Rlimit).
type Rlimit = child.Rlimit

// reply is a zygote's answer (child.Reply).
type reply = child.Reply

// Errors of Zygote.Run.
var (
	// ErrNotFound wraps a program that is not in PATH.
	ErrNotFound = errors.New("executable file not found in $PATH")
	// ErrGone means the zygote went away; a process it ran may have run
	// in part.
	ErrGone = errors.New("sandbox: the zygote exited")
)

// Zygote is a long-lived helper that starts sandboxed processes without
// re-executing the worker for each: it is set up once (user, mount, PID
// and IPC namespaces, the hidden paths, checked again before each call),
// and each process it starts is the init of PID, mount, IPC and (unless
// the call has the network) network namespaces of its own, with the
// call's hidden, pinned and protected paths, its own /proc, its own
// Landlock domain, no capabilities and only its standard streams, as
// from Command: everything the call starts ends when that process does.
// It ends when its Close is called or the worker dies, and every process
// it started with it.
type Zygote struct {
	mu   sync.Mutex // one request message at a time
	ctl  *os.File
	pid  int // the zygote's pid in the worker's namespace
	done chan struct{}
	err  error
}

// StartZygote starts a zygote whose processes find hide empty.
func StartZygote(hide []string) (*Zygote, error) { return startZygote(child.ZygoteSpec{Hide: hide}) }

// startZygote starts a zygote of spec (the tests set its Controls).
func startZygote(spec child.ZygoteSpec) (*Zygote, error) {
	b, err := json.Marshal(spec)
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
		z.pid = cmd.Process.Pid
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
	// TmpUsed and TmpFree are the bytes used and left of the call's
	// TMPDIR tmpfs (Request.Tmp) when it ended.
	TmpUsed, TmpFree int64
}

// Run runs req, feeding it stdin and copying its output to stdout and
// stderr (each from one goroutine), until it ends or ctx is done, which
// kills it and everything it started.
func (z *Zygote) Run(ctx context.Context, req Request, stdin []byte, stdout, stderr io.Writer) (Result, error) {
	return z.RunCall(ctx, req, Call{Stdin: stdin, Stdout: stdout, Stderr: stderr})
}

// Call is what one RunCall carries beside its request.
type Call struct {
	Stdin          []byte
	Stdout, Stderr io.Writer
	// Cgroups are the cgroup.procs files (opened for writing) of the
	// call's cgroups: the process joins each before it execs. RunCall
	// sets the request's Cgroups from their number; the caller closes
	// them.
	Cgroups []*os.File
	// Proxy, for a request with Proxy, is called once the process has
	// started with the listener the zygote made in the call's network
	// namespace (127.0.0.1:child.ProxyPort). It serves the call's egress
	// proxy and returns when the listener is closed, which RunCall does
	// once the process has ended; RunCall returns after it.
	Proxy func(net.Listener)
}

// RunCall runs req as Run does, with the call's cgroups and egress
// proxy.
func (z *Zygote) RunCall(ctx context.Context, req Request, call Call) (Result, error) {
	c, err := openCall()
	if err != nil {
		return Result{}, err
	}
	defer c.replies.Close()
	req.Cgroups = len(call.Cgroups)
	if err := z.send(c, req, call.Cgroups); err != nil {
		return Result{}, err
	}
	c.stream(call.Stdin, call.Stdout, call.Stderr)
	defer c.finish()
	ln, err := c.awaitStart(ctx)
	if err != nil {
		return Result{}, err
	}
	if ln != nil {
		served := make(chan struct{})
		go func() {
			defer close(served)
			if call.Proxy != nil {
				call.Proxy(ln)
			}
		}()
		defer func() { ln.Close(); <-served }()
	} else if req.Proxy {
		return Result{}, errors.New("sandbox: the zygote sent no proxy listener")
	}
	return c.awaitExit(ctx)
}

// zcall is one process the zygote runs for Run: the worker's ends of its
// stdin, stdout and stderr pipes and of its reply socket, and the far
// ends that go to the zygote with the request.
type zcall struct {
	inW, outR, errR *os.File
	replies         *os.File
	// far are the zygote's ends: the process's stdin, stdout and stderr
	// and the reply socket, closed here once sent.
	far []*os.File
	// copies are the goroutines copying stdout and stderr.
	copies sync.WaitGroup
}

// openCall makes the pipes and the reply socket of one call.
func openCall() (*zcall, error) {
	var files []*os.File
	fail := func(err error) (*zcall, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	for range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		files = append(files, r, w)
	}
	rs, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	replies, remote := os.NewFile(uintptr(rs[0]), "zygote-reply"), os.NewFile(uintptr(rs[1]), "zygote-reply")
	return &zcall{inW: files[1], outR: files[2], errR: files[4], replies: replies,
		far: []*os.File{files[0], files[3], files[5], remote}}, nil
}

// send hands req and the far ends to the zygote, and closes them here.
func (z *Zygote) send(c *zcall, req Request, extra []*os.File) error {
	defer func() {
		for _, f := range c.far {
			f.Close()
		}
	}()
	msg, err := json.Marshal(req)
	if err == nil {
		fds := make([]int, 0, len(c.far)+len(extra))
		for _, f := range append(slices.Clip(c.far), extra...) {
			fds = append(fds, int(f.Fd()))
		}
		z.mu.Lock()
		err = unix.Sendmsg(int(z.ctl.Fd()), msg, unix.UnixRights(fds...), nil, 0)
		z.mu.Unlock()
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrGone, err)
		}
	}
	if err != nil {
		c.inW.Close()
		c.outR.Close()
		c.errR.Close()
	}
	return err
}

// stream feeds stdin to the process and copies its output, each stream
// from one goroutine.
func (c *zcall) stream(stdin []byte, stdout, stderr io.Writer) {
	c.copies.Add(2)
	go func() { defer c.copies.Done(); _, _ = io.Copy(stdout, c.outR) }()
	go func() { defer c.copies.Done(); _, _ = io.Copy(stderr, c.errR) }()
	go func() {
		if len(stdin) > 0 {
			_, _ = c.inW.Write(stdin)
		}
		c.inW.Close()
	}()
}

// finish waits for the output copies and closes the pipes. Once the
// process is gone its PID namespace is torn down, so every writer of the
// pipes is gone too; a bound stays anyway.
func (c *zcall) finish() {
	done := make(chan struct{})
	go func() { c.copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		c.outR.Close()
		c.errR.Close()
		<-done
	}
	c.outR.Close()
	c.errR.Close()
}

// answer is one reply of the zygote, or why none could be read.
type answer struct {
	r   reply
	fd  int // a descriptor that came with it, -1 for none
	err error
}

// nextReply reads the call's next reply in the background.
func (c *zcall) nextReply() <-chan answer {
	ch := make(chan answer, 1)
	go func() { r, fd, err := readReply(c.replies); ch <- answer{r, fd, err} }()
	return ch
}

// awaitStart waits for the zygote's first reply: the process started,
// or why it did not.
func (c *zcall) awaitStart(ctx context.Context) (net.Listener, error) {
	started := c.nextReply()
	var first answer
	select {
	case first = <-started:
	case <-ctx.Done():
		// Cancelled before the process reported started. "kill" waits in
		// the zygote's queue for the watcher it starts once it has told
		// us (so a start already on its way is killed), and with our
		// reading side shut the zygote cannot tell us, and kills the
		// process itself.
		_ = unix.Sendmsg(int(c.replies.Fd()), []byte("kill"), nil, nil, 0)
		_ = unix.Shutdown(int(c.replies.Fd()), unix.SHUT_RD)
		if a := <-started; a.fd >= 0 {
			unix.Close(a.fd)
		}
		return nil, ctx.Err()
	}
	switch r := first.r; {
	case first.err != nil:
		return nil, fmt.Errorf("%w: %w", ErrGone, first.err)
	case r.NotFound:
		return nil, fmt.Errorf("%w: %s", ErrNotFound, r.Error)
	case r.Error != "":
		return nil, errors.New("sandbox: " + r.Error)
	}
	if first.fd < 0 {
		return nil, nil
	}
	f := os.NewFile(uintptr(first.fd), "egress-proxy")
	defer f.Close() // FileListener holds a copy
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("sandbox: proxy listener: %w", err)
	}
	return ln, nil
}

// awaitExit waits for the zygote's last reply, how the process ended;
// when ctx is done first it asks the zygote to kill the process.
func (c *zcall) awaitExit(ctx context.Context) (Result, error) {
	last := c.nextReply()
	var a answer
	select {
	case a = <-last:
	case <-ctx.Done():
		_ = unix.Sendmsg(int(c.replies.Fd()), []byte("kill"), nil, nil, 0)
		a = <-last
	}
	if a.err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrGone, a.err)
	}
	return Result{ExitCode: a.r.ExitCode, Signal: syscall.Signal(a.r.Signal), TmpUsed: a.r.TmpUsed, TmpFree: a.r.TmpFree}, nil
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
