package child

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The runtime's fork hooks, as package syscall uses them around its own
// fork: block signals and forbid stack growth before the fork, restore
// them after it (in the child: reset the signal handlers and mask for
// the exec).
//
//go:linkname beforeFork syscall.runtime_BeforeFork
func beforeFork()

//go:linkname afterFork syscall.runtime_AfterFork
func afterFork()

//go:linkname afterForkInChild syscall.runtime_AfterForkInChild
func afterForkInChild()

// forkArgs is everything the forked child needs, prepared before the
// fork: between fork and exec the child may not allocate, grow its stack
// or write a pointer, so it only reads these and makes raw system calls.
type forkArgs struct {
	prog       *byte
	argv, envv []*byte // nil-terminated
	dir        *byte
	stdio      [3]int
	// proc mounts a /proc of the child's own PID namespace (only a process
	// inside the namespace can: procfs takes the mounting process's
	// namespace).
	procSrc, procTarget, procType, procData *byte
	procFlags                               uintptr
	// procRule grants read beneath the new /proc: the child opens it
	// and adds the rule (the /proc the parent sees is the one beneath).
	procRule *unix.LandlockPathBeneathAttr
	// ruleset is the Landlock ruleset the child restricts itself with,
	// after the mount (a Landlock domain may not mount).
	ruleset int
	// keepFDs skips closing the other descriptors (a test's control
	// only).
	keepFDs bool
	// errPipe is the close-on-exec write end the child reports a failed
	// step on: the step and its errno.
	errPipe int
	// cgroups are the cgroup.procs files the child joins (writes "0"
	// to) first, ncgroups of them; zero is the "0".
	cgroups  [maxCgroups]int
	ncgroups int
	zero     *byte
	// rlimits are set on the child before it execs.
	rlimits  [maxRlimits]rlimit
	nrlimits int
	// session makes the child a session of its own (no controlling
	// terminal) rather than only a process group; keyring gives it a new
	// session keyring; filter, when not nil, is the seccomp program it
	// installs last (no_new_privs is set on the forking thread).
	session, keyring bool
	filter           *unix.SockFprog
}

// maxRlimits bounds Request.Rlimits.
const maxRlimits = 8

// rlimit is one resource limit as prlimit64 takes it.
type rlimit struct {
	resource uintptr
	lim      unix.Rlimit
}

// Steps a child reports failing.
const (
	stepMount = iota + 1
	stepPgid
	stepSession
	stepKeyring
	stepSeccomp
	stepDup
	stepCloseRange
	stepChdir
	stepLandlock
	stepExec
	stepCgroup
	stepRlimit
)

// stepNames names the steps for errors.
var stepNames = map[uint32]string{
	stepMount: "mount /proc", stepPgid: "setpgid", stepDup: "stdio", stepCloseRange: "close descriptors",
	stepChdir: "chdir", stepLandlock: "landlock_restrict_self", stepExec: "exec",
	stepCgroup: "join cgroup", stepRlimit: "setrlimit",
	stepSession: "setsid", stepKeyring: "join a new session keyring", stepSeccomp: "seccomp filter",
}

// forkExec forks the calling thread into a process that mounts its
// /proc, takes its standard streams, closes every other descriptor,
// enters its working directory and Landlock domain and execs the
// program. It returns the child's pid (in the caller's PID namespace).
// The caller has put the thread in the namespaces the child is to have
// and dropped what the child must not hold; that thread must not be
// used for anything else afterwards.
//
// Package syscall's ForkExec cannot do this: nothing of ours can run
// between its fork and exec, and the /proc of a new PID namespace can
// only be mounted from inside it.
//
//go:norace
//go:noinline
func forkExec(a *forkArgs) (pid int, step uint32, errno syscall.Errno) {
	// Everything the child uses, read into this frame before the fork.
	prog := uintptr(unsafe.Pointer(a.prog))
	argv := uintptr(unsafe.Pointer(&a.argv[0]))
	envv := uintptr(unsafe.Pointer(&a.envv[0]))
	dir := uintptr(unsafe.Pointer(a.dir))
	in, out, errs := uintptr(a.stdio[0]), uintptr(a.stdio[1]), uintptr(a.stdio[2])
	pSrc, pTarget, pType, pData := uintptr(unsafe.Pointer(a.procSrc)), uintptr(unsafe.Pointer(a.procTarget)),
		uintptr(unsafe.Pointer(a.procType)), uintptr(unsafe.Pointer(a.procData))
	pFlags := a.procFlags
	ruleset, errPipe := uintptr(a.ruleset), uintptr(a.errPipe)
	closeRange := !a.keepFDs
	ruleFD := &a.procRule.Parent_fd
	rule := uintptr(unsafe.Pointer(a.procRule))
	cgroups, ncgroups, zero := &a.cgroups, a.ncgroups, uintptr(unsafe.Pointer(a.zero))
	rlimits, nrlimits := &a.rlimits, a.nrlimits
	session, keyring, filter := a.session, a.keyring, a.filter
	var fd uintptr
	var report [2]uint32
	var r1 uintptr
	var i int

	beforeFork()
	r1, errno = rawVfork(syscall.SYS_CLONE, cloneFlags, 0, 0)
	if errno != 0 || r1 != 0 {
		// The parent, once the child exec'd or exited: it returns at
		// once, using nothing the child, which ran on this frame, may
		// have changed.
		afterFork()
		return int(r1), 0, errno
	}

	// The child: only raw system calls from here on. It joins the call's
	// cgroups first, so that everything it does is counted.
	for i = 0; i < ncgroups; i++ {
		if _, _, errno = syscall.RawSyscall(syscall.SYS_WRITE, uintptr(cgroups[i]), zero, 1); errno != 0 {
			step = stepCgroup
			goto fail
		}
	}
	for i = 0; i < nrlimits; i++ {
		if _, _, errno = syscall.RawSyscall6(unix.SYS_PRLIMIT64, 0, rlimits[i].resource, uintptr(unsafe.Pointer(&rlimits[i].lim)), 0, 0, 0); errno != 0 {
			step = stepRlimit
			goto fail
		}
	}
	if _, _, errno = syscall.RawSyscall6(syscall.SYS_MOUNT, pSrc, pTarget, pType, pFlags, pData, 0); errno != 0 {
		step = stepMount
		goto fail
	}
	if fd, _, errno = syscall.RawSyscall(syscall.SYS_OPEN, pTarget, unix.O_PATH|unix.O_CLOEXEC, 0); errno != 0 {
		step = stepMount
		goto fail
	}
	*ruleFD = int32(fd)
	if _, _, errno = syscall.RawSyscall6(unix.SYS_LANDLOCK_ADD_RULE, ruleset, unix.LANDLOCK_RULE_PATH_BENEATH, rule, 0, 0, 0); errno != 0 {
		step = stepLandlock
		goto fail
	}
	// A session of its own: no controlling terminal, so /dev/tty opens
	// nothing, and a process group whose id is its pid, which the zygote
	// kills when the call ends.
	if session {
		if _, _, errno = syscall.RawSyscall(syscall.SYS_SETSID, 0, 0, 0); errno != 0 {
			step = stepSession
			goto fail
		}
	} else if _, _, errno = syscall.RawSyscall(syscall.SYS_SETPGID, 0, 0, 0); errno != 0 {
		step = stepPgid
		goto fail
	}
	if _, _, errno = syscall.RawSyscall(syscall.SYS_DUP3, in, 0, 0); errno != 0 {
		step = stepDup
		goto fail
	}
	if _, _, errno = syscall.RawSyscall(syscall.SYS_DUP3, out, 1, 0); errno != 0 {
		step = stepDup
		goto fail
	}
	if _, _, errno = syscall.RawSyscall(syscall.SYS_DUP3, errs, 2, 0); errno != 0 {
		step = stepDup
		goto fail
	}
	// Every descriptor but the standard streams closes at the exec: the
	// zygote's control socket, what it inherited, the ruleset and the
	// error pipe (open until the exec, for the report below).
	if closeRange {
		if _, _, errno = syscall.RawSyscall(unix.SYS_CLOSE_RANGE, 3, uintptr(^uint32(0)), unix.CLOSE_RANGE_CLOEXEC); errno != 0 {
			step = stepCloseRange
			goto fail
		}
	}
	if _, _, errno = syscall.RawSyscall(syscall.SYS_CHDIR, dir, 0, 0); errno != 0 {
		step = stepChdir
		goto fail
	}
	if _, _, errno = syscall.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0, 0); errno != 0 {
		step = stepLandlock
		goto fail
	}
	// A fresh session keyring, before the filter refuses keyctl: the
	// worker's (and its user's keys) are out of reach.
	if keyring {
		if _, _, errno = syscall.RawSyscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); errno != 0 && errno != unix.ENOSYS {
			step = stepKeyring
			goto fail
		}
	}
	if filter != nil {
		if _, _, errno = syscall.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(filter))); errno != 0 {
			step = stepSeccomp
			goto fail
		}
	}
	afterForkInChild()
	_, _, errno = syscall.RawSyscall(syscall.SYS_EXECVE, prog, argv, envv)
	step = stepExec

fail:
	report[0], report[1] = step, uint32(errno)
	syscall.RawSyscall(syscall.SYS_WRITE, errPipe, uintptr(unsafe.Pointer(&report[0])), unsafe.Sizeof(report))
	for {
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 126, 0, 0)
	}
}
