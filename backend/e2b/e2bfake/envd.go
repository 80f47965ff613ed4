package e2bfake

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
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
		return
	}
	if r.Header.Get("User-Agent") == "connect-python" {
		plainError(w, http.StatusBadRequest, "e2bfake: the legacy connect-python conversion path is not supported")
		return
	}
	if sbCopy.AccessToken != "" && r.Header.Get("X-Access-Token") != sbCopy.AccessToken {
		plainError(w, http.StatusUnauthorized, "unauthorized access, please provide a valid access token or method signing if supported")
		return
	}
	if r.URL.Path == "/files" {
		s.serveFiles(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		plainError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if u, ok := basicUser(r); !ok {
		writeConnectError(w, cerr("unauthenticated", "invalid authorization header"))
		return
	} else if u != User {
		writeConnectError(w, cerr("unauthenticated", "invalid username: '%s'", u))
		return
	}
	if r.Header.Get("Connect-Protocol-Version") != "1" {
		// connect-go can be configured to require it; the fake always does.
		writeConnectError(w, cerr("invalid_argument", "missing required header: set Connect-Protocol-Version to \"1\""))
		return
	}
	proc := strings.TrimPrefix(r.URL.Path, "/")
	if proc == "process.Process/Start" {
		s.start(w, r, &sbCopy)
		return
	}
	unary := map[string]func([]byte) (any, *connectError){
		"process.Process/SendSignal":    s.sendSignal,
		"filesystem.Filesystem/Stat":    s.stat,
		"filesystem.Filesystem/ListDir": s.listDir,
		"filesystem.Filesystem/MakeDir": s.makeDir,
		"filesystem.Filesystem/Move":    s.move,
		"filesystem.Filesystem/Remove":  s.remove,
	}[proc]
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
	out, cerr := unary(body)
	if cerr != nil {
		writeConnectError(w, cerr)
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

func (s *Server) start(w http.ResponseWriter, r *http.Request, sb *Sandbox) {
	if ct := r.Header.Get("Content-Type"); ct != "application/connect+json" {
		w.Header().Set("Accept-Post", "application/connect+json, application/connect+proto")
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	if enc := r.Header.Get("Connect-Content-Encoding"); enc != "" && enc != "identity" {
		writeConnectError(w, cerr("unimplemented", "unknown compression %q", enc))
		return
	}
	var timeout time.Duration
	if v := r.Header.Get("Connect-Timeout-Ms"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 || len(v) > 10 {
			writeConnectError(w, cerr("invalid_argument", "protocol error: invalid timeout %q", v))
			return
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	keepalive := 90 * time.Second
	if v := r.Header.Get("Keepalive-Ping-Interval"); v != "" {
		if sec, err := strconv.Atoi(v); err == nil && sec > 0 {
			keepalive = time.Duration(sec) * time.Second
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeConnectError(w, cerr("internal", "read body: %v", err))
		return
	}
	// From here on errors travel in the end-of-stream message, HTTP 200.
	w.Header().Set("Content-Type", "application/connect+json")
	fail := func(e *connectError) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(endStreamFrame(e))
	}
	if len(body) < 5 {
		fail(cerr("invalid_argument", "protocol error: incomplete envelope"))
		return
	}
	n := binary.BigEndian.Uint32(body[1:5])
	switch {
	case body[0] != 0:
		fail(cerr("internal", "protocol error: invalid envelope flags %d", body[0]))
		return
	case int(n) != len(body)-5:
		fail(cerr("unknown", "protocol error: envelope length %d but %d bytes follow (exactly one message expected)", n, len(body)-5))
		return
	}
	var req startReq
	if e := decodeMessage(body[5:], &req); e != nil {
		fail(e)
		return
	}
	switch {
	case req.Stdin == nil:
		fail(cerr("invalid_argument", "e2bfake: send \"stdin\": false explicitly; when absent envd keeps a stdin pipe open and commands reading stdin hang"))
		return
	case *req.Stdin:
		fail(cerr("invalid_argument", "e2bfake: stdin=true is not supported by the fake; send \"stdin\": false"))
		return
	case len(req.Pty) > 0 && string(req.Pty) != "null":
		fail(cerr("unimplemented", "e2bfake: pty is not supported"))
		return
	case req.Process.Cmd == "":
		fail(cerr("invalid_argument", "process.cmd is required"))
		return
	}
	cwd := s.Home
	if req.Process.Cwd != nil {
		cwd = s.resolve(*req.Process.Cwd)
	}
	if _, err := os.Stat(cwd); errors.Is(err, fs.ErrNotExist) {
		fail(cerr("invalid_argument", "cwd '%s' does not exist", cwd))
		return
	}
	cmd := exec.Command(req.Process.Cmd, req.Process.Args...)
	cmd.Dir = cwd
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.Home, "USER=" + User, "LOGNAME=" + User}
	for k, v := range sb.EnvVars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range req.Process.Envs {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, err1 := cmd.StdoutPipe()
	stderr, err2 := cmd.StderrPipe()
	if err := errors.Join(err1, err2); err != nil {
		fail(cerr("internal", "error creating pipes: %v", err))
		return
	}
	if err := cmd.Start(); err != nil {
		fail(cerr("invalid_argument", "error starting process '%s': %v", strings.Join(append([]string{req.Process.Cmd}, req.Process.Args...), " "), err))
		return
	}
	pid := cmd.Process.Pid
	s.mu.Lock()
	s.procs[pid] = cmd
	s.mu.Unlock()

	gone := make(chan struct{}) // closed when the handler returns
	defer close(gone)
	events := make(chan []byte, 64)
	var readers sync.WaitGroup
	read := func(rd io.Reader, key string) {
		defer readers.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := rd.Read(buf)
			if n > 0 {
				msg := eventFrame(map[string]any{"data": map[string][]byte{key: append([]byte(nil), buf[:n]...)}})
				select {
				case events <- msg:
				case <-gone: // nobody listens: keep draining the pipe
				}
			}
			if err != nil {
				return
			}
		}
	}
	readers.Add(2)
	go read(stdout, "stdout")
	go read(stderr, "stderr")
	exited := make(chan map[string]any, 1)
	go func() {
		readers.Wait()
		err := cmd.Wait()
		s.mu.Lock()
		delete(s.procs, pid)
		s.mu.Unlock()
		end := map[string]any{"status": cmd.ProcessState.String()}
		if c := cmd.ProcessState.ExitCode(); c != 0 {
			end["exitCode"] = c
		}
		if cmd.ProcessState.Exited() {
			end["exited"] = true
		}
		if err != nil {
			end["error"] = err.Error()
		}
		exited <- end
	}()

	flusher, _ := w.(http.Flusher)
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	if !write(eventFrame(map[string]any{"start": map[string]any{"pid": pid}})) {
		return
	}
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	idle := time.NewTimer(keepalive)
	defer idle.Stop()
	for {
		select {
		case msg := <-events:
			if !write(msg) {
				return
			}
			idle.Reset(keepalive)
		case end := <-exited:
			for drained := false; !drained; {
				select {
				case msg := <-events:
					if !write(msg) {
						return
					}
				default:
					drained = true
				}
			}
			if write(eventFrame(map[string]any{"end": end})) {
				write(endStreamFrame(nil))
			}
			return
		case <-deadline:
			// Like exec.CommandContext in envd: only this process is killed.
			_ = cmd.Process.Kill()
			write(endStreamFrame(cerr("deadline_exceeded", "context deadline exceeded")))
			return
		case <-idle.C:
			if !write(eventFrame(map[string]any{"keepalive": map[string]any{}})) {
				return
			}
			idle.Reset(keepalive)
		case <-r.Context().Done():
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
	type written struct {
		Path string `json:"path"`
		Name string `json:"name"`
		Type string `json:"type"`
	}
	var out []written
	put := func(dst string, rd io.Reader) (int, string) {
		p := s.resolve(dst)
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
		out = append(out, written{Path: p, Name: filepath.Base(p), Type: "file"})
		return 0, ""
	}
	switch mt {
	case "application/octet-stream":
		if !q.Has("path") {
			plainError(w, http.StatusBadRequest, "path is required for an octet-stream upload")
			return
		}
		if status, msg := put(q.Get("path"), r.Body); status != 0 {
			plainError(w, status, msg)
			return
		}
	case "multipart/form-data":
		if params["boundary"] == "" {
			plainError(w, http.StatusBadRequest, "multipart boundary missing")
			return
		}
		mr, err := r.MultipartReader()
		if err != nil {
			plainError(w, http.StatusBadRequest, "error parsing multipart: "+err.Error())
			return
		}
		seen := map[string]bool{}
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				plainError(w, http.StatusBadRequest, "error reading multipart: "+err.Error())
				return
			}
			if part.FormName() != "file" {
				continue
			}
			dst := part.FileName()
			if q.Has("path") {
				dst = q.Get("path")
			}
			if dst == "" {
				plainError(w, http.StatusBadRequest, "part without a destination path")
				return
			}
			if seen[dst] {
				plainError(w, http.StatusBadRequest, fmt.Sprintf("cannot upload multiple files to the same path '%s'", dst))
				return
			}
			seen[dst] = true
			if status, msg := put(dst, part); status != 0 {
				plainError(w, status, msg)
				return
			}
		}
		if len(out) == 0 {
			plainError(w, http.StatusBadRequest, "no file part in the request")
			return
		}
	default:
		plainError(w, http.StatusBadRequest, fmt.Sprintf("unsupported content type %q", mt))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func statusFor(err error) int {
	if errors.Is(err, fs.ErrPermission) {
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}
