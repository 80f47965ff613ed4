package child

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
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
	// Controls turns named protections off, for the controls of the
	// sandbox's own tests (which show that an attempt the sandbox stops
	// succeeds without it); package sandbox sets it only there:
	// "inherited-fds" keeps the descriptors the zygote inherited and
	// passes them on, "shared-pid" runs every process in the zygote's PID
	// namespace, "proc-gid0" mounts /proc with procfs's default exempt
	// group, "read-root" grants read on the whole file system, "no-rehide"
	// hides the zygote's paths only once, at its start.
	Controls []string `json:"controls,omitempty"`
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
	// Proxy gives the process a network namespace of its own (loopback
	// only) in which the zygote listens on 127.0.0.1:ProxyPort before the
	// process starts; the listener comes back with the Started reply, and
	// the worker serves the call's egress proxy on it.
	Proxy bool `json:"proxy,omitempty"`
	// Cgroups is the number of descriptors after the four that are
	// cgroup.procs files of the call's cgroups (one per hierarchy),
	// opened for writing by the worker: the process joins each before it
	// execs, so everything it starts is counted from its first
	// instruction.
	Cgroups int `json:"cgroups,omitempty"`
	// Rlimits are set on the process before it execs.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// Tmp, when set, is covered in the call's mount namespace by a tmpfs
	// of TmpSize bytes (its private TMPDIR).
	Tmp     string   `json:"tmp,omitempty"`
	TmpSize int64    `json:"tmp_size,omitempty"`
	Dir     string   `json:"dir"`
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
	// Keep is as in Spec: the channels the process keeps.
	Keep Channels `json:"keep,omitempty"`
}

// Rlimit is one resource limit (unix.RLIMIT_*) of a process.
type Rlimit struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// ProxyPort is the port of the egress proxy inside a call's network
// namespace (the port squid made the custom for one).
const ProxyPort = 3128

// Reply is a zygote's answer: first Started or an error, then, once the
// process has exited, Exited. Any message the worker sends on the reply
// socket in between kills the process's group.
type Reply struct {
	Started bool   `json:"started,omitempty"`
	Error   string `json:"error,omitempty"`
	// NotFound says the program is not in PATH (exit code 127).
	NotFound bool `json:"not_found,omitempty"`
	Exited   bool `json:"exited,omitempty"`
	ExitCode int  `json:"exit_code,omitempty"`
	// Signal is the signal that ended the process, 0 if it exited.
	Signal int `json:"signal,omitempty"`
	// TmpUsed is the bytes used of the call's TMPDIR tmpfs (Request.Tmp)
	// when the process ended, and TmpFree what was left of it.
	TmpUsed int64 `json:"tmp_used,omitempty"`
	TmpFree int64 `json:"tmp_free,omitempty"`
}

// ControlFD is the zygote's control socket (its first extra file).
const ControlFD = 3

// maxCgroups bounds Request.Cgroups (cgroup v1 has one hierarchy per
// controller).
const maxCgroups = 8

// zygote serves requests until its control socket closes.
func zygote(arg string) error {
	var spec ZygoteSpec
	if err := json.Unmarshal([]byte(arg), &spec); err != nil {
		return fmt.Errorf("bad spec: %w", err)
	}
	z := &zygoteState{hides: make([]hidden, len(spec.Hide)), reads: readCache{roots: WalkedRoots()}, controls: map[string]bool{},
		spares: make(chan spare, 1)}
	for _, c := range spec.Controls {
		z.controls[c] = true
	}
	if !z.controls["inherited-fds"] {
		if err := closeInherited(); err != nil {
			return err
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("private mounts: %w", err)
	}
	for i, p := range spec.Hide {
		z.hides[i].path = p
	}
	if err := z.rehide(); err != nil {
		return err
	}
	if err := unix.Mount("proc", "/proc", "proc", procFlags, z.procOptions()); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if _, release, err := z.reads.get(); err != nil {
		return err
	} else {
		release()
	}
	z.prepareSpare()
	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(4*(4+maxCgroups)))
	for {
		n, oobn, _, _, err := unix.Recvmsg(ControlFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil {
			return fmt.Errorf("control socket: %w", err)
		}
		if n == 0 {
			return nil // the worker closed it: its processes die with us
		}
		fds, err := rights(oob[:oobn])
		if err != nil || len(fds) < 4 {
			closeAll(fds)
			continue
		}
		var req Request
		if err := json.Unmarshal(buf[:n], &req); err != nil || req.Cgroups != len(fds)-4 {
			msg := fmt.Sprintf("bad request: %d descriptors for %d cgroups", len(fds), req.Cgroups)
			if err != nil {
				msg = "bad request: " + err.Error()
			}
			_ = reply(fds[3], Reply{Error: msg}, -1)
			closeAll(fds)
			continue
		}
		go z.serve(req, fds)
	}
}

// closeInherited makes the control socket close-on-exec and closes
// every other descriptor the zygote inherited (the worker's own
// inherited descriptors that lack close-on-exec pass through its exec:
// a pipe at 251, say). Descriptors the runtime opened are close-on-exec
// and stay.
func closeInherited() error {
	if _, err := unix.FcntlInt(ControlFD, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list descriptors: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("list descriptors: %w", err)
	}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd <= ControlFD {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			unix.Close(fd)
		}
	}
	return nil
}

type zygoteState struct {
	// mu serialises the mounts in the zygote's own namespace (re-hiding).
	mu sync.Mutex
	// hides are the zygote's hidden paths and how each is covered.
	hides []hidden
	// gen counts the times rehide covered a path: a spare's mount
	// namespace is a copy of an older generation's.
	gen atomic.Uint64
	// spares holds at most one spare; preparing says one is being made.
	spares    chan spare
	preparing atomic.Bool
	// reads is the walk of the walked roots.
	reads    readCache
	controls map[string]bool
}

// hidden is one of the zygote's hidden paths and the cover on it: the
// device of the tmpfs over a directory, or /dev/null's (a file).
type hidden struct {
	path  string
	cover uint64 // st_dev of the tmpfs, 0 when not covered yet
}

func (z *zygoteState) procOptions() string {
	if z.controls["proc-gid0"] {
		return "hidepid=2"
	}
	return procOptions
}

// rehide covers each hidden path that is not covered (any more): one
// created since the zygote started, or replaced on the host by rename
// (the kernel detaches the mount on the old file).
func (z *zygoteState) rehide() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	var null unix.Stat_t
	if err := unix.Stat("/dev/null", &null); err != nil {
		return fmt.Errorf("stat /dev/null: %w", err)
	}
	for i := range z.hides {
		h := &z.hides[i]
		var st unix.Stat_t
		if err := unix.Lstat(h.path, &st); err != nil {
			if missing(err) {
				continue
			}
			return fmt.Errorf("hide %s: %w", h.path, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			continue
		case unix.S_IFDIR:
			if h.cover != 0 && st.Dev == h.cover {
				continue
			}
		default:
			if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == null.Rdev {
				continue
			}
		}
		covered, err := hide(h.path)
		if err != nil {
			return fmt.Errorf("hide %s: %w", h.path, err)
		}
		if covered {
			z.gen.Add(1)
		}
		if covered && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			var cst unix.Stat_t
			if err := unix.Stat(h.path, &cst); err != nil {
				return fmt.Errorf("hide %s: %w", h.path, err)
			}
			h.cover = cst.Dev
		}
	}
	return nil
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
	defer closeAll(fds[4:]) // the cgroup.procs files, joined by then
	if !z.controls["no-rehide"] {
		if err := z.rehide(); err != nil {
			closeAll(fds[:3])
			_ = reply(sock, Reply{Error: err.Error()}, -1)
			return
		}
	}
	ch := make(chan started, 1)
	// The spawning thread holds the call's namespaces until the call is
	// answered: the last reference tears the mount namespace down, and
	// that is better done after the answer than on the tool's exit path.
	hold := make(chan struct{})
	defer close(hold)
	if sp, ok := z.takeSpare(req); ok {
		sp.jobs <- job{req, fds, ch, hold}
	} else {
		go func() {
			// This thread takes the process's namespaces and restrictions
			// and is never given back: it ends with this goroutine.
			runtime.LockOSThread()
			pid, lfd, tfd, err := z.spawn(req, fds, false, nil)
			ch <- started{pid, lfd, tfd, err}
			<-hold
		}()
	}
	s := <-ch
	closeAll(fds[:3])
	if s.listener >= 0 {
		defer unix.Close(s.listener)
	}
	if s.tmp >= 0 {
		defer unix.Close(s.tmp)
	}
	// The next call's spare is made while this one runs, not while it
	// starts.
	z.prepareSpare()
	if s.err != nil {
		var nf *notFound
		_ = reply(sock, Reply{Error: s.err.Error(), NotFound: errors.As(s.err, &nf)}, -1)
		return
	}
	// The process is the init of its own PID namespace: killing it kills
	// everything the call started, however it detached (a new session, a
	// double fork), and so does its end.
	kill := func() { _ = syscall.Kill(s.pid, syscall.SIGKILL); _ = syscall.Kill(-s.pid, syscall.SIGKILL) }
	if err := reply(sock, Reply{Started: true}, s.listener); err != nil {
		// The worker stopped waiting (its call was cancelled): nobody
		// would see the process end, so it does not run on.
		kill()
	}
	// A message from the worker (a timeout, a cancellation) kills the
	// process and everything it started. The reader is done before sock
	// is closed: a reader still on its way to Recvmsg would otherwise read
	// the socket of a later call that got the same descriptor number, and
	// take that call's kill.
	watched := make(chan struct{})
	defer func() {
		_ = unix.Shutdown(sock, unix.SHUT_RD)
		<-watched
	}()
	go func() {
		defer close(watched)
		buf := make([]byte, 16)
		if n, _, _, _, err := unix.Recvmsg(sock, buf, nil, 0); err == nil && n > 0 {
			kill()
		}
	}()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(s.pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	// What it left behind in its group goes with it (its namespace, too,
	// is gone with it unless "shared-pid").
	_ = syscall.Kill(-s.pid, syscall.SIGKILL)
	r := Reply{Exited: true, ExitCode: ws.ExitStatus()}
	var st unix.Statfs_t
	if s.tmp >= 0 && unix.Fstatfs(s.tmp, &st) == nil {
		r.TmpUsed, r.TmpFree = int64(st.Blocks-st.Bfree)*st.Bsize, int64(st.Bavail)*st.Bsize
	}
	if ws.Signaled() {
		r.ExitCode, r.Signal = -1, int(ws.Signal())
	}
	_ = reply(sock, r, -1)
}

// spawn runs on a locked thread that it spends: it gives the thread the
// call's namespaces (PID, mount, IPC and, unless the call has the
// network, network), applies the call's hidden, pinned and protected
// paths in the new mount namespace, drops the capabilities, and forks
// the process from it (a child inherits the forking thread's namespaces
// and credentials), which mounts its own /proc, enters its Landlock
// domain and execs.
//
// entered says the thread is in the call's namespaces already (a spare).
// base, when not nil, is a base ruleset made ahead (a spare's), used
// when the walk it was made from is still current.
//
// tmp is a descriptor of the call's TMPDIR tmpfs (Request.Tmp), -1 for
// none: its usage is read when the process ends.
func (z *zygoteState) spawn(req Request, fds []int, entered bool, base *baseRules) (pid, listener, tmp int, err error) {
	listener, tmp = -1, -1
	defer func() {
		if err != nil && listener >= 0 {
			unix.Close(listener)
			listener = -1
		}
		if err != nil && tmp >= 0 {
			unix.Close(tmp)
			tmp = -1
		}
	}()
	pid, err = z.spawnIn(req, fds, entered, base, &listener, &tmp)
	return pid, listener, tmp, err
}

// spawnIn is spawn; it sets *listener to the proxy's listener once made,
// and *tmp to the TMPDIR tmpfs.
func (z *zygoteState) spawnIn(req Request, fds []int, entered bool, base *baseRules, listener, tmp *int) (pid int, err error) {
	stdio := fds[:3]
	if len(req.Argv) == 0 {
		return 0, errors.New("empty argv")
	}
	prog, err := lookPathIn(req.Argv[0], req.Env)
	if err != nil {
		return 0, err
	}
	if !entered {
		if err := z.enter(req.Network && !req.Proxy); err != nil {
			return 0, err
		}
	}
	if req.Proxy {
		if *listener, err = proxyListener(); err != nil {
			return 0, fmt.Errorf("egress proxy: %w", err)
		}
	}
	if len(req.Rlimits) > maxRlimits {
		return 0, fmt.Errorf("%d rlimits, at most %d", len(req.Rlimits), maxRlimits)
	}
	if err := callMounts(req.Hide, req.Pin, req.Protect); err != nil {
		return 0, err
	}
	if req.Tmp != "" {
		if *tmp, err = tmpMount(req.Tmp, req.TmpSize); err != nil {
			return 0, err
		}
	}
	walked, release, err := z.reads.get()
	if err != nil {
		return 0, err
	}
	rfd := -1
	if base != nil && base.walk == walked {
		rfd, base.rfd = base.rfd, -1
	} else if rfd, err = baseRuleset(walked, z.controls["read-root"], true); err != nil {
		release()
		return 0, err
	}
	release()
	defer unix.Close(rfd)
	if err := callRules(rfd, Spec{Write: req.Write, Read: req.Read}); err != nil {
		return 0, err
	}
	if err := dropCapabilities(); err != nil {
		return 0, err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("no_new_privs: %w", err)
	}
	filter, err := Filter(req.Keep)
	if err != nil {
		return 0, err
	}
	a := &forkArgs{ruleset: rfd, procFlags: procFlags, procRule: &unix.LandlockPathBeneathAttr{Allowed_access: fsRead},
		session: !req.Keep.Session, keyring: !req.Keep.Keyring, filter: program(filter)}
	if a.prog, err = syscall.BytePtrFromString(prog); err != nil {
		return 0, err
	}
	if a.argv, err = syscall.SlicePtrFromStrings(req.Argv); err != nil {
		return 0, err
	}
	if a.envv, err = syscall.SlicePtrFromStrings(req.Env); err != nil {
		return 0, err
	}
	if a.dir, err = syscall.BytePtrFromString(req.Dir); err != nil {
		return 0, err
	}
	if a.procData, err = syscall.BytePtrFromString(z.procOptions()); err != nil {
		return 0, err
	}
	a.procSrc, a.procTarget, a.procType = &[]byte("proc\x00")[0], &[]byte("/proc\x00")[0], &[]byte("proc\x00")[0]
	a.stdio = [3]int{stdio[0], stdio[1], stdio[2]}
	a.keepFDs = z.controls["inherited-fds"]
	a.ncgroups = copy(a.cgroups[:], fds[4:])
	a.zero = &[]byte("0")[0]
	for i, r := range req.Rlimits {
		a.rlimits[i] = rlimit{uintptr(r.Resource), unix.Rlimit{Cur: r.Cur, Max: r.Max}}
	}
	a.nrlimits = len(req.Rlimits)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return 0, fmt.Errorf("pipe: %w", err)
	}
	a.errPipe = p[1]
	pid, _, errno := forkExec(a)
	unix.Close(p[1])
	defer unix.Close(p[0])
	runtime.KeepAlive(a)
	runtime.KeepAlive(filter)
	if errno != 0 {
		return 0, fmt.Errorf("fork: %w", errno)
	}
	var report [8]byte
	n, _ := readFull(p[0], report[:])
	if n == 0 {
		return pid, nil // the exec closed the pipe: it runs
	}
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &ws, 0, nil)
	step := binary.NativeEndian.Uint32(report[0:4])
	errno = syscall.Errno(binary.NativeEndian.Uint32(report[4:8]))
	if step == stepExec {
		return 0, fmt.Errorf("start %s: %w", prog, errno)
	}
	return 0, fmt.Errorf("sandbox %s: %w", stepNames[step], errno)
}

// started is how starting a process went; listener is the proxy's
// listener of a Proxy request, tmp the TMPDIR tmpfs (-1 for none).
type started struct {
	pid      int
	listener int
	tmp      int
	err      error
}

// tmpMount covers dir, in the calling thread's mount namespace (a
// call's own), with a tmpfs of size bytes, and returns a descriptor of
// it for statfs.
func tmpMount(dir string, size int64) (int, error) {
	opts := "mode=0700"
	if size > 0 {
		opts += fmt.Sprintf(",size=%d", size)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return -1, fmt.Errorf("tmpfs on %s: %w", dir, err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("tmpfs on %s: %w", dir, err)
	}
	return fd, nil
}

// proxyListener listens on 127.0.0.1:ProxyPort in the calling thread's
// network namespace (a call's own).
func proxyListener() (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: ProxyPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// enter gives the calling (locked, spent) thread the namespaces of a
// call: PID, mount, IPC and, unless network, network with its loopback
// up.
func (z *zygoteState) enter(network bool) error {
	flags := unix.CLONE_NEWNS | unix.CLONE_NEWIPC
	if !z.controls["shared-pid"] {
		flags |= unix.CLONE_NEWPID
	}
	if !network {
		flags |= unix.CLONE_NEWNET
	}
	if err := unix.Unshare(flags); err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	if !network {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("loopback: %w", err)
		}
	}
	return nil
}

// A spare is a thread that entered a call's namespaces (without the
// network) ahead of the call, so that a call does not wait for them (a
// network namespace takes most of a millisecond): it serves one job and
// ends. gen is the zygote's hide generation when its mount namespace was
// copied: a spare made before a hidden path was covered again is not
// used.
type spare struct {
	jobs chan job
	gen  uint64
}

// baseRules is a base ruleset made ahead, and the walk it was made of.
type baseRules struct {
	walk *Readable
	rfd  int
}

// close releases the ruleset unless it was used.
func (b *baseRules) close() {
	if b != nil && b.rfd >= 0 {
		unix.Close(b.rfd)
		b.rfd = -1
	}
}

// job is a request handed to a spare.
type job struct {
	req Request
	// fds are the request's descriptors: stdio, the reply socket, the
	// cgroup.procs files.
	fds  []int
	done chan started
	// hold is closed once the call is answered.
	hold chan struct{}
}

// prepareSpare makes a spare, unless one waits or is being made.
func (z *zygoteState) prepareSpare() {
	if len(z.spares) > 0 || !z.preparing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		runtime.LockOSThread() // spent: ends with this goroutine
		gen := z.gen.Load()
		err := z.enter(false)
		if err != nil {
			z.preparing.Store(false)
			return // no spare: calls enter their namespaces themselves
		}
		var base *baseRules
		if walked, release, err := z.reads.get(); err == nil {
			if rfd, err := baseRuleset(walked, z.controls["read-root"], true); err == nil {
				base = &baseRules{walk: walked, rfd: rfd}
			}
			release()
		}
		sp := spare{jobs: make(chan job), gen: gen}
		select {
		case z.spares <- sp:
			z.preparing.Store(false)
		default:
			z.preparing.Store(false)
			base.close()
			return
		}
		j, ok := <-sp.jobs
		if !ok {
			base.close()
			return
		}
		pid, lfd, tfd, err := z.spawn(j.req, j.fds, true, base)
		base.close()
		j.done <- started{pid, lfd, tfd, err}
		<-j.hold
	}()
}

// takeSpare returns a spare for req, if one waits and is current.
func (z *zygoteState) takeSpare(req Request) (spare, bool) {
	if req.Network {
		return spare{}, false
	}
	select {
	case sp := <-z.spares:
		if sp.gen != z.gen.Load() {
			close(sp.jobs)
			return spare{}, false
		}
		return sp, true
	default:
		return spare{}, false
	}
}

// readFull reads into b until it is full or the pipe ends.
func readFull(fd int, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Read(fd, b[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || m == 0 {
			return n, err
		}
		n += m
	}
	return n, nil
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
