// Package local runs tools on the worker's own machine.
package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/wardenhq/warden/backend"
)

// Backend is the local machine. Its zero value runs in the worker's
// current directory.
type Backend struct {
	// Workdir is the default working directory for Exec.
	Workdir string
	// Env holds resolved backend.env entries (NAME=value, see
	// backend.ResolveEnv) added to every process's environment. A process
	// gets only backend.BaseEnvNames of the worker's own environment,
	// then these, then the request's entries.
	Env []string
}

// New returns a local backend whose default working directory is workdir.
func New(workdir string) *Backend { return &Backend{Workdir: workdir} }

// Name implements backend.Backend.
func (b *Backend) Name() string { return "local" }

// Exec implements backend.Backend. The process runs in its own process
// group, so a timeout or cancellation kills its children too.
func (b *Backend) Exec(ctx context.Context, req backend.ExecRequest) (backend.ExecResult, error) {
	return b.ExecStream(ctx, req, nil)
}

// ExecStream implements backend.Streamer: like Exec, and out (when not
// nil) sees the output as it is produced.
func (b *Backend) ExecStream(ctx context.Context, req backend.ExecRequest, out func(stream int, p []byte)) (backend.ExecResult, error) {
	if len(req.Argv) == 0 {
		return backend.ExecResult{}, errors.New("local exec: empty argv")
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, req.Argv[0], req.Argv[1:]...)
	cmd.Dir = req.Dir
	if cmd.Dir == "" {
		cmd.Dir = b.Workdir
	}
	// A clean environment: the worker's secrets never reach a tool.
	cmd.Env = backend.ToolEnv(os.Environ(), b.Env, req.Env)
	if req.Stdin != nil {
		cmd.Stdin = bytes.NewReader(req.Stdin)
	}
	stdout := &backend.CappedBuffer{Max: req.MaxOutput, Tee: tee(out, 1)}
	stderr := &backend.CappedBuffer{Max: req.MaxOutput, Tee: tee(out, 2)}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group so a timeout kills its children too, and a
	// parent-death signal so a killed worker does not leave it running
	// (side-effecting calls are at-most-once: they must not finish behind
	// the workflow's back).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	res := backend.ExecResult{
		Stdout:    stdout.Bytes(),
		Stderr:    stderr.Bytes(),
		Truncated: stdout.Truncated() || stderr.Truncated(),
		Duration:  time.Since(start),
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && req.Timeout > 0:
		res.ExitCode, res.TimedOut = -1, true
	case ctx.Err() != nil:
		return res, fmt.Errorf("local exec: %w", ctx.Err())
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		res.ExitCode = cmd.ProcessState.ExitCode()
	default:
		// The program could not be started: report it like a shell would.
		res.ExitCode = 127
		res.Stderr = append(res.Stderr, []byte(err.Error())...)
	}
	return res, nil
}

// ReadFile implements backend.Backend.
func (b *Backend) ReadFile(_ context.Context, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	return data, wrap(err)
}

// WriteFile implements backend.Backend.
func (b *Backend) WriteFile(_ context.Context, path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("local write: %w", err)
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	return wrap(os.WriteFile(path, data, mode))
}

// Stat implements backend.Backend.
func (b *Backend) Stat(_ context.Context, path string) (backend.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return backend.FileInfo{}, wrap(err)
	}
	return info(fi), nil
}

// ListDir implements backend.Backend.
func (b *Backend) ListDir(_ context.Context, path string) ([]backend.FileInfo, error) {
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]backend.FileInfo, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		out = append(out, info(fi))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Home implements backend.Backend.
func (b *Backend) Home(context.Context) (string, error) { return os.UserHomeDir() }

func info(fi fs.FileInfo) backend.FileInfo {
	return backend.FileInfo{Name: fi.Name(), Size: fi.Size(), ModTime: fi.ModTime(), IsDir: fi.IsDir()}
}

func wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %w", backend.ErrNotExist, err)
	default:
		return fmt.Errorf("local: %w", err)
	}
}

// tee sends a process's output on stream (1 stdout, 2 stderr) to out
// as it arrives; nil when out is nil.
func tee(out func(int, []byte), stream int) func([]byte) {
	if out == nil {
		return nil
	}
	return func(p []byte) { out(stream, p) }
}
