package child

import "golang.org/x/sys/unix"

// auditArch is the architecture a tool's system calls must be made in;
// arm64 has no second ABI of the same architecture (x32Bit 0).
const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0
)
