//go:build !amd64 && !arm64

package child

// No filter is built for other architectures (Filter fails, and so does
// every sandboxed call): their system call numbers and ABIs are not
// checked here.
const (
	auditArch = 0
	x32Bit    = 0
)
