package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local/sandbox"
	"github.com/wardenhq/warden/calls"
)

// errNoZygote means the call needs a sandbox of its own.
var errNoZygote = errors.New("local exec: no zygote for this call")

// Close stops the backend's sandbox zygote (and any process it still
// runs). The backend starts a new one if used again.
func (b *Backend) Close() error {
	b.mu.Lock()
	z := b.zygote
	b.zygote = nil
	b.mu.Unlock()
	if z == nil {
		return nil
	}
	return z.Close()
}

// zygoteHide is what the zygote hides: the backend's hidden paths that
// do not hold its workdir.
func (b *Backend) zygoteHide() []string {
	return hidden(b.hide(), []string{realPaths([]string{b.Workdir})[0]})
}

// startedZygote returns the running zygote, starting one if needed.
func (b *Backend) startedZygote() (*sandbox.Zygote, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.zygote != nil && b.zygote.Alive() {
		return b.zygote, nil
	}
	z, err := sandbox.StartZygote(b.zygoteHide())
	if err != nil {
		return nil, err
	}
	b.zygote = z
	return z, nil
}

// viaZygote runs req through the zygote. errNoZygote (or
// sandbox.ErrSlow) means nothing ran and the call needs a sandbox of its
// own: its working directory or a write path lies in a hidden tree the
// zygote hides, or it may write a path an earlier call protected.
func (b *Backend) viaZygote(ctx context.Context, req backend.ExecRequest, dir string, env []string, stdout, stderr *backend.CappedBuffer) (backend.ExecResult, error) {
	prof := req.Sandbox
	if prof == nil {
		prof = backend.SandboxFrom(ctx)
	}
	if prof == nil {
		prof = &calls.Sandbox{Write: []string{b.Workdir}, Dirs: []string{b.Workdir}}
	}
	write := grantable(realPaths(prof.Write))
	hide := b.zygoteHide()
	for _, p := range append([]string{dir}, write...) {
		if insideAny(p, hide) {
			return backend.ExecResult{}, errNoZygote
		}
	}
	z, err := b.startedZygote()
	if err != nil {
		return backend.ExecResult{}, errNoZygote
	}
	tmp, err := os.MkdirTemp("", "warden-tool-")
	if err != nil {
		return backend.ExecResult{}, fmt.Errorf("local exec: private temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	env, cache := b.cacheEnv(env, prof)
	if cache != "" {
		write = append(write, cache)
	}
	r := sandbox.Request{
		Write:   append(write, tmp),
		Protect: realPaths(prof.Protect),
		Network: prof.Network,
		Dir:     dir,
		Argv:    req.Argv,
		Env:     append(env, "TMPDIR="+tmp),
	}
	start := time.Now()
	out, err := z.Run(ctx, r, req.Stdin, stdout, stderr)
	res := backend.ExecResult{
		Stdout:    stdout.Bytes(),
		Stderr:    stderr.Bytes(),
		Truncated: stdout.Truncated() || stderr.Truncated(),
		Duration:  time.Since(start),
		ExitCode:  out.ExitCode,
	}
	switch {
	case errors.Is(err, sandbox.ErrSlow):
		return backend.ExecResult{}, err
	case errors.Is(err, sandbox.ErrNotFound):
		// Reported like a shell would.
		res.ExitCode = 127
		res.Stderr = append(res.Stderr, []byte(err.Error())...)
		return res, nil
	case errors.Is(err, sandbox.ErrGone):
		return res, fmt.Errorf("local exec: %w: %w", backend.ErrUnavailable, err)
	case err != nil:
		res.ExitCode = 126
		res.Stderr = append(res.Stderr, []byte(err.Error())...)
		return res, nil
	}
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && req.Timeout > 0 {
			res.ExitCode, res.TimedOut = -1, true
			return res, nil
		}
		return res, fmt.Errorf("local exec: %w", ctx.Err())
	}
	return res, nil
}
