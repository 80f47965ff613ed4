package e2b

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/backend"
)

// Backend is one E2B sandbox. It is safe for concurrent use.
type Backend struct {
	envd
	envdVersion string

	mu   sync.Mutex
	home string
}

var _ backend.Backend = (*Backend)(nil)

// New connects to or creates a sandbox: the sandbox Config.SandboxID if
// set; else a running or paused sandbox whose metadata carries
// Config.WorkspaceID (resumed if paused); else a new one. It then creates
// Config.Workdir.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	cfg.setDefaults()
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("e2b: no API key (set Config.APIKey or E2B_API_KEY): %w", ErrAuth)
	}
	a := &api{cfg: cfg}
	id := cfg.SandboxID
	if id == "" && cfg.WorkspaceID != "" {
		var err error
		if id, err = a.workspaceSandbox(ctx, cfg.WorkspaceID); err != nil {
			return nil, err
		}
	}
	var sb *sandbox
	var err error
	if id != "" {
		sb, err = a.connect(ctx, id)
		if err != nil && errors.Is(err, ErrNotFound) && cfg.SandboxID == "" {
			id = "" // gone between list and connect: create instead
		} else if err != nil {
			return nil, err
		}
	}
	if id == "" {
		if sb, err = a.create(ctx, sandboxMetadata(cfg)); err != nil {
			return nil, err
		}
	}
	b := &Backend{envd: envd{api: a, sandboxID: sb.SandboxID, token: sb.EnvdAccessToken}, envdVersion: sb.EnvdVersion}
	if !validEnvd(sb.EnvdVersion) {
		_ = b.Kill(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("e2b: sandbox %s runs unsupported envd version %q", sb.SandboxID, sb.EnvdVersion)
	}
	domain := cfg.Domain
	if sb.Domain != nil && *sb.Domain != "" {
		domain = *sb.Domain
	}
	b.baseURL = cfg.SandboxURL
	if b.baseURL == "" {
		b.baseURL = "https://" + strconv.Itoa(EnvdPort) + "-" + sb.SandboxID + "." + domain
	}
	if err := b.mkdirAll(ctx, cfg.Workdir); err != nil {
		return nil, fmt.Errorf("e2b: create workdir: %w", err)
	}
	return b, nil
}

// workspaceSandbox returns the id of the sandbox of the workspace
// workspaceID, or "" when it has none: a running one if any, else the most
// recently started.
func (a *api) workspaceSandbox(ctx context.Context, workspaceID string) (string, error) {
	found, err := a.list(ctx, map[string]string{WorkspaceMetadataKey: workspaceID})
	if err != nil {
		return "", err
	}
	if len(found) == 0 {
		return "", nil
	}
	// Prefer a running sandbox, then the most recently started.
	sort.SliceStable(found, func(i, j int) bool {
		if (found[i].State == "running") != (found[j].State == "running") {
			return found[i].State == "running"
		}
		return found[i].StartedAt.After(found[j].StartedAt)
	})
	return found[0].SandboxID, nil
}

// sandboxMetadata is the metadata a new sandbox is created with:
// Config.Metadata and, when set, the workspace id.
func sandboxMetadata(cfg Config) map[string]string {
	md := map[string]string{}
	for k, v := range cfg.Metadata {
		md[k] = v
	}
	if cfg.WorkspaceID != "" {
		md[WorkspaceMetadataKey] = cfg.WorkspaceID
	}
	return md
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return "e2b" }

// SandboxID is the E2B id of the sandbox.
func (b *Backend) SandboxID() string { return b.sandboxID }

// EnvdVersion is the envd version the sandbox reported.
func (b *Backend) EnvdVersion() string { return b.envdVersion }

// Workdir is the default working directory for Exec.
func (b *Backend) Workdir() string { return b.cfg.Workdir }

// SetTimeout makes the sandbox expire d from now (whole seconds, rounded
// up).
func (b *Backend) SetTimeout(ctx context.Context, d time.Duration) error {
	_, err := b.control(ctx, "set timeout", http.MethodPost, "/sandboxes/"+url.PathEscape(b.sandboxID)+"/timeout", true,
		map[string]int32{"timeout": timeoutSeconds(d)}, nil, http.StatusNoContent)
	return err
}

// Kill destroys the sandbox. Killing a sandbox that is already gone is
// not an error.
func (b *Backend) Kill(ctx context.Context) error {
	_, err := b.control(ctx, "kill sandbox", http.MethodDelete, "/sandboxes/"+url.PathEscape(b.sandboxID), true, nil, nil, http.StatusNoContent)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Close kills the sandbox, bounded to 30 s. To keep a sandbox for a later
// reconnect by WorkspaceID, do not call Close: it expires after
// Config.Timeout.
func (b *Backend) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b.Kill(ctx)
}

// List returns the running and paused sandboxes of the API key whose
// metadata contains every pair in metadata (all of them for nil).
func (b *Backend) List(ctx context.Context, metadata map[string]string) ([]SandboxInfo, error) {
	return b.list(ctx, metadata)
}

// Exec implements backend.Backend with envd process Start.
//
// The command runs as "setsid -w -- argv…" so it leads its own process
// group: envd kills only the process it started when Connect-Timeout-Ms
// passes, so on a timeout or cancellation the backend kills the whole
// group itself. Stdin, when set, is uploaded to a temporary file that the
// command reads from (envd's stdin streaming needs extra RPCs and envd
// >= 0.5.2); Start is always sent with "stdin":false.
func (b *Backend) Exec(ctx context.Context, req backend.ExecRequest) (backend.ExecResult, error) {
	if len(req.Argv) == 0 {
		return backend.ExecResult{}, errors.New("e2b exec: empty argv")
	}
	start := time.Now()
	pc := processConfig{Cmd: "setsid", Args: append([]string{"-w", "--"}, req.Argv...), Cwd: req.Dir}
	if pc.Cwd == "" {
		pc.Cwd = b.cfg.Workdir
	}
	// ExecEnv, then the call's trace context, then the request's own
	// entries: the same order as the local and Docker backends.
	env := append(append(append([]string(nil), b.cfg.ExecEnv...), backend.TraceEnv(ctx)...), req.Env...)
	if len(env) > 0 {
		pc.Envs = map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			pc.Envs[k] = v
		}
	}
	if req.Stdin != nil {
		f, err := b.stdinFile(ctx, req.Stdin)
		if err != nil {
			return backend.ExecResult{}, err
		}
		// The script opens the file as stdin, removes it and execs.
		pc.Args = append([]string{"-c", `f=$1; shift; exec <"$f" || exit 126; rm -f -- "$f"; exec setsid -w -- "$@"`, "warden-exec", f}, req.Argv...)
		pc.Cmd = "/bin/sh"
	}
	res, pid, err := b.run(ctx, pc, req.Timeout, req.MaxOutput)
	res.Duration = time.Since(start)
	if pid != 0 && (res.TimedOut || ctx.Err() != nil) {
		b.killGroup(context.WithoutCancel(ctx), pid)
	}
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("e2b exec: %w", ctx.Err())
		}
		return res, fmt.Errorf("e2b exec: %w", err)
	}
	return res, nil
}

// run starts one process and collects its output. It returns the pid once
// the start event was seen.
func (b *Backend) run(ctx context.Context, pc processConfig, timeout time.Duration, maxOutput int) (backend.ExecResult, uint32, error) {
	var res backend.ExecResult
	var pid uint32
	if timeout > 0 {
		// A safety net beyond envd's own deadline, should it not answer.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout+30*time.Second)
		defer cancel()
	}
	body, err := b.stream(ctx, "process.Process/Start", startRequest{Process: pc, Stdin: false}, timeout)
	if err != nil {
		return res, 0, err
	}
	defer body.Close()
	stdout := &backend.CappedBuffer{Max: maxOutput}
	stderr := &backend.CappedBuffer{Max: maxOutput}
	ended := false
	err = readStream("process.Process/Start", body, func(msg []byte) error {
		var m struct {
			Event processEvent `json:"event"`
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			return fmt.Errorf("decode process event: %w", err)
		}
		switch ev := m.Event; {
		case ev.Start != nil:
			pid = ev.Start.Pid
		case ev.Data != nil:
			_, _ = stdout.Write(ev.Data.Stdout)
			_, _ = stdout.Write(ev.Data.Pty)
			_, _ = stderr.Write(ev.Data.Stderr)
		case ev.End != nil:
			ended = true
			res.ExitCode = int(ev.End.ExitCode)
		}
		return nil
	})
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	res.Truncated = stdout.Truncated() || stderr.Truncated()
	var rpcErr *RPCError
	switch {
	case err == nil && ended:
		return res, pid, nil
	case err == nil:
		return res, pid, errors.New("process stream ended without an end event")
	case errors.As(err, &rpcErr) && rpcErr.Code == "deadline_exceeded" && rpcErr.StatusCode == http.StatusOK && timeout > 0,
		ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && timeout > 0:
		// envd reports the Connect-Timeout-Ms deadline as an error
		// trailer; for a tool it is a timed-out command, not a failure.
		// A proxy's HTTP 504 (also deadline_exceeded, but not in a
		// trailer) is not: it leaves the outcome unknown.
		res.ExitCode, res.TimedOut = -1, true
		return res, pid, nil
	}
	return res, pid, err
}

// killGroup kills the process group led by pid (see Exec), best effort.
func (b *Backend) killGroup(ctx context.Context, pid uint32) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	pc := processConfig{Cmd: "/bin/sh", Args: []string{"-c", `kill -KILL "-$1" 2>/dev/null; true`, "warden-kill", strconv.FormatUint(uint64(pid), 10)}}
	_, _, _ = b.run(ctx, pc, 10*time.Second, 4096)
}

// stdinFile uploads data to a fresh temporary file and returns its path.
func (b *Backend) stdinFile(ctx context.Context, data []byte) (string, error) {
	var r [12]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("e2b exec: %w", err)
	}
	p := "/tmp/warden-stdin-" + hex.EncodeToString(r[:])
	if err := b.upload(ctx, p, data); err != nil {
		return "", fmt.Errorf("e2b exec: stage stdin: %w", err)
	}
	return p, nil
}

// ReadFile implements backend.Backend with GET /files.
func (b *Backend) ReadFile(ctx context.Context, p string) ([]byte, error) {
	data, err := b.download(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("e2b read %s: %w", p, err)
	}
	return data, nil
}

// WriteFile implements backend.Backend with a multipart POST /files,
// which creates parent directories.
func (b *Backend) WriteFile(ctx context.Context, p string, data []byte) error {
	if err := b.upload(ctx, p, data); err != nil {
		return fmt.Errorf("e2b write %s: %w", p, err)
	}
	return nil
}

// Stat implements backend.Backend with filesystem Stat.
func (b *Backend) Stat(ctx context.Context, p string) (backend.FileInfo, error) {
	var out struct {
		Entry entryInfo `json:"entry"`
	}
	if err := b.unary(ctx, "filesystem.Filesystem/Stat", map[string]string{"path": p}, &out); err != nil {
		return backend.FileInfo{}, fmt.Errorf("e2b stat %s: %w", p, err)
	}
	return fileInfo(out.Entry), nil
}

// ListDir implements backend.Backend with filesystem ListDir (depth 1).
func (b *Backend) ListDir(ctx context.Context, p string) ([]backend.FileInfo, error) {
	var out struct {
		Entries []entryInfo `json:"entries"`
	}
	in := struct {
		Path  string `json:"path"`
		Depth uint32 `json:"depth"`
	}{p, 1}
	if err := b.unary(ctx, "filesystem.Filesystem/ListDir", in, &out); err != nil {
		return nil, fmt.Errorf("e2b list %s: %w", p, err)
	}
	infos := make([]backend.FileInfo, 0, len(out.Entries))
	for _, e := range out.Entries {
		if e.Type == "" || e.Type == "FILE_TYPE_UNSPECIFIED" {
			continue // the SDK skips these too
		}
		infos = append(infos, fileInfo(e))
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	return infos, nil
}

// Home implements backend.Backend: the sandbox user's $HOME, asked once.
func (b *Backend) Home(ctx context.Context) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.home != "" {
		return b.home, nil
	}
	res, _, err := b.run(ctx, processConfig{Cmd: "/bin/sh", Args: []string{"-c", `printf %s "$HOME"`}}, 30*time.Second, 4096)
	if err != nil {
		return "", fmt.Errorf("e2b home: %w", err)
	}
	h := string(res.Stdout)
	if res.ExitCode != 0 || !path.IsAbs(h) {
		return "", fmt.Errorf("e2b home: unexpected $HOME %q (exit %d)", h, res.ExitCode)
	}
	b.home = h
	return h, nil
}

// mkdirAll creates a directory; an existing one is fine.
func (b *Backend) mkdirAll(ctx context.Context, p string) error {
	err := b.unary(ctx, "filesystem.Filesystem/MakeDir", map[string]string{"path": p}, nil)
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) && rpcErr.Code == "already_exists" {
		return nil
	}
	return err
}

func fileInfo(e entryInfo) backend.FileInfo {
	name := e.Name
	if name == "" {
		name = path.Base(e.Path)
	}
	return backend.FileInfo{Name: name, Size: int64(e.Size), ModTime: e.ModifiedTime, IsDir: e.Type == "FILE_TYPE_DIRECTORY"}
}
