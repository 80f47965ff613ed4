//go:build amd64 || arm64

package child

import "syscall"

// cloneFlags fork the child sharing the zygote's memory until it execs
// (as package syscall's ForkExec does): no copy of the address space,
// and no copy-on-write faults in the zygote afterwards.
const cloneFlags = syscall.CLONE_VM | syscall.CLONE_VFORK | uintptr(syscall.SIGCHLD)

// rawVfork makes a clone system call whose child may run on the
// caller's stack (vfork_*.s).
func rawVfork(trap, a1, a2, a3 uintptr) (r1 uintptr, err syscall.Errno)
