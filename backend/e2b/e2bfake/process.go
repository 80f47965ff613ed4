// The process service: Start (a server stream relaying a process's
// output, exit, keepalives and deadline) and SendSignal.

package e2bfake

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// startReq is a Start request. Process stays an unnamed struct: a JSON
// type error names the enclosing struct type, so naming it would change
// the error text the fake sends.
type startReq struct {
	Process struct {
		Cmd  string            `json:"cmd"`
		Args []string          `json:"args"`
		Envs map[string]string `json:"envs"`
		Cwd  *string           `json:"cwd"`
	} `json:"process"`
	Pty   json.RawMessage `json:"pty"`
	Tag   *string         `json:"tag"`
	Stdin *bool           `json:"stdin"`
}

// start serves process.Process/Start, a server stream: it starts the
// process and relays its output, exit, keepalives and deadline.
func (s *Server) start(w http.ResponseWriter, r *http.Request, sb *Sandbox) {
	opts, ok := streamHeaders(w, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeConnectError(w, cerr("internal", "read body: %v", err))
		return
	}
	// From here on errors travel in the end-of-stream message, HTTP 200.
	w.Header().Set("Content-Type", "application/connect+json")
	st, e := s.launch(w, body, sb)
	if e != nil {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(endStreamFrame(e))
		return
	}
	defer close(st.gone)
	st.relay(r.Context(), opts)
}

// streamOpts are the settings a Start request carries in its headers.
type streamOpts struct {
	timeout   time.Duration // none when 0
	keepalive time.Duration
}

// streamHeaders checks a Start request's content type and encoding and
// reads its timeout and keepalive interval. It returns false when it has
// written the error.
func streamHeaders(w http.ResponseWriter, r *http.Request) (streamOpts, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "application/connect+json" {
		w.Header().Set("Accept-Post", "application/connect+json, application/connect+proto")
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return streamOpts{}, false
	}
	if enc := r.Header.Get("Connect-Content-Encoding"); enc != "" && enc != "identity" {
		writeConnectError(w, cerr("unimplemented", "unknown compression %q", enc))
		return streamOpts{}, false
	}
	opts := streamOpts{keepalive: 90 * time.Second}
	if v := r.Header.Get("Connect-Timeout-Ms"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 || len(v) > 10 {
			writeConnectError(w, cerr("invalid_argument", "protocol error: invalid timeout %q", v))
			return streamOpts{}, false
		}
		opts.timeout = time.Duration(ms) * time.Millisecond
	}
	if v := r.Header.Get("Keepalive-Ping-Interval"); v != "" {
		if sec, err := strconv.Atoi(v); err == nil && sec > 0 {
			opts.keepalive = time.Duration(sec) * time.Second
		}
	}
	return opts, true
}

// decodeStart decodes a Start request body and refuses what the fake
// does not run.
func decodeStart(body []byte) (startReq, *connectError) {
	var req startReq
	msg, e := unwrapEnvelope(body)
	if e != nil {
		return req, e
	}
	if e := decodeMessage(msg, &req); e != nil {
		return req, e
	}
	switch {
	case req.Stdin == nil:
		return req, cerr("invalid_argument", "e2bfake: send \"stdin\": false explicitly; when absent envd keeps a stdin pipe open and commands reading stdin hang")
	case *req.Stdin:
		return req, cerr("invalid_argument", "e2bfake: stdin=true is not supported by the fake; send \"stdin\": false")
	case len(req.Pty) > 0 && string(req.Pty) != "null":
		return req, cerr("unimplemented", "e2bfake: pty is not supported")
	case req.Process.Cmd == "":
		return req, cerr("invalid_argument", "process.cmd is required")
	}
	return req, nil
}

// command builds the command of a Start request: its working directory,
// which must exist, and the user's, sandbox's and request's environment.
func (s *Server) command(req *startReq, sb *Sandbox) (*exec.Cmd, *connectError) {
	p := &req.Process
	cwd := s.Home
	if p.Cwd != nil {
		cwd = s.resolve(*p.Cwd)
	}
	if _, err := os.Stat(cwd); errors.Is(err, fs.ErrNotExist) {
		return nil, cerr("invalid_argument", "cwd '%s' does not exist", cwd)
	}
	cmd := exec.Command(p.Cmd, p.Args...)
	cmd.Dir = cwd
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.Home, "USER=" + User, "LOGNAME=" + User}
	for k, v := range sb.EnvVars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range p.Envs {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd, nil
}

// launch decodes a Start request, starts its process and returns the
// stream that relays it to w.
func (s *Server) launch(w http.ResponseWriter, body []byte, sb *Sandbox) (*stream, *connectError) {
	req, e := decodeStart(body)
	if e != nil {
		return nil, e
	}
	cmd, e := s.command(&req, sb)
	if e != nil {
		return nil, e
	}
	stdout, err1 := cmd.StdoutPipe()
	stderr, err2 := cmd.StderrPipe()
	if err := errors.Join(err1, err2); err != nil {
		return nil, cerr("internal", "error creating pipes: %v", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, cerr("invalid_argument", "error starting process '%s': %v", strings.Join(append([]string{req.Process.Cmd}, req.Process.Args...), " "), err)
	}
	s.mu.Lock()
	s.procs[cmd.Process.Pid] = cmd
	s.mu.Unlock()
	st := &stream{
		s: s, w: w, cmd: cmd, pid: cmd.Process.Pid,
		gone:   make(chan struct{}),
		events: make(chan []byte, 64),
		exited: make(chan map[string]any, 1),
	}
	st.flusher, _ = w.(http.Flusher)
	st.readers.Add(2)
	go st.read(stdout, "stdout")
	go st.read(stderr, "stderr")
	go st.wait()
	return st, nil
}

// stream relays a started process to its Start response.
type stream struct {
	s       *Server
	w       http.ResponseWriter
	flusher http.Flusher // nil if w cannot flush
	cmd     *exec.Cmd
	pid     int
	gone    chan struct{} // closed when the handler returns
	events  chan []byte   // output frames
	exited  chan map[string]any
	readers sync.WaitGroup
}

// read sends what rd yields as data events under key until rd ends.
func (st *stream) read(rd io.Reader, key string) {
	defer st.readers.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := rd.Read(buf)
		if n > 0 {
			msg := eventFrame(map[string]any{"data": map[string][]byte{key: append([]byte(nil), buf[:n]...)}})
			select {
			case st.events <- msg:
			case <-st.gone: // nobody listens: keep draining the pipe
			}
		}
		if err != nil {
			return
		}
	}
}

// wait waits for the output and the process to end, forgets the process
// and sends its end event.
func (st *stream) wait() {
	st.readers.Wait()
	err := st.cmd.Wait()
	st.s.mu.Lock()
	delete(st.s.procs, st.pid)
	st.s.mu.Unlock()
	state := st.cmd.ProcessState
	end := map[string]any{"status": state.String()}
	if c := state.ExitCode(); c != 0 {
		end["exitCode"] = c
	}
	if state.Exited() {
		end["exited"] = true
	}
	if err != nil {
		end["error"] = err.Error()
	}
	st.exited <- end
}

// write writes and flushes one frame; false means the client is gone.
func (st *stream) write(b []byte) bool {
	if _, err := st.w.Write(b); err != nil {
		return false
	}
	if st.flusher != nil {
		st.flusher.Flush()
	}
	return true
}

// drain writes the output events already queued.
func (st *stream) drain() bool {
	for {
		select {
		case msg := <-st.events:
			if !st.write(msg) {
				return false
			}
		default:
			return true
		}
	}
}

// relay writes the start event, then output, keepalives and the end,
// until the process ends, the deadline passes or the client goes away.
func (st *stream) relay(ctx context.Context, opts streamOpts) {
	st.w.WriteHeader(http.StatusOK)
	if !st.write(eventFrame(map[string]any{"start": map[string]any{"pid": st.pid}})) {
		return
	}
	var deadline <-chan time.Time
	if opts.timeout > 0 {
		t := time.NewTimer(opts.timeout)
		defer t.Stop()
		deadline = t.C
	}
	idle := time.NewTimer(opts.keepalive)
	defer idle.Stop()
	for {
		select {
		case msg := <-st.events:
			if !st.write(msg) {
				return
			}
			idle.Reset(opts.keepalive)
		case end := <-st.exited:
			if st.drain() && st.write(eventFrame(map[string]any{"end": end})) {
				st.write(endStreamFrame(nil))
			}
			return
		case <-deadline:
			// Like exec.CommandContext in envd: only this process is killed.
			_ = st.cmd.Process.Kill()
			st.write(endStreamFrame(cerr("deadline_exceeded", "context deadline exceeded")))
			return
		case <-idle.C:
			if !st.write(eventFrame(map[string]any{"keepalive": map[string]any{}})) {
				return
			}
			idle.Reset(opts.keepalive)
		case <-ctx.Done():
			return // the process keeps running, as in envd
		}
	}
}

func (s *Server) sendSignal(body []byte) (any, *connectError) {
	var req struct {
		Process struct {
			Pid *uint32 `json:"pid"`
			Tag *string `json:"tag"`
		} `json:"process"`
		Signal json.RawMessage `json:"signal"`
	}
	if e := decodeMessage(body, &req); e != nil {
		return nil, e
	}
	var sig syscall.Signal
	switch strings.Trim(string(req.Signal), `"`) {
	case "SIGNAL_SIGKILL", "9":
		sig = syscall.SIGKILL
	case "SIGNAL_SIGTERM", "15":
		sig = syscall.SIGTERM
	default:
		return nil, cerr("unimplemented", "invalid signal: %s", req.Signal)
	}
	if req.Process.Pid == nil {
		return nil, cerr("invalid_argument", "process.pid is required")
	}
	s.mu.Lock()
	cmd := s.procs[int(*req.Process.Pid)]
	s.mu.Unlock()
	if cmd == nil {
		return nil, cerr("not_found", "process with pid %d not found", *req.Process.Pid)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return nil, cerr("internal", "error sending signal: %v", err)
	}
	return struct{}{}, nil
}
