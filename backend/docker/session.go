package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/wardenhq/warden/backend"
)

// A session is one long-lived `sh` exec whose stdin receives commands.
//
// Each command runs as a child of the shell, in a subshell that changes
// to its directory and execs `env MARK EXTRA... setsid ARGV...`, so it
// gets a fresh environment and its own process group, exactly like a
// plain exec, and none of its state leaks into the next command. Its
// stdout and stderr go to two files in a private directory; when it exits,
// the shell writes on its own stdout
//
//	\nWARDEN-BEGIN-<nonce> RC NOUT NERR FULLOUT FULLERR\n
//	<NOUT bytes of stdout><NERR bytes of stderr>WARDEN-END-<nonce>\n
//
// where the nonce is random per command and the counts come from wc, so
// output can hold anything (NULs, fake markers, no final newline).
// Background processes the command leaves behind write into unlinked
// files and never into the protocol stream.
type session struct {
	id  string // container ID
	att client.ExecAttachResult
	out *bufio.Reader // the shell's stdout, demultiplexed

	afterHeader func() // Backend.afterHeader
}

const sessionInit = `d="${TMPDIR:-/tmp}/.warden-session-%[1]s"
(umask 077 && mkdir -p "$d") || exit 1
S=$(command -v setsid)
printf '\nWARDEN-READY-%[1]s\n'
`

// startSession starts a shell in container id.
func (b *Backend) startSession(ctx context.Context, id string) (*session, error) {
	created, err := b.cli.ExecCreate(ctx, id, client.ExecCreateOptions{
		User:         b.cfg.User,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		WorkingDir:   "/",
		Cmd:          []string{"/bin/sh"},
	})
	if err != nil {
		return nil, fmt.Errorf("docker session: create: %w", err)
	}
	// The attachment outlives this call: it must not be tied to ctx.
	att, err := b.cli.ExecAttach(context.WithoutCancel(ctx), created.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker session: attach: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		// The shell's own stderr (not the commands') is discarded.
		_, err := stdcopy.StdCopy(pw, io.Discard, att.Reader)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	s := &session{id: id, att: att, out: bufio.NewReaderSize(pr, 64<<10), afterHeader: b.afterHeader}
	n := nonce()
	if _, err := io.WriteString(att.Conn, fmt.Sprintf(sessionInit, n)); err != nil {
		s.close()
		return nil, fmt.Errorf("docker session: init: %w", err)
	}
	ready := make(chan error, 1)
	go func() { ready <- s.skipTo("WARDEN-READY-" + n) }()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(30 * time.Second):
		err = errors.New("no answer")
	}
	if err != nil {
		s.close()
		return nil, fmt.Errorf("docker session: init: %w", err)
	}
	return s, nil
}

func (s *session) close() { s.att.Close() }

// skipTo reads lines until one equals line.
func (s *session) skipTo(line string) error {
	for {
		l, err := s.out.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.TrimSuffix(l, "\n") == line {
			return nil
		}
	}
}

// sessionExec runs req on the session. ok is false when the command was
// not run and the caller should use a plain exec instead: the session is
// busy, could not start, or broke (with its container gone) before the
// command produced a result.
func (b *Backend) sessionExec(ctx context.Context, req backend.ExecRequest) (_ backend.ExecResult, ok bool, _ error) {
	if !b.sessMu.TryLock() {
		return backend.ExecResult{}, false, nil // busy: run alongside
	}
	defer b.sessMu.Unlock()
	id, err := b.current(ctx)
	if err != nil {
		return backend.ExecResult{}, false, nil
	}
	if b.sess != nil && b.sess.id != id {
		b.sess.close()
		b.sess = nil
	}
	if b.sess == nil {
		s, err := b.startSession(ctx, id)
		if err != nil {
			return backend.ExecResult{}, false, nil
		}
		b.sess = s
	}
	s := b.sess
	res, started, err := b.runOnSession(ctx, s, req)
	if err != nil {
		s.close()
		b.sess = nil
		switch {
		case ctx.Err() != nil:
		case !started:
			if b.goneSoon(ctx, id) {
				return backend.ExecResult{}, false, nil
			}
		case b.goneWithin(ctx, id, ranGoneWait):
			// The command ran, and the container went with its output:
			// say so, and let a read-only caller run it again.
			err = fmt.Errorf("docker exec: the container was removed while the command ran and its output is lost (%w): %w", errContainerGone, err)
		}
	}
	if cerr := ctx.Err(); cerr != nil && !res.TimedOut {
		return res, true, errors.Join(fmt.Errorf("docker exec: %w", cerr), err)
	}
	return res, true, err
}

// goneSoon reports whether container id stops running within about two
// seconds: a session cut by `docker rm -f` sees the end of its stream
// before the daemon has finished removing the container.
func (b *Backend) goneSoon(ctx context.Context, id string) bool {
	return b.goneWithin(ctx, id, 2*time.Second)
}

// ranGoneWait bounds the wait for the daemon to report a container gone
// after a session lost a command's output. A daemon that killed the
// container while an exec's output was still on its way reports it
// running for up to about 13 s more (measured with Docker 20.10 and
// TestRemovedMidResult); a session broken any other way is rare enough
// to pay the wait before its error.
const ranGoneWait = 20 * time.Second

// goneWithin reports whether container id stops running within d.
func (b *Backend) goneWithin(ctx context.Context, id string, d time.Duration) bool {
	for end := time.Now().Add(d); ; {
		if b.gone(ctx, id) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// gone reports whether container id no longer runs.
func (b *Backend) gone(ctx context.Context, id string) bool {
	ins, err := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return containerGone(err) || strings.Contains(strings.ToLower(err.Error()), "not found")
	}
	return ins.Container.State == nil || !ins.Container.State.Running
}

// runOnSession sends one command and reads its result. started reports
// that the result header arrived (the command certainly ran). A non-nil
// error means the session is unusable.
func (b *Backend) runOnSession(ctx context.Context, s *session, req backend.ExecRequest) (res backend.ExecResult, started bool, err error) {
	start := time.Now()
	n, mark := nonce(), nonce()
	if _, err := io.WriteString(s.att.Conn, b.sessionCommand(req, n, mark)); err != nil {
		return res, false, fmt.Errorf("docker session: send: %w", err)
	}
	c := &sessionCall{s: s, mark: mark, start: start, done: make(chan sessionReply, 1)}
	go func() {
		r, st, err := s.read(n)
		c.done <- sessionReply{r, st, err}
	}()
	timeout, stop := timeoutAfter(req.Timeout)
	defer stop()
	select {
	case r := <-c.done:
		r.res.Duration = time.Since(start)
		return r.res, r.started, r.err
	case <-timeout:
		return b.killSessionCall(ctx, c, true)
	case <-ctx.Done():
		// started=true: a cancelled command must not run a second time.
		// A nil error means the session survived the kill.
		res, _, err := b.killSessionCall(ctx, c, false)
		return res, true, err
	}
}

// sessionCommand is the script that runs req on the session and frames
// its result with nonce n; the command's environment carries
// markerVar=mark.
func (b *Backend) sessionCommand(req backend.ExecRequest, n, mark string) string {
	var cmd strings.Builder
	// Recreate the private directory if a command removed it.
	cmd.WriteString(`[ -d "$d" ] || (umask 077 && mkdir -p "$d")` + "\n")
	cmd.WriteString("( cd -- " + quote(req.Dir) + " && exec env " + quote(markerVar+"="+mark))
	for _, e := range b.procEnv(req) {
		cmd.WriteString(" " + quote(e))
	}
	cmd.WriteString(" $S")
	for _, a := range req.Argv {
		cmd.WriteString(" " + quote(a))
	}
	cmd.WriteString(` ) >"$d/o" 2>"$d/e" </dev/null
rc=$?
fo=$(wc -c 2>/dev/null <"$d/o" || echo 0); fo=$((fo))
fe=$(wc -c 2>/dev/null <"$d/e" || echo 0); fe=$((fe))
`)
	if req.MaxOutput > 0 {
		c := strconv.Itoa(req.MaxOutput)
		cmd.WriteString("no=$((fo > " + c + " ? " + c + " : fo)); ne=$((fe > " + c + " ? " + c + " : fe))\n")
	} else {
		cmd.WriteString("no=$fo; ne=$fe\n")
	}
	fmt.Fprintf(&cmd, `printf '\nWARDEN-BEGIN-%[1]s %%d %%d %%d %%d %%d\n' "$rc" "$no" "$ne" "$fo" "$fe"
head -c "$no" "$d/o" 2>/dev/null; head -c "$ne" "$d/e" 2>/dev/null
printf 'WARDEN-END-%[1]s\n'
rm -f "$d/o" "$d/e"
`, n)
	return cmd.String()
}

// sessionCall is one command sent to a session whose result is being
// read.
type sessionCall struct {
	s     *session
	mark  string // the command's markerVar value
	start time.Time
	done  chan sessionReply // receives the result read
}

// sessionReply is what reading a command's result gave.
type sessionReply struct {
	res     backend.ExecResult
	started bool
	err     error
}

// killSessionCall kills c's processes and waits (up to 10 s) for the
// shell to report the result, so the session stays in step. A timed-out
// command's result has ExitCode -1 and TimedOut set.
func (b *Backend) killSessionCall(ctx context.Context, c *sessionCall, timedOut bool) (backend.ExecResult, bool, error) {
	kerr := b.killMarked(context.WithoutCancel(ctx), c.s.id, c.mark)
	var r sessionReply
	select {
	case r = <-c.done:
	case <-time.After(10 * time.Second):
		r = sessionReply{err: errors.New("docker session: no result after kill")}
	}
	if r.err != nil {
		return r.res, r.started, errors.Join(r.err, kerr)
	}
	r.res.Duration = time.Since(c.start)
	if timedOut {
		r.res.ExitCode, r.res.TimedOut = -1, true
		return r.res, true, nil
	}
	return r.res, true, kerr
}

// read parses one command's result framed by nonce n.
func (s *session) read(n string) (res backend.ExecResult, started bool, err error) {
	begin := "WARDEN-BEGIN-" + n + " "
	var line string
	for {
		line, err = s.out.ReadString('\n')
		if err != nil {
			return res, false, fmt.Errorf("docker session: read: %w", err)
		}
		if strings.HasPrefix(line, begin) {
			break
		}
	}
	var rc, no, ne, fo, fe int
	if _, err := fmt.Sscanf(strings.TrimPrefix(line, begin), "%d %d %d %d %d", &rc, &no, &ne, &fo, &fe); err != nil {
		return res, true, fmt.Errorf("docker session: bad header %q: %w", line, err)
	}
	if s.afterHeader != nil {
		s.afterHeader()
	}
	out := make([]byte, no)
	if _, err := io.ReadFull(s.out, out); err != nil {
		return res, true, fmt.Errorf("docker session: read stdout: %w", err)
	}
	errb := make([]byte, ne)
	if _, err := io.ReadFull(s.out, errb); err != nil {
		return res, true, fmt.Errorf("docker session: read stderr: %w", err)
	}
	end, err := s.out.ReadString('\n')
	if err != nil || end != "WARDEN-END-"+n+"\n" {
		return res, true, fmt.Errorf("docker session: lost framing (output file changed under the shell?): %q %v", end, err)
	}
	res = backend.ExecResult{
		ExitCode:  rc,
		Stdout:    out,
		Stderr:    errb,
		Truncated: fo > no || fe > ne,
	}
	return res, true, nil
}

// quote returns s single-quoted for sh.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
