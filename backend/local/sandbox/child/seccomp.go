package child

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Channels says which of the channels beyond files, processes and the
// network a process keeps. The zero value keeps none: the process is in
// a session of its own with no controlling terminal, may not push input
// into a terminal, create a unix socket or reach a keyring. Each field
// set is either the call's grant (UnixSockets) or a layer the worker
// turned off (backend.local.sandbox_off), for a test's control.
type Channels struct {
	// Session keeps the process in the worker's session (a process group
	// of its own in it): /dev/tty then opens the worker's terminal
	// ("new_session" off).
	Session bool `json:"session,omitempty"`
	// TTYIoctls lets the process use TIOCSTI and TIOCLINUX on a terminal
	// it holds ("tty_ioctls" off).
	TTYIoctls bool `json:"tty_ioctls,omitempty"`
	// UnixSockets lets the process create AF_UNIX sockets, so reach any
	// pathname socket it can resolve (a grant, or "unix_sockets" off).
	UnixSockets bool `json:"unix_sockets,omitempty"`
	// Keyring keeps the session keyring the process inherits and the
	// keyring system calls ("keyring" off).
	Keyring bool `json:"keyring,omitempty"`
}

// refused are the system calls every tool process is refused (EPERM),
// whatever its Channels: channels to the kernel a tool never needs and
// that no namespace scopes. See docs/permissions.md, "Channels".
func refused() []uintptr {
	return []uintptr{
		unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
		unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
		unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	}
}

// keyringCalls are the keyring system calls (refused unless
// Channels.Keyring): keyrings are not namespaced.
func keyringCalls() []uintptr {
	return []uintptr{unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY}
}

// Offsets in struct seccomp_data: the system call's number, the audit
// architecture, and argument i's low 32 bits (at 16+8i on a
// little-endian machine; amd64 and arm64 both are).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
)

// errno is the seccomp action that fails the system call with e.
func errno(e syscall.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// Filter returns the seccomp program of a process that keeps keep: on
// another architecture than the one the worker was built for, or with
// an x32 system call number, the process is killed; socket(AF_UNIX, ...)
// fails with EACCES unless keep.UnixSockets; ioctl TIOCSTI and TIOCLINUX
// (the command compared on its low 32 bits, as the kernel truncates it)
// with EPERM unless keep.TTYIoctls; keyctl, add_key and request_key with
// EPERM unless keep.Keyring; and the calls of refused always with
// EPERM. Everything else is allowed. socketpair stays allowed: its
// sockets reach nothing outside the pair.
func Filter(keep Channels) ([]unix.SockFilter, error) {
	if auditArch == 0 {
		return nil, errors.New("no seccomp filter for this architecture (amd64 and arm64 only)")
	}
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	allow, kill := ret(unix.SECCOMP_RET_ALLOW), ret(unix.SECCOMP_RET_KILL_PROCESS)

	// The architecture: a system call of another ABI (i386's int 0x80 on
	// amd64) has other numbers, which the checks below would miss.
	p := []unix.SockFilter{ld(offArch), jeq(auditArch, 1, 0), kill, ld(offNr)}
	if x32Bit != 0 {
		// x32 system calls are amd64's numbers with this bit set.
		p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: x32Bit, Jt: 0, Jf: 1}, kill)
	}
	if !keep.UnixSockets {
		// socket(domain, ...): A holds nr until the block, which ends in
		// a return either way.
		p = append(p, jeq(unix.SYS_SOCKET, 0, 4), ld(offArg0), jeq(unix.AF_UNIX, 0, 1), ret(errno(unix.EACCES)), allow)
	}
	if !keep.TTYIoctls {
		p = append(p, jeq(unix.SYS_IOCTL, 0, 5), ld(offArg1), jeq(unix.TIOCSTI, 1, 0), jeq(unix.TIOCLINUX, 0, 1),
			ret(errno(unix.EPERM)), allow)
	}
	deny := refused()
	if !keep.Keyring {
		deny = append(deny, keyringCalls()...)
	}
	for _, nr := range deny {
		p = append(p, jeq(uint32(nr), 0, 1), ret(errno(unix.EPERM)))
	}
	return append(p, allow), nil
}

// program is a filter as seccomp(2) takes it; the filter must stay
// reachable while the program is used.
func program(f []unix.SockFilter) *unix.SockFprog {
	return &unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
}

// installFilter installs prog on the calling thread (no_new_privs must
// be set).
func installFilter(prog *unix.SockFprog) error {
	if _, _, e := syscall.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(prog))); e != 0 {
		return fmt.Errorf("seccomp filter: %w", e)
	}
	return nil
}

// joinSessionKeyring gives the calling thread a new anonymous session
// keyring (keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)); a kernel without
// keyrings has nothing to leave.
func joinSessionKeyring() error {
	_, _, e := syscall.RawSyscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	if e != 0 && e != unix.ENOSYS {
		return fmt.Errorf("join a new session keyring: %w", e)
	}
	return nil
}
