// Package sandbox runs one tool process on the local machine inside a
// kernel sandbox: new user, mount, PID, IPC and (unless the call may use
// the network) network namespaces, of which the tool is the PID
// namespace's init (everything it starts ends with it), and a Landlock
// domain that lets it read only the system's shared roots, what anyone
// may read of /etc and /var, and the paths the call may read, and write
// only the paths it may write. It holds only its standard streams.
//
// The worker never restricts itself. Command re-executes the running
// binary (/proc/self/exe) as a helper in fresh namespaces; the helper
// hides the worker's secrets behind empty mounts, pins and protects the
// files that run later (git directories, hooks and config), mounts a
// /proc that shows only the call's own processes, applies Landlock to
// the one thread that then execs the tool, and drops every capability on
// the way. Zygote does the same for many calls from one re-executed
// process. Any binary
// that links this package can act as the helper (its init recognises
// the helper's argv[0]), so the worker, starter and test binaries all
// can.
//
// Why these parts: Landlock and namespaces are in every kernel warden
// supports and need no install and no privilege; bubblewrap would do the
// mounts too, but it is a package a fresh machine does not have. Landlock
// is called through golang.org/x/sys/unix rather than go-landlock because
// only the exec'ing thread needs it, and go-landlock's all-threads path
// links libcap's psx, which wraps pthread_create for the whole worker.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/backend/local/sandbox/child"
)

// Spec is what one sandboxed process may do (child.Spec).
type Spec = child.Spec

// MinABI is the oldest Landlock ABI the sandbox accepts.
const MinABI = child.MinABI

// ABI returns the kernel's Landlock ABI version, or an error saying why
// there is none.
func ABI() (int, error) { return child.ABI() }

// Command returns the command that runs spec.Argv in the sandbox, with
// env as the process's whole environment; ctx kills it like
// exec.CommandContext. The caller sets its standard streams and starts
// it; the returned command's SysProcAttr may be extended (parent-death
// signal) but its namespaces and its session must be kept: the process
// leads a session of its own (no controlling terminal, and a process
// group whose id is its pid, which kills everything it started) unless
// spec.Keep.Session.
func Command(ctx context.Context, spec Spec, env []string) (*exec.Cmd, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("sandbox: empty argv")
	}
	for _, p := range append(append(append([]string{spec.Dir}, spec.Write...), spec.Protect...), spec.Hide...) {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("sandbox: path %q is not absolute", p)
		}
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC)
	if !spec.Network {
		flags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{child.Name, string(b)}
	cmd.Env, cmd.Dir = env, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Setsid:                     !spec.Keep.Session,
		Setpgid:                    spec.Keep.Session,
	}
	return cmd, nil
}

// CommandProxy is Command for a spec with Proxy: the process gets a
// network namespace of its own, and recv, called once the command has
// started, returns the listener the helper made in it on
// 127.0.0.1:child.ProxyPort (an error when the helper ended without
// sending one). The caller serves the call's egress proxy on it and
// closes it once the process has ended.
func CommandProxy(ctx context.Context, spec Spec, env []string) (cmd *exec.Cmd, recv func() (net.Listener, error), err error) {
	spec.Proxy, spec.Network = true, false
	if cmd, err = Command(ctx, spec, env); err != nil {
		return nil, nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: proxy socket: %w", err)
	}
	near, far := os.NewFile(uintptr(fds[0]), "proxy-socket"), os.NewFile(uintptr(fds[1]), "proxy-socket")
	cmd.ExtraFiles = []*os.File{far} // the helper's descriptor 3
	recv = func() (net.Listener, error) {
		defer near.Close()
		far.Close() // the helper holds its copy: its end reads EOF when it is gone
		buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(4))
		_, oobn, _, _, err := unix.Recvmsg(int(near.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("sandbox: proxy listener: %w", err)
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return nil, errors.New("sandbox: the helper sent no proxy listener")
		}
		lfds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(lfds) != 1 {
			return nil, errors.New("sandbox: the helper sent no proxy listener")
		}
		f := os.NewFile(uintptr(lfds[0]), "egress-proxy")
		defer f.Close()
		ln, err := net.FileListener(f)
		if err != nil {
			return nil, fmt.Errorf("sandbox: proxy listener: %w", err)
		}
		return ln, nil
	}
	return cmd, recv, nil
}

// Describe says what protects a process, for the worker's start-up line:
// "landlock v7, user, mount, pid and network namespaces".
func Describe(abi int) string {
	return fmt.Sprintf("landlock v%d, user, mount, pid, ipc and network namespaces, no capabilities, a session of its own, seccomp (no unix sockets unless granted, keyrings, tty injection, bpf, perf, io_uring, userfaultfd, kexec, modules)", abi)
}

// Check runs a trivial command in a sandbox like a tool's and reports
// whether it works here: the Landlock ABI is recent enough and the
// kernel lets this user create the namespaces. It returns the ABI.
func Check() (int, error) {
	abi, err := ABI()
	if err != nil {
		return 0, err
	}
	if abi < MinABI {
		return abi, fmt.Errorf("landlock ABI %d is older than %d", abi, MinABI)
	}
	dir, err := os.MkdirTemp("", "warden-sandbox-check-")
	if err != nil {
		return abi, err
	}
	defer os.RemoveAll(dir)
	cmd, err := Command(context.Background(), Spec{Write: []string{dir}, Dir: dir, Argv: []string{"/bin/sh", "-c", "echo ok > probe"}}, []string{"PATH=/usr/bin:/bin"})
	if err != nil {
		return abi, err
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return abi, fmt.Errorf("a sandboxed process failed (%w): %s", err, strings.TrimSpace(string(out)))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "probe")); err != nil || string(b) != "ok\n" {
		return abi, fmt.Errorf("a sandboxed process could not write its working directory: %v", err)
	}
	return abi, nil
}

// HomeReads is what a sandboxed process with the environment env reads
// of its home directory ($HOME): the toolchains on its PATH (the first
// directory below home of each PATH entry under it: ~/.pyenv, ~/.cargo
// with ~/.rustup, ~/go) and git's configuration (~/.gitconfig,
// ~/.config/git), those that exist; never the home directory itself,
// nor a path inside one of hidden.
func HomeReads(env, hidden []string) []string {
	home, path := "", ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	if home == "" || !filepath.IsAbs(home) || filepath.Clean(home) == "/" {
		return nil
	}
	home = filepath.Clean(home)
	var out []string
	grant := func(p string) {
		if slices.Contains(out, p) || slices.ContainsFunc(hidden, func(h string) bool { return within(p, h) }) {
			return
		}
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	for _, e := range filepath.SplitList(path) {
		if !filepath.IsAbs(e) {
			continue
		}
		rel, err := filepath.Rel(home, filepath.Clean(e))
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		top := filepath.Join(home, strings.Split(rel, string(filepath.Separator))[0])
		grant(top)
		if filepath.Base(top) == ".cargo" {
			grant(filepath.Join(home, ".rustup"))
		}
	}
	grant(filepath.Join(home, ".gitconfig"))
	grant(filepath.Join(home, ".config", "git"))
	return out
}

// ProgramReads is what running name needs to read beyond the shared
// roots: the program it resolves to in env's PATH (a server built into
// a directory of its own, say), nothing when it is not found.
func ProgramReads(name string, env []string) []string {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	p, err := child.LookPathList(name, path)
	if err != nil || !filepath.IsAbs(p) {
		return nil
	}
	return []string{p}
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// Channels says which channels beyond files and network a process keeps
// (child.Channels).
type Channels = child.Channels

// The names of the layers Keep turns off (backend.local.sandbox_off).
const (
	LayerNewSession  = "new_session"
	LayerTTYIoctls   = "tty_ioctls"
	LayerUnixSockets = "unix_sockets"
	LayerKeyring     = "keyring"
)

// Keep is what a process keeps with the layers off turned off (names
// this package does not own are other parts' layers and ignored) and,
// when unixSockets, the grant of unix sockets its call holds.
func Keep(off []string, unixSockets bool) Channels {
	return Channels{
		Session:     slices.Contains(off, LayerNewSession),
		TTYIoctls:   slices.Contains(off, LayerTTYIoctls),
		UnixSockets: unixSockets || slices.Contains(off, LayerUnixSockets),
		Keyring:     slices.Contains(off, LayerKeyring),
	}
}
