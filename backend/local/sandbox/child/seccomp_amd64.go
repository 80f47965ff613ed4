package child

import "golang.org/x/sys/unix"

// auditArch is the architecture a tool's system calls must be made in;
// x32Bit marks the x32 ABI's numbers.
const (
	auditArch = unix.AUDIT_ARCH_X86_64
	x32Bit    = 0x40000000
)
