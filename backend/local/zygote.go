package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local/sandbox"
)

// errNoZygote means the call needs a sandbox of its own.
var errNoZygote = errors.New("local exec: no zygote for this call")

// Close stops the backend's sandbox zygote (and any process it still
// runs). The backend starts a new one if used again.
func (b *Backend) Close() error {
	b.mu.Lock()
	z, idx := b.zygote, b.idx
	b.zygote, b.idx = nil, nil
	if b.brokerDir != "" {
		_ = os.RemoveAll(b.brokerDir)
		b.Broker, b.brokerDir = nil, ""
	}
	b.mu.Unlock()
	if idx != nil {
		idx.close() // a later call indexes its directories afresh
	}
	b.closeWalk()
	var err error
	if z != nil {
		err = z.Close()
	}
	return errors.Join(err, b.closeCgroups())
}

// zygoteHide is what the zygote hides: the backend's hidden paths that
// do not hold its workdir.
func (b *Backend) zygoteHide() []string {
	return hidden(b.hide(), []string{realPaths([]string{b.Workdir})[0]})
}

// startedZygote returns the running zygote, starting one if needed, and
// the paths it hides.
func (b *Backend) startedZygote() (*sandbox.Zygote, []string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.zygote != nil && b.zygote.Alive() {
		return b.zygote, b.zygoteHidden, nil
	}
	hide := b.zygoteHide()
	z, err := sandbox.StartZygote(hide)
	if err != nil {
		return nil, nil, err
	}
	b.zygote, b.zygoteHidden = z, hide
	return z, hide, nil
}

// viaZygote runs req through the zygote, confined by c. errNoZygote
// means nothing ran and the call needs a sandbox of its
// own (c serves it unused): its working directory or a write path lies
// in a hidden tree the zygote hides. (Each call's hidden, pinned and
// protected paths apply in a mount namespace of its own, so no call
// inherits another's.)
func (b *Backend) viaZygote(ctx context.Context, req backend.ExecRequest, dir string, c *confinement, stdout, stderr *backend.CappedBuffer) (backend.ExecResult, error) {
	z, hide, err := b.startedZygote()
	if err != nil {
		return backend.ExecResult{}, errNoZygote
	}
	for _, p := range append([]string{dir}, c.write...) {
		if insideAny(p, hide) {
			return backend.ExecResult{}, errNoZygote
		}
	}
	// A call with the network gets a network namespace of its own whose
	// only way out is its egress proxy (never the host's network).
	r := sandbox.Request{Write: c.write, Protect: c.protect, Hide: c.hide, Pin: c.pin, Read: c.read, Proxy: c.proxy != nil, Dir: dir, Argv: req.Argv, Env: c.env,
		Keep: b.keep(c.prof)}
	call := sandbox.Call{Stdin: req.Stdin, Stdout: stdout, Stderr: stderr}
	ctx, px := b.proxyFor(ctx, c.proxy)
	defer px.done()
	if px != nil {
		call.Proxy = px.serve
	}
	if c.limits != nil {
		call.Cgroups = c.limits.request(&r, c.tmp)
	}
	start := time.Now()
	out, err := z.RunCall(ctx, r, call)
	c.ended = out
	res := backend.ExecResult{
		Stdout:    stdout.Bytes(),
		Stderr:    stderr.Bytes(),
		Truncated: stdout.Truncated() || stderr.Truncated(),
		Duration:  time.Since(start),
		ExitCode:  out.ExitCode,
	}
	// RunCall returns after the proxy: its records are all in.
	if px.result(&res) {
		return res, nil // a bound of the proxy ended the call
	}
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		// Reported like a shell would.
		res.ExitCode = 127
		res.Stderr = append(res.Stderr, []byte(err.Error())...)
		return res, nil
	case errors.Is(err, sandbox.ErrGone):
		return res, fmt.Errorf("local exec: %w: %w", backend.ErrUnavailable, err)
	case err != nil && ctx.Err() == nil:
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
