// Package local runs tools on the worker's own machine. Every process
// runs in a kernel sandbox shaped by its call (package sandbox) unless
// the backend is explicitly unsandboxed; the file operations, which run
// inside the worker, refuse the worker's own /proc entries, the hidden
// paths, and links that lead out of the call's working directories.
package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local/cgroup"
	"github.com/wardenhq/warden/backend/local/egress"
	"github.com/wardenhq/warden/backend/local/sandbox"
	"github.com/wardenhq/warden/backend/local/sandbox/child"
	"github.com/wardenhq/warden/calls"
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
	// Hide lists host paths no tool may see: the worker's data directory
	// and config file, credentials named by the policy. Tool processes
	// find them empty; the file operations refuse them, through links
	// too.
	Hide []string
	// CacheDir is where sandboxed tools keep their build and package
	// caches (GOCACHE, npm's and pip's caches, XDG_CACHE_HOME point into
	// it unless the environment sets them): writable by every call that
	// may write, and never the user's own caches, which a sandboxed
	// process could poison for builds run outside warden. Empty:
	// the user cache directory's warden/sandbox.
	CacheDir string
	// Read lists paths every sandboxed process may read beyond the
	// system's shared roots, its working directories and the toolchains
	// on its PATH under the home directory (backend.local.read).
	Read []string
	// Sensitive are sensitive path patterns beyond
	// permission.DefaultSensitivePaths (the policy's sensitive_paths):
	// the files inside a call's working directories they match are
	// hidden from its processes unless its profile grants the read.
	Sensitive []string
	// Unsandboxed runs tool processes as the worker's user with its file
	// system and network (backend.local.sandbox: off). The zero value
	// sandboxes every process, and a kernel without Landlock or user
	// namespaces then fails every call.
	Unsandboxed bool
	// Egress, when not nil, sees every connection a sandboxed call's
	// processes asked the egress proxy for (metrics).
	Egress egress.Observer
	// Network bounds what the egress proxy spends on each call
	// (backend.local.network); zero fields take egress.DefaultLimits.
	Network egress.Limits
	// NetworkShared bounds the egress proxy's connections and buffers
	// across calls; nil: egress.NewShared's defaults, made at the first
	// call with the network.
	NetworkShared *egress.Shared
	// HostAddressesOff lets calls with the network reach the machine's
	// own addresses like public ones (backend.local.sandbox_off:
	// [host_addresses]); the zero value refuses them unless a host entry
	// names the address.
	HostAddressesOff bool
	// Broker, when not nil, holds the brokered secrets (backend.secrets):
	// every sandboxed process gets each secret's placeholder under its
	// name, and a call with the network the broker's CA bundle (its
	// directory readable, the TLS clients pointed at it) and a proxy
	// that puts the values in the headers of the requests to the
	// secrets' hosts. The values never enter a tool process.
	Broker *egress.Broker
	// brokerDir is the bundle directory of a broker the backend made
	// itself (broker), removed at Close.
	brokerDir string
	// Limits bound each sandboxed call whose profile names no Limits of
	// its own (backend.local.limits; DefaultLimits): its processes,
	// memory and CPU through cgroups where the worker can make them, its
	// TMPDIR's size and the bytes it may add to the disks it writes. The
	// zero value bounds nothing.
	Limits calls.Limits
	// NoCPUShare leaves a call without a CPU group of its own when it
	// has no CPU bound (backend.local.limits.cpu_share: off; cgroup v1:
	// its processes then compete for the CPU one by one, as the worker's
	// threads do). The zero value gives every call its group.
	NoCPUShare bool
	// DiskReserve is the free space kept on each file system a call
	// writes, for the worker and the calls beside it
	// (backend.local.limits.disk_reserve): 0 is DefaultDiskReserve, a
	// negative value turns it off. See reserveOf.
	DiskReserve int64
	// Off names the sandbox's layers turned off, one at a time for a
	// test's control (backend.local.sandbox_off, config.LocalLayers):
	// "new_session" leaves tool processes in the worker's session (its
	// terminal), "tty_ioctls" lets them push input into a terminal,
	// "unix_sockets" lets every call create unix sockets, "keyring"
	// leaves them the worker's session keyring and the keyring calls.
	// Names of other parts' layers are theirs.
	Off []string

	// cg makes the calls' cgroups (opened at the first call that needs
	// one); cgErr says why there are none.
	cgMu  sync.Mutex
	cg    *cgroup.Manager
	cgErr error
	// running are the limits of the calls running now and of those that
	// ended while one of them ran, with when they ended (zero: running).
	runMu   sync.Mutex
	running map[*limiter]time.Time

	// zygote starts the sandboxed processes (started at the first one);
	// zygoteHidden is what it hides.
	mu           sync.Mutex
	zygote       *sandbox.Zygote
	zygoteHidden []string

	// NoGitGuard turns the repository guard off (guard.go: the .git
	// directories, repositories, hooks directories, sensitive and
	// dangerous files of a call's working directories are then neither
	// hidden, protected nor checked after the call): a control for
	// tests that must see one layer alone (backend.local.sandbox_off:
	// [git_guard]), never a setting for use.
	NoGitGuard bool

	// GuardMaxDirs bounds the directories the guard indexes in the
	// working directories (backend.local.guard_max_dirs; 250,000 when
	// 0): a call that makes them hold more is stopped and the trees it
	// created moved out.
	GuardMaxDirs int

	// idx indexes the working directories for the guard (guard.go),
	// made at the first call.
	idx *index

	// snap is the latest snapshot of the hidden paths (hidden).
	idMu sync.Mutex
	snap *hiddenSnap

	// FileToolsOff lets the file operations act on any path the worker
	// may (backend.local.sandbox_off: [file_tools], a test's control):
	// they no longer hold the call's profile (fileaccess.go). The other
	// checks of the file operations stay.
	FileToolsOff bool
	// walk is what anyone may read of the walked roots, for the file
	// operations; sens the sensitive-path matcher.
	walkMu sync.Mutex
	walk   *child.Readable
	sens   *matcher
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
	dir := req.Dir
	if dir == "" {
		dir = b.Workdir
	}
	// A clean environment: the worker's secrets never reach a tool.
	env := backend.ToolEnv(os.Environ(), b.Env, append(backend.TraceEnv(ctx), req.Env...))
	stdout := &backend.CappedBuffer{Max: req.MaxOutput, Tee: tee(out, 1)}
	stderr := &backend.CappedBuffer{Max: req.MaxOutput, Tee: tee(out, 2)}
	// The hidden files' identities, taken before the process can move
	// them: the file tools know them under the names a call gives them.
	b.hidden(true)
	if b.Unsandboxed {
		return b.execDirect(ctx, req, dir, env, nil, stdout, stderr)
	}
	// One confinement (and one temporary directory) for the call, whichever
	// way its process is started.
	c, cleanup, err := b.confine(ctx, dir, env)
	if err != nil {
		return backend.ExecResult{}, err
	}
	defer cleanup()
	lim := b.Limits
	if c.prof.Limits != nil {
		lim = *c.prof.Limits
	}
	lctx, l, err := b.limitCall(ctx, lim, c.write, c.tmp, c.cache)
	if err != nil {
		return backend.ExecResult{}, err
	}
	c.limits = l
	res, err := b.viaZygote(lctx, req, dir, &c, stdout, stderr)
	if errors.Is(err, errNoZygote) {
		// Nothing ran: a sandbox of its own (a re-executed helper).
		res, err = b.execDirect(lctx, req, dir, env, &c, stdout, stderr)
	}
	err = l.finish(lctx, &res, err, c.ended)
	// The call's processes are gone: undo what no mount could prevent.
	res, err = c.guard.verify(res, err)
	if err == nil && res.Limit == "" {
		// A failure the sandbox probably caused says so, and how to ask.
		if n := stoppedNote(c.prof, c.write, dir, res); n != "" {
			if len(res.Stderr) > 0 && !bytes.HasSuffix(res.Stderr, []byte("\n")) {
				res.Stderr = append(res.Stderr, '\n')
			}
			res.Stderr = append(res.Stderr, n...)
		}
	}
	return res, err
}

// execDirect runs req as a process of its own, built by command (in the
// sandbox c, or unsandboxed with env when c is nil), with the output
// going to stdout and stderr. A program that cannot be started is
// reported as exit code 127, like a shell would.
func (b *Backend) execDirect(ctx context.Context, req backend.ExecRequest, dir string, env []string, c *confinement, stdout, stderr *backend.CappedBuffer) (backend.ExecResult, error) {
	var px *callProxy
	if c != nil {
		ctx, px = b.proxyFor(ctx, c.proxy)
		defer px.done()
	}
	cmd, recv, err := b.command(ctx, req, dir, env, c)
	if err != nil {
		return backend.ExecResult{}, err
	}
	if req.Stdin != nil {
		cmd.Stdin = bytes.NewReader(req.Stdin)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own session (command), whose process group a timeout kills
	// with its children, and a parent-death signal so a killed worker
	// does not leave it running (side-effecting calls are at-most-once:
	// they must not finish behind the workflow's back).
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	if recv == nil {
		err = cmd.Run()
	} else {
		err = runProxied(cmd, recv, px)
	}
	res := backend.ExecResult{
		Stdout:    stdout.Bytes(),
		Stderr:    stderr.Bytes(),
		Truncated: stdout.Truncated() || stderr.Truncated(),
		Duration:  time.Since(start),
	}
	over := px.result(&res)
	var exitErr *exec.ExitError
	switch {
	case over: // a bound of the egress proxy ended the call
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

// command builds the process of req: in the sandbox c (made by
// confine), or, when c is nil (Unsandboxed), as the worker's user with
// the environment env. For a call with the network, recv receives the
// listener of its egress proxy once the process started (nil for
// others).
func (b *Backend) command(ctx context.Context, req backend.ExecRequest, dir string, env []string, c *confinement) (cmd *exec.Cmd, recv func() (net.Listener, error), err error) {
	if c == nil {
		// Unsandboxed, it still leads a session of its own: no
		// controlling terminal, so the worker's terminal is not its.
		cmd := exec.CommandContext(ctx, req.Argv[0], req.Argv[1:]...)
		session := !slices.Contains(b.Off, sandbox.LayerNewSession)
		cmd.Dir, cmd.Env, cmd.SysProcAttr = dir, env, &syscall.SysProcAttr{Setsid: session, Setpgid: !session}
		return cmd, nil, nil
	}
	spec := sandbox.Spec{Write: c.write, Protect: c.protect, Pin: c.pin, Read: c.read, Dir: dir, Argv: req.Argv, Keep: b.keep(c.prof)}
	spec.Hide = append(hidden(b.hide(), append([]string{dir}, spec.Write...)), c.hide...)
	var cgroups []*os.File
	if c.limits != nil {
		r := sandbox.Request{}
		cgroups = c.limits.request(&r, c.tmp)
		spec.Cgroups, spec.Rlimits, spec.Tmp, spec.TmpSize = len(cgroups), r.Rlimits, r.Tmp, r.TmpSize
	}
	if c.proxy != nil {
		cmd, recv, err = sandbox.CommandProxy(ctx, spec, c.env)
	} else {
		cmd, err = sandbox.Command(ctx, spec, c.env)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("local exec: %w", err)
	}
	// The cgroup.procs files follow the proxy's socket (child.Spec.Cgroups).
	cmd.ExtraFiles = append(cmd.ExtraFiles, cgroups...)
	return cmd, recv, nil
}

// runProxied runs cmd (from sandbox.CommandProxy) while serving its
// egress proxy px on the listener recv returns; it returns once the
// process has ended and the proxy with it.
func runProxied(cmd *exec.Cmd, recv func() (net.Listener, error), px *callProxy) error {
	if err := cmd.Start(); err != nil {
		_, _ = recv() // closes the sockets
		return err
	}
	served := make(chan struct{})
	ln, err := recv()
	if err != nil {
		// The helper ended before it listened: it says why (exit 126).
		close(served)
	} else {
		go func() { defer close(served); px.serve(ln) }()
	}
	err = cmd.Wait()
	if ln != nil {
		ln.Close()
	}
	<-served
	return err
}

// confinement is what one sandboxed process of a call gets, whichever
// way it is started.
type confinement struct {
	prof *calls.Sandbox
	// write are the paths it may write, as Landlock can grant them: the
	// profile's, its private temporary directory and, for a call that
	// may write, the sandbox cache.
	write, protect []string
	// hide and pin are the call's own hidden and pinned paths (sensitive
	// files and git directories of its working directories); read the
	// paths it may read beyond the system's shared roots.
	hide, pin, read []string
	// env is its environment, TMPDIR and the caches included.
	env []string
	// proxy, for a call with the network, is the policy of its egress
	// proxy, its only way out.
	proxy *egress.Policy
	// guard checks the working directories after the call (guard.go).
	guard *guardCall
	// tmp is its private TMPDIR; limits hold it to its limits (limits.go),
	// and ended is how its process ended, as the zygote saw it.
	tmp, cache string
	limits     *limiter
	ended      sandbox.Result
}

// keep is what the processes of a call with the profile prof keep of
// the channels beyond files and network: the layers b.Off turns off,
// and unix sockets when the call's verdict grants them.
func (b *Backend) keep(prof *calls.Sandbox) sandbox.Channels {
	return sandbox.Keep(b.Off, prof != nil && prof.UnixSockets)
}

// profile is the sandbox profile of the call ctx is bound to
// (backend.WithSandbox), or the default one of the workdir: the one place
// the backend reads a call's profile, for its processes and its files.
func (b *Backend) profile(ctx context.Context) *calls.Sandbox {
	if s := backend.SandboxFrom(ctx); s != nil {
		return s
	}
	return calls.DefaultSandbox(b.Workdir)
}

// confine prepares the sandbox of a process run in dir: the call's profile,
// a private temporary directory and the grants made for it, which
// cleanup removes, and the caches.
func (b *Backend) confine(ctx context.Context, dir string, env []string) (confinement, func(), error) {
	prof := b.profile(ctx)
	tmp, err := os.MkdirTemp("", "warden-tool-")
	if err != nil {
		return confinement{}, nil, fmt.Errorf("local exec: private temporary directory: %w", err)
	}
	g := grantable(prof.Write, prof.Dirs)
	cleanup := func() {
		_ = os.RemoveAll(tmp)
		g.undo()
	}
	c := confinement{prof: prof, write: append(g.paths, tmp), protect: realPaths(prof.Protect), tmp: tmp}
	env, cache := b.cacheEnv(env, prof)
	if cache != "" {
		c.write, c.cache = append(c.write, cache), cache
	}
	br, err := b.broker(prof)
	if err != nil {
		cleanup()
		return confinement{}, nil, err
	}
	c.env = br.Env(append(env, "TMPDIR="+tmp), prof.Network)
	reads := append([]string{dir}, prof.Dirs...)
	if prof.Network {
		p := egressPolicy(prof)
		c.proxy, c.env = &p, egress.Env(c.env)
		if br != nil {
			reads = append(reads, filepath.Dir(br.Bundle()))
		}
	}
	if c.hide, c.pin, c.protect, c.guard, err = b.guard(prof, c.write, c.protect); err != nil {
		cleanup()
		return confinement{}, nil, err
	}
	c.read = b.reads(reads, c.env)
	return c, cleanup, nil
}

// reads is what a sandboxed process may read beyond the system's shared
// roots and its write paths: its working directories, the backend's
// Read list, and from the home directory the toolchains on the
// process's PATH (the first directory below home of each PATH entry
// under it: ~/.pyenv, ~/.cargo with ~/.rustup, ~/go) and git's
// configuration (~/.gitconfig, ~/.config/git). Never the home directory
// itself, nor a hidden path.
func (b *Backend) reads(dirs, env []string) []string {
	out := realPaths(dirs)
	add := func(p string) {
		if _, err := os.Lstat(p); err != nil {
			return
		}
		for _, r := range realPaths([]string{p}) {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	for _, p := range b.Read {
		add(p)
	}
	for _, p := range sandbox.HomeReads(env, b.hide()) {
		add(p)
	}
	return out
}

// cacheEnv points the caches of env into the backend's cache directory
// for a call that may write, and returns the directory to make writable
// ("" for a read-only call, or when it cannot be created).
func (b *Backend) cacheEnv(env []string, prof *calls.Sandbox) ([]string, string) {
	if len(prof.Write) == 0 {
		return env, ""
	}
	dir := b.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return env, ""
		}
		dir = filepath.Join(base, "warden", "sandbox")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return env, ""
	}
	set := map[string]bool{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	for _, kv := range []string{"XDG_CACHE_HOME=" + dir, "GOCACHE=" + filepath.Join(dir, "go-build"),
		"npm_config_cache=" + filepath.Join(dir, "npm"), "PIP_CACHE_DIR=" + filepath.Join(dir, "pip")} {
		if name, _, _ := strings.Cut(kv, "="); !set[name] {
			env = append(env, kv)
		}
	}
	return env, dir
}

// hide is every path the backend keeps from tools: its Hide list, the
// credentials in the home directory (CredentialPaths) and /run, where the
// sockets of the machine's daemons (Docker's among them) live.
func (b *Backend) hide() []string {
	out := append(realPaths(b.Hide), "/run")
	if home, err := os.UserHomeDir(); err == nil {
		for _, p := range CredentialPaths(home) {
			if _, err := os.Lstat(p); err == nil {
				out = append(out, realPaths([]string{p})...)
			}
		}
	}
	return out
}

// CredentialPaths are the credential files and directories under home
// that tool processes find empty (the default sensitive paths that name
// a place rather than a pattern): SSH and GnuPG keys, cloud, cluster and
// registry credentials.
func CredentialPaths(home string) []string {
	var out []string
	for _, p := range []string{".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker/config.json",
		".npmrc", ".pypirc", ".netrc", ".git-credentials", ".config/gh", ".cargo/credentials", ".cargo/credentials.toml",
		".terraform.d/credentials.tfrc.json"} {
		out = append(out, filepath.Join(home, p))
	}
	return out
}

// hidden keeps the paths of hide that hold none of keep (a working
// directory inside a hidden tree stays visible: the path checks decided
// it).
func hidden(hide, keep []string) []string {
	var out []string
	for _, h := range hide {
		if !slices.ContainsFunc(keep, func(k string) bool { return within(k, h) }) {
			out = append(out, h)
		}
	}
	return out
}

// grant is what confine made of a call's write paths: the paths
// Landlock grants, and what the worker created so that a path that did
// not exist yet is granted as itself (undo removes what stayed empty).
type grant struct {
	paths   []string
	created []created
}

// created is one entry the worker made for a grant: a directory, or an
// empty file with its modification time when made.
type created struct {
	path  string
	dir   bool
	mtime time.Time
	// keep: a directory the command itself makes (a mkdir target),
	// left in place after the call.
	keep bool
}

// grantable turns each write path into one Landlock can grant without
// granting anything that existed and the call was not shown: the path
// itself when it exists. Landlock grants files and directories, not
// names to come, so for a path that does not exist yet the worker
// creates it first: the missing directories between its nearest
// existing ancestor and its parent (new and empty: granting the parent
// grants nothing that was there), of which the parent is granted; or,
// when the parent exists, the path itself, an empty file (a directory
// for a path ending in "/", which the command makes with mkdir), which
// is granted alone. Nothing is granted for a path whose ancestor is not
// a directory or that cannot be made (the call then fails to write it),
// for a working directory that is gone, and never for "/". undo removes what the call left as the worker made it.
func grantable(ps, workdirs []string) grant {
	var g grant
	add := func(p string) {
		if p != "/" && !slices.Contains(g.paths, p) {
			g.paths = append(g.paths, p)
		}
	}
	for _, w := range ps {
		isDir := strings.HasSuffix(w, "/") && w != "/"
		p, err := realPath(filepath.Clean(w))
		if err != nil {
			continue
		}
		if _, err := os.Lstat(p); err == nil {
			add(p)
			continue
		}
		if slices.Contains(workdirs, filepath.Clean(w)) {
			continue // a working directory that is gone is not made again
		}
		parent := filepath.Dir(p)
		var missing []string
		for q := parent; ; q = filepath.Dir(q) {
			if _, err := os.Lstat(q); err == nil || q == "/" {
				break
			}
			missing = append(missing, q)
		}
		ok := true
		for _, d := range slices.Backward(missing) {
			if err := os.Mkdir(d, 0o755); err != nil {
				ok = false
				break
			}
			g.created = append(g.created, created{path: d, dir: true})
		}
		if fi, err := os.Stat(parent); !ok || err != nil || !fi.IsDir() {
			continue
		}
		if len(missing) > 0 {
			add(parent) // new and empty: the command makes p in it
			continue
		}
		if isDir {
			if os.Mkdir(p, 0o755) == nil {
				g.created = append(g.created, created{path: p, dir: true, keep: true})
				add(p)
			}
			continue
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		f.Close()
		if err != nil {
			continue
		}
		g.created = append(g.created, created{path: p, mtime: fi.ModTime()})
		add(p)
	}
	return g
}

// undo removes, deepest first, what grantable created and the call left
// as it was: an empty file it did not write, an empty directory that is
// not a mkdir target.
func (g grant) undo() {
	for _, c := range slices.Backward(g.created) {
		fi, err := os.Lstat(c.path)
		switch {
		case err != nil || c.keep:
		case c.dir && fi.IsDir():
			_ = os.Remove(c.path) // only when empty
		case !c.dir && fi.Mode().IsRegular() && fi.Size() == 0 && fi.ModTime().Equal(c.mtime):
			_ = os.Remove(c.path)
		}
	}
}

// realPaths resolves the links in each path that exists, so that a
// mount or rule lands on the file itself; others are kept as given.
func realPaths(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		out = append(out, filepath.Clean(p))
	}
	return out
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// DefaultMaxRead bounds what ReadFile holds of one file in memory; the
// file tools ask for less (ReadFileLimit).
const DefaultMaxRead = 256 << 20

// ReadFile implements backend.Backend: ReadFileLimit with
// DefaultMaxRead.
func (b *Backend) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return b.ReadFileLimit(ctx, path, DefaultMaxRead)
}

// ReadFileLimit implements backend.LimitReader. The path is checked as
// the file it resolves to (see resolve), and the file opened is checked
// again: one of the hidden files (by identity, a hard link to one too)
// is refused, and so is anything but a regular file (opened without
// blocking, so a FIFO cannot hold the call) and a file larger than max,
// before a byte is read. At most max+1 bytes are read, in steps that
// stop when ctx is done.
func (b *Backend) ReadFileLimit(ctx context.Context, path string, max int64) ([]byte, error) {
	real, err := b.resolve(ctx, path, opRead)
	if err != nil {
		return nil, err
	}
	f, err := open(real, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := b.checkOpened(f, path, false)
	if err != nil {
		return nil, err
	}
	if err := b.holds(ctx, path, real, false); err != nil {
		return nil, err
	}
	if st.Size > max {
		return nil, fmt.Errorf("local: %w", backend.TooLarge(path, st.Size, max))
	}
	return readBounded(ctx, f, path, st.Size, max)
}

// readBounded reads f (of size bytes when opened) to its end, at most
// max bytes: more is ErrTooLarge. It checks ctx between reads.
func readBounded(ctx context.Context, f *os.File, path string, size, max int64) ([]byte, error) {
	const step = 1 << 20
	buf := make([]byte, 0, min(size, max)+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("local read %s: %w", path, err)
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(step, max+1-int64(len(buf)))))
		}
		n, err := f.Read(buf[len(buf):min(cap(buf), len(buf)+step)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, fmt.Errorf("local: %w", backend.TooLarge(path, int64(len(buf)), max))
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, wrap(err)
		}
	}
}

// WriteFile implements backend.Backend, on the file path resolves to:
// a regular file, or a new one (a FIFO, a socket or a device is refused,
// and opened without blocking).
func (b *Backend) WriteFile(ctx context.Context, path string, data []byte) error {
	real, err := b.resolve(ctx, path, opWrite)
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(real); err == nil && !fi.Mode().IsRegular() {
		return notRegular(path, fi.Mode())
	}
	if err := b.holds(ctx, path, real, true); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		return fmt.Errorf("local write: %w", err)
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Lstat(real); err == nil {
		if !fi.Mode().IsRegular() {
			return notRegular(path, fi.Mode())
		}
		mode = fi.Mode().Perm()
	}
	f, err := open(real, os.O_WRONLY|os.O_CREATE|unix.O_NONBLOCK, mode)
	if err != nil {
		return err
	}
	if _, err := b.checkOpened(f, path, true); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return wrap(err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return wrap(err)
}

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, path string) (backend.FileInfo, error) {
	real, err := b.resolve(ctx, path, opList)
	if err != nil {
		return backend.FileInfo{}, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return backend.FileInfo{}, wrap(err)
	}
	return info(fi), nil
}

// ListDir implements backend.Backend.
func (b *Backend) ListDir(ctx context.Context, path string) ([]backend.FileInfo, error) {
	real, err := b.resolve(ctx, path, opList)
	if err != nil {
		return nil, err
	}
	var a *access
	if b.confinedFiles() {
		if a, err = b.access(ctx); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		return nil, wrap(err)
	}
	h := b.hidden(false)
	out := make([]backend.FileInfo, 0, len(entries))
	for _, e := range entries {
		if h.covers(filepath.Join(real, e.Name())) {
			continue
		}
		if a != nil && !a.visible(filepath.Join(real, e.Name())) {
			continue // hidden from the call, or nothing in it the call may read: not shown
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && h.ids.has(st.Dev, st.Ino) {
			continue // one of the hidden files or directories, under another name
		}
		out = append(out, info(fi))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Sandboxed reports whether tool processes run in the kernel sandbox.
func (b *Backend) Sandboxed() bool { return !b.Unsandboxed }

// SandboxOff is SandboxState's text for an unsandboxed backend.
const SandboxOff = "OFF (backend.local.sandbox: off): tools run as the worker's user, with its files and network"

// SandboxState says what confines the backend's tool processes, as the
// worker says at start: "on: landlock vN, ..." or SandboxOff ("on, but
// unavailable here: ..." when the kernel lacks Landlock, where every
// call fails).
func (b *Backend) SandboxState() string {
	if b.Unsandboxed {
		return SandboxOff
	}
	abi, err := sandbox.ABI()
	if err == nil && abi < sandbox.MinABI {
		err = fmt.Errorf("landlock ABI %d is older than %d", abi, sandbox.MinABI)
	}
	if err != nil {
		return "on, but unavailable here (" + err.Error() + "): every call fails"
	}
	return "on: " + sandbox.Describe(abi) + "; " + b.limitsState()
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
