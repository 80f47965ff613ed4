package e2bfake

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// connectStatus maps Connect codes to HTTP statuses as connect-go 1.x.
func connectStatus(code string) int {
	switch code {
	case "canceled":
		return 499
	case "invalid_argument", "failed_precondition", "out_of_range":
		return 400
	case "deadline_exceeded":
		return 504
	case "not_found":
		return 404
	case "already_exists", "aborted":
		return 409
	case "permission_denied":
		return 403
	case "resource_exhausted":
		return 429
	case "unimplemented":
		return 501
	case "unavailable":
		return 503
	case "unauthenticated":
		return 401
	}
	return 500
}

// connectError is a Connect error before it is written.
type connectError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *connectError) Error() string { return e.Code + ": " + e.Message }

func cerr(code, format string, args ...any) *connectError {
	return &connectError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func writeConnectError(w http.ResponseWriter, e *connectError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(connectStatus(e.Code))
	_ = json.NewEncoder(w).Encode(e)
}

// plainError writes envd's and the proxy's non-Connect error body.
func plainError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": status, "message": msg})
}

func (s *Server) serveEnvd(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" && r.Method == http.MethodGet {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	sb, ok := s.admit(w, r)
	if !ok {
		return
	}
	if r.URL.Path == "/files" {
		s.serveFiles(w, r)
		return
	}
	if !admitConnect(w, r) {
		return
	}
	proc := strings.TrimPrefix(r.URL.Path, "/")
	if proc == "process.Process/Start" {
		s.start(w, r, &sb)
		return
	}
	s.serveUnary(w, r, proc)
}

// admit checks what the proxy and envd check before routing a request:
// the sandbox is running and addressed on envd's port, the client is not
// the legacy connect-python one, and the access token matches. It returns
// a copy of the sandbox, or false when it has written the error.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (Sandbox, bool) {
	// The proxy routes by header when the host is localhost or an IP.
	id := r.Header.Get("E2b-Sandbox-Id")
	s.mu.Lock()
	s.expireLocked()
	sb, ok := s.sandboxes[id]
	var sbCopy Sandbox
	if ok {
		sbCopy = *sb
	}
	s.mu.Unlock()
	if !ok || sbCopy.State != "running" || r.Header.Get("E2b-Sandbox-Port") != "49983" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		_ = json.NewEncoder(w).Encode(map[string]any{"sandboxId": id, "message": "The sandbox was not found", "code": 502})
		return Sandbox{}, false
	}
	if r.Header.Get("User-Agent") == "connect-python" {
		plainError(w, http.StatusBadRequest, "e2bfake: the legacy connect-python conversion path is not supported")
		return Sandbox{}, false
	}
	if sbCopy.AccessToken != "" && r.Header.Get("X-Access-Token") != sbCopy.AccessToken {
		plainError(w, http.StatusUnauthorized, "unauthorized access, please provide a valid access token or method signing if supported")
		return Sandbox{}, false
	}
	return sbCopy, true
}

// admitConnect checks what every Connect RPC needs: POST, the sandbox
// user and Connect-Protocol-Version 1. It returns false when it has
// written the error.
func admitConnect(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		plainError(w, http.StatusMethodNotAllowed, "method not allowed")
		return false
	}
	if u, ok := basicUser(r); !ok {
		writeConnectError(w, cerr("unauthenticated", "invalid authorization header"))
		return false
	} else if u != User {
		writeConnectError(w, cerr("unauthenticated", "invalid username: '%s'", u))
		return false
	}
	if r.Header.Get("Connect-Protocol-Version") != "1" {
		// connect-go can be configured to require it; the fake always does.
		writeConnectError(w, cerr("invalid_argument", "missing required header: set Connect-Protocol-Version to \"1\""))
		return false
	}
	return true
}

// unaryHandler returns the handler of a unary RPC, or nil.
func (s *Server) unaryHandler(proc string) func([]byte) (any, *connectError) {
	return map[string]func([]byte) (any, *connectError){
		"process.Process/SendSignal":    s.sendSignal,
		"filesystem.Filesystem/Stat":    s.stat,
		"filesystem.Filesystem/ListDir": s.listDir,
		"filesystem.Filesystem/MakeDir": s.makeDir,
		"filesystem.Filesystem/Move":    s.move,
		"filesystem.Filesystem/Remove":  s.remove,
	}[proc]
}

// serveUnary serves a unary Connect RPC with a JSON body.
func (s *Server) serveUnary(w http.ResponseWriter, r *http.Request, proc string) {
	unary := s.unaryHandler(proc)
	if unary == nil {
		writeConnectError(w, cerr("unimplemented", "%s is not implemented", r.URL.Path))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" && ct != "application/json; charset=utf-8" {
		w.Header().Set("Accept-Post", "application/json")
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeConnectError(w, cerr("internal", "read body: %v", err))
		return
	}
	out, e := unary(body)
	if e != nil {
		writeConnectError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// basicUser returns the Basic-auth user; no header means the default user.
func basicUser(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return User, true
	}
	raw, ok := strings.CutPrefix(h, "Basic ")
	if !ok {
		return "", false
	}
	dec, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return "", false
	}
	u, _, ok := strings.Cut(string(dec), ":")
	return u, ok
}

// decodeMessage decodes a protojson request. Unlike envd it rejects
// unknown fields, so a misspelt field fails the test that sent it.
func decodeMessage(body []byte, v any) *connectError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return cerr("invalid_argument", "unmarshal message: %v", err)
	}
	if dec.More() {
		return cerr("invalid_argument", "unmarshal message: trailing data")
	}
	return nil
}

// resolve maps a request path like envd: "~" and relative paths are under
// the user's home.
func (s *Server) resolve(p string) string {
	switch {
	case p == "" || p == "~":
		return s.Home
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(s.Home, p[2:])
	case !filepath.IsAbs(p):
		return filepath.Join(s.Home, p)
	}
	return filepath.Clean(p)
}

// ---- process ----

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

func frame(flags byte, payload []byte) []byte {
	b := make([]byte, 5+len(payload))
	b[0] = flags
	binary.BigEndian.PutUint32(b[1:5], uint32(len(payload)))
	copy(b[5:], payload)
	return b
}

func eventFrame(ev any) []byte {
	b, _ := json.Marshal(map[string]any{"event": ev})
	return frame(0, b)
}

func endStreamFrame(e *connectError) []byte {
	if e == nil {
		return frame(0x02, []byte("{}"))
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return frame(0x02, b)
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

// unwrapEnvelope returns the one message of an enveloped request body.
func unwrapEnvelope(body []byte) ([]byte, *connectError) {
	if len(body) < 5 {
		return nil, cerr("invalid_argument", "protocol error: incomplete envelope")
	}
	n := binary.BigEndian.Uint32(body[1:5])
	switch {
	case body[0] != 0:
		return nil, cerr("internal", "protocol error: invalid envelope flags %d", body[0])
	case int(n) != len(body)-5:
		return nil, cerr("unknown", "protocol error: envelope length %d but %d bytes follow (exactly one message expected)", n, len(body)-5)
	}
	return body[5:], nil
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

// ---- filesystem ----

// entry builds a protojson EntryInfo: zero values omitted, int64 size as
// a string, mode holding only the permission bits.
func entry(p string, fi fs.FileInfo) map[string]any {
	m := map[string]any{"name": fi.Name(), "path": p, "permissions": fi.Mode().String()}
	mode := fi.Mode()
	if mode&fs.ModeSymlink != 0 {
		if target, err := os.Readlink(p); err == nil {
			m["symlinkTarget"] = target
		}
		if tfi, err := os.Stat(p); err == nil {
			mode = tfi.Mode()
		}
	}
	switch {
	case mode.IsDir():
		m["type"] = "FILE_TYPE_DIRECTORY"
	case mode.IsRegular():
		m["type"] = "FILE_TYPE_FILE"
	}
	if fi.Size() != 0 {
		m["size"] = strconv.FormatInt(fi.Size(), 10)
	}
	if perm := uint32(fi.Mode().Perm()); perm != 0 {
		m["mode"] = perm
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		m["owner"], m["group"] = strconv.Itoa(int(st.Uid)), strconv.Itoa(int(st.Gid))
		if u, err := user.LookupId(m["owner"].(string)); err == nil {
			m["owner"] = u.Username
		}
		if g, err := user.LookupGroupId(m["group"].(string)); err == nil {
			m["group"] = g.Name
		}
	}
	m["modifiedTime"] = fi.ModTime().UTC().Format(time.RFC3339Nano)
	return m
}

func fsError(err error, notFound string) *connectError {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return cerr("not_found", "%s: %v", notFound, err)
	case errors.Is(err, fs.ErrPermission):
		return cerr("permission_denied", "%v", err)
	}
	return cerr("internal", "%v", err)
}

type pathReq struct {
	Path  string  `json:"path"`
	Depth *uint32 `json:"depth"`
}

func (s *Server) stat(body []byte) (any, *connectError) {
	var req pathReq
	if e := decodeMessage(body, &req); e != nil {
		return nil, e
	}
	if req.Depth != nil {
		return nil, cerr("invalid_argument", "unmarshal message: unknown field \"depth\"")
	}
	p := s.resolve(req.Path)
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, fsError(err, "file not found")
	}
	return map[string]any{"entry": entry(p, fi)}, nil
}

func (s *Server) listDir(body []byte) (any, *connectError) {
	var req pathReq
	if e := decodeMessage(body, &req); e != nil {
		return nil, e
	}
	depth := uint32(1)
	if req.Depth != nil && *req.Depth > 0 {
		depth = *req.Depth
	}
	root := s.resolve(req.Path)
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fsError(err, "directory not found")
	}
	if !fi.IsDir() {
		return nil, cerr("invalid_argument", "path is not a directory: %s", root)
	}
	entries := []map[string]any{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		level := uint32(strings.Count(rel, string(filepath.Separator)) + 1)
		info, err := d.Info()
		if err != nil {
			return nil // removed since the listing
		}
		entries = append(entries, entry(p, info))
		if d.IsDir() && level >= depth {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fsError(err, "error reading directory")
	}
	return map[string]any{"entries": entries}, nil
}

func (s *Server) makeDir(body []byte) (any, *connectError) {
	var req struct {
		Path string `json:"path"`
	}
	if e := decodeMessage(body, &req); e != nil {
		return nil, e
	}
	p := s.resolve(req.Path)
	if fi, err := os.Stat(p); err == nil {
		if fi.IsDir() {
			return nil, cerr("already_exists", "directory already exists: %s", p)
		}
		return nil, cerr("invalid_argument", "path already exists but it is not a directory: %s", p)
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return nil, fsError(err, "error creating directory")
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, fsError(err, "error creating directory")
	}
	return map[string]any{"entry": entry(p, fi)}, nil
}

func (s *Server) move(body []byte) (any, *connectError) {
	var req struct {
		Source      string `json:"source"`
		Destination string `json:"destination"`
	}
	if e := decodeMessage(body, &req); e != nil {
		return nil, e
	}
	src, dst := s.resolve(req.Source), s.resolve(req.Destination)
	if _, err := os.Lstat(src); err != nil {
		return nil, fsError(err, "source file not found")
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, fsError(err, "error creating destination directory")
	}
	if err := os.Rename(src, dst); err != nil {
		return nil, fsError(err, "error moving")
	}
	fi, err := os.Lstat(dst)
	if err != nil {
		return nil, fsError(err, "error moving")
	}
	return map[string]any{"entry": entry(dst, fi)}, nil
}

func (s *Server) remove(body []byte) (any, *connectError) {
	var req struct {
		Path string `json:"path"`
	}
	if e := decodeMessage(body, &req); e != nil {
		return nil, e
	}
	if err := os.RemoveAll(s.resolve(req.Path)); err != nil {
		return nil, cerr("internal", "error removing: %v", err)
	}
	return struct{}{}, nil
}

// ---- /files ----

func (s *Server) serveFiles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if u := q.Get("username"); q.Has("username") && u != User {
		plainError(w, http.StatusUnauthorized, fmt.Sprintf("error looking up user '%s': user: unknown user %s", u, u))
		return
	}
	switch r.Method {
	case http.MethodGet:
		if !q.Has("path") {
			plainError(w, http.StatusBadRequest, "path is required")
			return
		}
		p := s.resolve(q.Get("path"))
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			plainError(w, http.StatusNotFound, fmt.Sprintf("path '%s' does not exist", p))
			return
		case err != nil:
			plainError(w, http.StatusInternalServerError, fmt.Sprintf("error checking if path exists: %v", err))
			return
		case fi.IsDir():
			plainError(w, http.StatusBadRequest, fmt.Sprintf("path '%s' is a directory", p))
			return
		}
		f, err := os.Open(p)
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, fs.ErrPermission) {
				status = http.StatusForbidden
			}
			plainError(w, status, fmt.Sprintf("error opening file '%s': %v", p, err))
			return
		}
		defer f.Close()
		w.Header().Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": filepath.Base(p)}))
		http.ServeContent(w, r, filepath.Base(p), fi.ModTime(), f)
	case http.MethodPost:
		s.upload(w, r)
	default:
		plainError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		plainError(w, http.StatusBadRequest, "error parsing content type: "+err.Error())
		return
	}
	u := &uploader{s: s}
	var status int
	var msg string
	switch mt {
	case "application/octet-stream":
		if !q.Has("path") {
			plainError(w, http.StatusBadRequest, "path is required for an octet-stream upload")
			return
		}
		status, msg = u.put(q.Get("path"), r.Body)
	case "multipart/form-data":
		status, msg = u.multipart(r, q, params["boundary"])
	default:
		status, msg = http.StatusBadRequest, fmt.Sprintf("unsupported content type %q", mt)
	}
	if status != 0 {
		plainError(w, status, msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(u.out)
}

// written is one file of an upload's answer.
type written struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// uploader writes the files of one upload. Its methods return the status
// and message of an error, or 0.
type uploader struct {
	s   *Server
	out []written
}

// put writes rd to the file dst names.
func (u *uploader) put(dst string, rd io.Reader) (int, string) {
	p := u.s.resolve(dst)
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return http.StatusBadRequest, fmt.Sprintf("path '%s' is a directory", p)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return statusFor(err), fmt.Sprintf("error ensuring directories: %v", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return statusFor(err), fmt.Sprintf("error opening file '%s': %v", p, err)
	}
	_, err = io.Copy(f, rd)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return http.StatusInternalServerError, fmt.Sprintf("error writing file '%s': %v", p, err)
	}
	u.out = append(u.out, written{Path: p, Name: filepath.Base(p), Type: "file"})
	return 0, ""
}

// multipart writes each "file" part, to the path the query names or
// else to the part's file name.
func (u *uploader) multipart(r *http.Request, q url.Values, boundary string) (int, string) {
	if boundary == "" {
		return http.StatusBadRequest, "multipart boundary missing"
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return http.StatusBadRequest, "error parsing multipart: " + err.Error()
	}
	seen := map[string]bool{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return http.StatusBadRequest, "error reading multipart: " + err.Error()
		}
		if part.FormName() != "file" {
			continue
		}
		dst := part.FileName()
		if q.Has("path") {
			dst = q.Get("path")
		}
		switch {
		case dst == "":
			return http.StatusBadRequest, "part without a destination path"
		case seen[dst]:
			return http.StatusBadRequest, fmt.Sprintf("cannot upload multiple files to the same path '%s'", dst)
		}
		seen[dst] = true
		if status, msg := u.put(dst, part); status != 0 {
			return status, msg
		}
	}
	if len(u.out) == 0 {
		return http.StatusBadRequest, "no file part in the request"
	}
	return 0, ""
}

func statusFor(err error) int {
	if errors.Is(err, fs.ErrPermission) {
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}
