//go:build !amd64 && !arm64

package child

import "syscall"

// cloneFlags fork a copy of the zygote: without the assembly entry that
// keeps the return address out of the shared stack, no vfork.
const cloneFlags = uintptr(syscall.SIGCHLD)

// rawVfork makes a clone system call.
func rawVfork(trap, a1, a2, a3 uintptr) (r1 uintptr, err syscall.Errno) {
	r1, _, err = syscall.RawSyscall6(trap, a1, a2, a3, 0, 0, 0)
	return r1, err
}
