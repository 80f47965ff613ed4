package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/wardenhq/warden/backend"
)

// markerVar is set in the environment of every process warden starts; its
// value is unique per run, so a timeout can find and kill the whole tree,
// even children that left the process group.
const markerVar = "WARDEN_EXEC"

// killScript kills, as the user the command ran as (root without
// CAP_SYS_PTRACE cannot read other users' environ), every process whose
// environment carries markerVar=$1, and each one's process group. It stops
// them first so none can fork while the list is being made. (No grep -F:
// busybox's misses matches in NUL-separated files; the marker is plain
// alphanumerics, so a regexp is the same.)
const killScript = `m="` + markerVar + `=$1"
for pass in 1 2 3; do
  found=
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = "$$" ] && continue
    grep -qs "$m" "$d/environ" 2>/dev/null || continue
    kill -STOP "$p" 2>/dev/null
    found="$found $p"
  done
  [ -z "$found" ] && exit 0
  for p in $found; do kill -9 -- "-$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  sleep 0.05
done`

// Exec implements backend.Backend. With Config.Session, `/bin/sh -c CMD`
// (optionally with arguments) without stdin runs on the persistent shell,
// unless another command is using it; everything else is a fresh
// exec. On timeout the process, its group and all its descendants are
// killed and the result has ExitCode -1 and TimedOut set.
func (b *Backend) Exec(ctx context.Context, req backend.ExecRequest) (backend.ExecResult, error) {
	if len(req.Argv) == 0 {
		return backend.ExecResult{}, errors.New("docker exec: empty argv")
	}
	if req.Dir == "" {
		req.Dir = b.cfg.Workdir
	}
	req.Env = append(backend.TraceEnv(ctx), req.Env...)
	if b.sessionFits(req) {
		if res, ok, err := b.sessionExec(ctx, req); ok {
			return res, err
		}
	}
	var res backend.ExecResult
	err := b.retry(ctx, func(id string) error {
		var err error
		res, err = b.plainExec(ctx, id, req)
		return err
	})
	return res, err
}

// sessionFits reports whether req may run on the session: a shell script
// (`/bin/sh -c CMD [ARG...]`) without stdin and with well-formed Env.
func (b *Backend) sessionFits(req backend.ExecRequest) bool {
	if !b.cfg.Session || req.Stdin != nil || len(req.Argv) < 3 || req.Argv[1] != "-c" ||
		(req.Argv[0] != "/bin/sh" && req.Argv[0] != "sh") {
		return false
	}
	for _, e := range req.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return false
		}
	}
	return true
}

// procEnv is the environment a process adds to the container's: the
// configured ExecEnv, then the request's entries.
func (b *Backend) procEnv(req backend.ExecRequest) []string {
	return append(append(make([]string, 0, len(b.cfg.ExecEnv)+len(req.Env)+1), b.cfg.ExecEnv...), req.Env...)
}

// plainExec runs req as one API exec: create, attach, demultiplex, inspect.
func (b *Backend) plainExec(ctx context.Context, id string, req backend.ExecRequest) (backend.ExecResult, error) {
	start := time.Now()
	mark := nonce()
	execID, att, err := b.createPlain(ctx, id, req, mark)
	if err != nil {
		return backend.ExecResult{}, err
	}
	defer att.Close()

	stdout := &backend.CappedBuffer{Max: req.MaxOutput}
	stderr := &backend.CappedBuffer{Max: req.MaxOutput}
	done := demux(&att, req.Stdin, stdout, stderr)
	timeout, stop := timeoutAfter(req.Timeout)
	defer stop()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) {
			return backend.ExecResult{}, fmt.Errorf("docker exec read: %w", err)
		}
	case <-timeout:
		att.Close()
		<-done
		kerr := b.killMarked(context.WithoutCancel(ctx), id, mark)
		res := result(stdout, stderr, start)
		res.ExitCode, res.TimedOut = -1, true
		return res, kerr
	case <-ctx.Done():
		att.Close()
		<-done
		_ = b.killMarked(context.WithoutCancel(ctx), id, mark)
		return result(stdout, stderr, start), fmt.Errorf("docker exec: %w", ctx.Err())
	}
	return b.awaitExit(ctx, id, execID, result(stdout, stderr, start))
}

// createPlain creates the exec of req in container id, its environment
// carrying markerVar=mark, and attaches to it.
func (b *Backend) createPlain(ctx context.Context, id string, req backend.ExecRequest, mark string) (string, client.ExecAttachResult, error) {
	created, err := b.cli.ExecCreate(ctx, id, client.ExecCreateOptions{
		User:         b.cfg.User,
		AttachStdin:  req.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Env:          append(b.procEnv(req), markerVar+"="+mark),
		WorkingDir:   req.Dir,
		Cmd:          req.Argv,
	})
	if err != nil {
		return "", client.ExecAttachResult{}, fmt.Errorf("docker exec create: %w", err)
	}
	att, err := b.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		// The attach starts the exec: refused, nothing ran. A container
		// removed between the create and the attach makes the daemon
		// answer 500 ("unable to upgrade to tcp"); said as "is not
		// running", retry recovers the workspace and runs it again.
		if b.goneSoon(context.WithoutCancel(ctx), id) {
			return "", client.ExecAttachResult{}, fmt.Errorf("docker exec attach: container %s is not running: %w", short(id), err)
		}
		return "", client.ExecAttachResult{}, fmt.Errorf("docker exec attach: %w", err)
	}
	return created.ID, att, nil
}

// demux feeds stdin, unless nil, to the attached exec and splits its
// multiplexed output into stdout and stderr. The channel receives the
// copy's error once the output ends.
func demux(att *client.ExecAttachResult, stdin []byte, stdout, stderr io.Writer) <-chan error {
	done := make(chan error, 1)
	go func() {
		if stdin != nil {
			go func() {
				_, _ = io.Copy(att.Conn, bytes.NewReader(stdin))
				_ = att.CloseWrite()
			}()
		}
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		done <- err
	}()
	return done
}

// timeoutAfter returns a channel that receives once d has passed (nil,
// never ready, when d is not positive) and the function that stops it.
func timeoutAfter(d time.Duration) (<-chan time.Time, func()) {
	if d <= 0 {
		return nil, func() {}
	}
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// awaitExit sets res's exit code from exec execID of container id. The
// stream ends when the process's outputs close; the exit code may lag
// behind it by a moment.
func (b *Backend) awaitExit(ctx context.Context, id, execID string, res backend.ExecResult) (backend.ExecResult, error) {
	for range 200 {
		ins, err := b.cli.ExecInspect(ctx, execID, client.ExecInspectOptions{})
		if err != nil {
			return res, fmt.Errorf("docker exec inspect: %w", err)
		}
		if !ins.Running {
			res.ExitCode = ins.ExitCode
			startFailure(&res)
			return res, b.containerFailure(ctx, id, res.ExitCode)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return res, errors.New("docker exec: output closed but the process is still running")
}

// containerFailure returns the error of an exec that exited with code
// because container id went away, or nil when the code is the command's.
func (b *Backend) containerFailure(ctx context.Context, id string, code int) error {
	// A container being removed may still read as running for a moment
	// after the exec failed: look again for up to 2 s.
	if code < 126 || !b.goneSoon(context.WithoutCancel(ctx), id) {
		return nil
	}
	if code == 126 {
		// The runtime could not start the process in a container being
		// removed: nothing ran, so recovery (a new container) may run it
		// (retry's "is not running").
		return fmt.Errorf("docker exec: container %s is not running (exit 126 before the process started)", short(id))
	}
	// The container died under the process: not the command's own
	// failure, and it may have run in part.
	return fmt.Errorf("docker exec: container %s went away during the call (exit %d): %w",
		short(id), code, backend.ErrUnavailable)
}

// startFailure rewrites the result of an exec the runtime could not start
// (its message arrives on stdout with exit code 126) the way a shell
// reports it: the message on stderr, and 127 for a missing program.
func startFailure(res *backend.ExecResult) {
	const prefix = "OCI runtime exec failed"
	if res.ExitCode != 126 || !bytes.HasPrefix(res.Stdout, []byte(prefix)) {
		return
	}
	msg := string(res.Stdout)
	res.Stderr = append(res.Stderr, res.Stdout...)
	res.Stdout = nil
	if strings.Contains(msg, "executable file not found") ||
		(strings.Contains(msg, "exec: ") && strings.Contains(msg, "no such file or directory") && !strings.Contains(msg, "chdir")) {
		res.ExitCode = 127
	}
}

// killMarked kills every process started with markerVar=mark.
func (b *Backend) killMarked(ctx context.Context, id, mark string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	created, err := b.cli.ExecCreate(ctx, id, client.ExecCreateOptions{
		User:         b.cfg.User,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          []string{"/bin/sh", "-c", killScript, "warden-kill", mark},
	})
	if err != nil {
		return fmt.Errorf("docker kill exec: %w", err)
	}
	att, err := b.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return fmt.Errorf("docker kill exec: %w", err)
	}
	defer att.Close()
	if _, err := stdcopy.StdCopy(io.Discard, io.Discard, att.Reader); err != nil {
		return fmt.Errorf("docker kill exec: %w", err)
	}
	return nil
}

func result(stdout, stderr *backend.CappedBuffer, start time.Time) backend.ExecResult {
	return backend.ExecResult{
		Stdout:    stdout.Bytes(),
		Stderr:    stderr.Bytes(),
		Truncated: stdout.Truncated() || stderr.Truncated(),
		Duration:  time.Since(start),
	}
}
