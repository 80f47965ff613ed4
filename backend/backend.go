// Package backend defines where tools run: an execution and file interface
// implemented by the local machine (backend/local), Docker and E2B.
package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/calls"
)

// Errors backends wrap so tools can tell what went wrong.
var (
	// ErrNotExist is wrapped when a path does not exist.
	ErrNotExist = errors.New("file does not exist")
	// ErrUnavailable is wrapped when the workspace itself went away or
	// cannot be reached (a container removed mid-call, a sandbox killed):
	// an infrastructure fault, which tools report as a Go error so the
	// activity's RetryPolicy decides whether to run the call again.
	ErrUnavailable = errors.New("workspace unavailable")
	// ErrTooLarge is wrapped when a file is larger than a read allows
	// (ReadFileLimit).
	ErrTooLarge = errors.New("file too large")
	// ErrNotRegular is wrapped when a path to read or write is not a
	// regular file (a FIFO, a socket, a device), which a file tool
	// refuses: reading one may block forever or never end.
	ErrNotRegular = errors.New("not a regular file")
	// ErrSandbox is wrapped when the call's sandbox profile does not let
	// a file operation touch a path: the same profile its processes
	// hold (what it may write, read, and what is hidden).
	ErrSandbox = errors.New("outside the call's sandbox")
)

// LimitReader is a backend that reads a file without holding more than
// a bound of it in memory: a file larger than max wraps ErrTooLarge, one
// that is not a regular file ErrNotRegular, before anything is read.
type LimitReader interface {
	ReadFileLimit(ctx context.Context, path string, max int64) ([]byte, error)
}

// ReadFileLimit reads path from b, at most max bytes: with b's
// ReadFileLimit when it has one, else after b's Stat shows the file is
// no larger (a file that grew in between is refused after the read).
// A larger file wraps ErrTooLarge.
func ReadFileLimit(ctx context.Context, b Backend, path string, max int64) ([]byte, error) {
	if lr, ok := b.(LimitReader); ok {
		return lr.ReadFileLimit(ctx, path, max)
	}
	fi, err := b.Stat(ctx, path)
	if err != nil {
		return nil, err
	}
	if fi.Size > max {
		return nil, TooLarge(path, fi.Size, max)
	}
	data, err := b.ReadFile(ctx, path)
	if err == nil && int64(len(data)) > max {
		return nil, TooLarge(path, int64(len(data)), max)
	}
	return data, err
}

// TooLarge is the ErrTooLarge error of a file of size bytes read with
// the limit max.
func TooLarge(path string, size, max int64) error {
	return fmt.Errorf("%s is %d bytes, more than the %d a read allows: %w", path, size, max, ErrTooLarge)
}

// Backend runs processes and touches files in one workspace.
// Paths are absolute paths inside the backend, never host paths.
type Backend interface {
	// Name identifies the backend kind ("local", "docker", "e2b").
	Name() string
	// Exec runs argv without a shell. A non-zero exit is not an error;
	// errors mean the process could not be run at all.
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	// ReadFile returns a file's content; a missing file wraps ErrNotExist.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile writes a file, creating parent directories.
	WriteFile(ctx context.Context, path string, data []byte) error
	// Stat describes a path; a missing path wraps ErrNotExist.
	Stat(ctx context.Context, path string) (FileInfo, error)
	// ListDir lists the entries of a directory, sorted by name.
	ListDir(ctx context.Context, path string) ([]FileInfo, error)
	// Home is the home directory of the user tools run as.
	Home(ctx context.Context) (string, error)
}

// ExecRequest describes one process to run.
type ExecRequest struct {
	Argv []string
	// Dir is the working directory; empty means the backend's workdir.
	Dir string
	// Env holds extra KEY=VALUE entries added to the environment.
	Env []string
	// Timeout bounds the run; zero means no bound beyond ctx.
	Timeout time.Duration
	// MaxOutput caps stdout and stderr, each, in bytes; zero means no cap.
	MaxOutput int
	// Stdin, when non-nil, is written to the process's standard input.
	Stdin []byte
}

type sandboxKey struct{}

// WithSandbox returns ctx bound to the call whose sandbox profile is s:
// the one way a call's profile reaches a backend, for every operation
// the call makes (its processes, and its file operations: where a link
// may lead). The activity that runs the call binds it once; a context
// with none gets the backend's default (calls.DefaultSandbox of its
// workdir on the local backend).
func WithSandbox(ctx context.Context, s *calls.Sandbox) context.Context {
	return context.WithValue(ctx, sandboxKey{}, s)
}

// SandboxFrom returns the profile WithSandbox bound to ctx, or nil.
func SandboxFrom(ctx context.Context) *calls.Sandbox {
	s, _ := ctx.Value(sandboxKey{}).(*calls.Sandbox)
	return s
}

// ExecResult is the outcome of a process.
type ExecResult struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	// TimedOut reports that the process was killed at its timeout.
	TimedOut bool
	// Truncated reports that output was cut at MaxOutput.
	Truncated bool
	Duration  time.Duration
	// Connections are the connections the call's processes asked the
	// egress proxy for, in order (local backend, a call with the
	// network).
	Connections []calls.Connection
	// ConnectionsDropped counts the connections past the ones a result
	// keeps (allowed ones first make room for refusals).
	ConnectionsDropped int
	// RefusalsDropped says what was not kept of the refusals ("… and
	// 12,345 more refusals to 3 hosts"), "" when each was kept.
	RefusalsDropped string
	// Limit says which of the call's limits ended it ("memory: the
	// call's processes used the 512 MiB of limits.memory"), "" when
	// none did.
	Limit string
}

// Streamer is implemented by backends that can report a process's output
// while it runs; out receives each piece with its stream (1 stdout,
// 2 stderr). The result is the same as Exec's.
type Streamer interface {
	ExecStream(ctx context.Context, req ExecRequest, out func(stream int, p []byte)) (ExecResult, error)
}

// FileInfo describes one file.
type FileInfo struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
	IsDir   bool      `json:"is_dir"`
}
