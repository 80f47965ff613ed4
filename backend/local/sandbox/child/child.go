// Package child is the sandbox helper: the code that runs in the new
// namespaces, sets the sandbox up and execs the tool. Any binary that
// links it acts as the helper when started with argv[0] Name (package
// sandbox does that); its init never returns then.
//
// It imports only packages every Go program initialises early (no
// os/exec), because Go runs a package's init after every package the
// program links that sorts before it and is ready: in the worker's
// 300 MB binary the helper would otherwise wait for most of the Temporal
// server's initialisation on every call.
package child

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Name is the argv[0] that makes a binary act as the helper.
const Name = "warden-sandbox-helper"

// MinABI is the oldest Landlock ABI the sandbox accepts: version 3 adds
// truncation, so a read-only file cannot be emptied with O_TRUNC.
const MinABI = 3

// Spec is what one sandboxed process may do.
type Spec struct {
	// Write lists the paths the process may write (directories with
	// everything beneath them, or single files). Beyond them it reads
	// only the system's shared roots (SharedRoots), the world-readable
	// parts of the walked roots (WalkedRoots) and Read.
	Write []string `json:"write,omitempty"`
	// Protect lists paths inside Write that stay read-only (a
	// workspace's .git/hooks and .git/config: they run later, outside
	// any check).
	Protect []string `json:"protect,omitempty"`
	// Hide lists paths replaced by something empty: a directory by an
	// empty read-only tmpfs, a file by /dev/null.
	Hide []string `json:"hide,omitempty"`
	// Pin lists paths bind-mounted onto themselves, writable: a mount
	// point cannot be renamed or removed, so the name stays what the
	// Protect entries beneath it were computed for (a .git directory).
	Pin []string `json:"pin,omitempty"`
	// Read lists paths the process may read beyond the system's shared
	// roots and its Write paths (toolchains under the home directory,
	// ~/.gitconfig).
	Read []string `json:"read,omitempty"`
	// Network keeps the host's network; otherwise the process gets a
	// network namespace of its own with only a loopback interface.
	Network bool `json:"network,omitempty"`
	// Proxy (with Network off) makes the helper listen on
	// 127.0.0.1:ProxyPort in the process's network namespace and send
	// the listener over descriptor 3 (a socket the worker passes) before
	// it confines itself: the worker serves the call's egress proxy on it.
	Proxy bool `json:"proxy,omitempty"`
	// Dir is the working directory.
	Dir string `json:"dir"`
	// Argv is the program and its arguments; the program is looked up in
	// the PATH of the process's environment.
	Argv []string `json:"argv"`
	// Cgroups is the number of cgroup.procs files (opened for writing)
	// the helper inherits as descriptors 3, 4, ... (from 4 with Proxy, whose
	// socket is 3): it joins each before it execs the tool.
	Cgroups int `json:"cgroups,omitempty"`
	// Rlimits, Tmp and TmpSize are as in Request.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	Tmp     string   `json:"tmp,omitempty"`
	TmpSize int64    `json:"tmp_size,omitempty"`
	// Keep lists the channels beyond files and network the process
	// keeps (none by default): see Channels. The helper must be started
	// in a session of its own unless Keep.Session.
	Keep Channels `json:"keep,omitempty"`
}

// ABI returns the kernel's Landlock ABI version, or an error saying why
// there is none.
func ABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, fmt.Errorf("landlock is not available: %w", errno)
	}
	return int(v), nil
}

// notFound is a program that is not in PATH.
type notFound struct{ name string }

func (e *notFound) Error() string {
	return fmt.Sprintf("exec: %q: executable file not found in $PATH", e.name)
}

// lookPath finds name as a shell would: a name with a slash as is,
// otherwise the first executable regular file of that name in PATH.
func lookPath(name string) (string, error) { return lookPathList(name, os.Getenv("PATH")) }

// LookPathList finds name as a shell would, in the directories of path
// (a name with a slash as is).
func LookPathList(name, path string) (string, error) { return lookPathList(name, path) }

// lookPathList is lookPath with path as the list of directories.
func lookPathList(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && unix.Access(p, unix.X_OK) == nil {
			return p, nil
		}
	}
	return "", &notFound{name}
}

// init turns a binary started as Name into the helper: it sets the
// sandbox up and execs the tool, never returning to the program's main.
func init() {
	if len(os.Args) == 2 && os.Args[0] == ZygoteName {
		err := zygote(os.Args[1])
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandbox zygote: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) != 2 || os.Args[0] != Name {
		return
	}
	// Exit codes as a shell reports them: 127 for a program not found,
	// 126 for one that could not be run (here: a sandbox that could not
	// be set up, so nothing ran).
	err := helper(os.Args[1])
	var nf *notFound
	if errors.As(err, &nf) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(127)
	}
	fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
	os.Exit(126)
}

// helper runs inside the new namespaces, as the only process of its PID
// namespace. It returns only on failure; on success the tool replaces it.
func helper(arg string) error {
	// Landlock, the capability bounding set and no_new_privs are
	// properties of a thread; exec keeps the calling thread's.
	runtime.LockOSThread()
	var spec Spec
	if err := json.Unmarshal([]byte(arg), &spec); err != nil {
		return fmt.Errorf("bad spec: %w", err)
	}
	if err := mounts(spec); err != nil {
		return err
	}
	if !spec.Network {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("loopback: %w", err)
		}
	}
	if spec.Proxy {
		if err := sendProxyListener(proxyFD); err != nil {
			return fmt.Errorf("egress proxy: %w", err)
		}
	}
	prog, err := lookPath(spec.Argv[0])
	if err != nil {
		return err
	}
	if err := os.Chdir(spec.Dir); err != nil {
		return err
	}
	first := 3 // the cgroup.procs files follow the proxy's socket
	if spec.Proxy {
		first = proxyFD + 1
	}
	if err := join(first, spec.Cgroups, spec.Rlimits); err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := landlock(spec); err != nil {
		return err
	}
	// Only the standard streams reach the tool: not a descriptor the
	// worker inherited without close-on-exec, nor one of ours.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("close descriptors: %w", err)
	}
	if err := channels(spec.Keep); err != nil {
		return err
	}
	return syscall.Exec(prog, spec.Argv, os.Environ())
}

// channels closes the channels keep does not keep, last before the
// exec (after Landlock, which set no_new_privs): the helper must lead a
// session of its own (the worker starts it so: Command), it leaves the
// session keyring it inherited for a new one, and it installs the
// seccomp filter.
func channels(keep Channels) error {
	if !keep.Session {
		if sid, err := unix.Getsid(0); err != nil || sid != unix.Getpid() {
			return fmt.Errorf("the helper does not lead a session of its own (sid %d): it would share a terminal", sid)
		}
	}
	if !keep.Keyring {
		if err := joinSessionKeyring(); err != nil {
			return err
		}
	}
	f, err := Filter(keep)
	if err != nil {
		return err
	}
	return installFilter(program(f))
}

// join moves the helper into the cgroups whose cgroup.procs files it
// inherited as descriptors first to first+n-1, and sets its rlimits: the tool it
// execs is counted from its first instruction.
func join(first, n int, rlimits []Rlimit) error {
	for fd := first; fd < first+n; fd++ {
		if _, err := unix.Write(fd, []byte("0")); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	for _, r := range rlimits {
		if err := unix.Prlimit(0, r.Resource, &unix.Rlimit{Cur: r.Cur, Max: r.Max}, nil); err != nil {
			return fmt.Errorf("setrlimit %d: %w", r.Resource, err)
		}
	}
	return nil
}

// mounts makes the mount namespace private, applies the call's hidden,
// pinned and protected paths and mounts a /proc of the new PID
// namespace.
func mounts(spec Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("private mounts: %w", err)
	}
	if err := callMounts(spec.Hide, spec.Pin, spec.Protect); err != nil {
		return err
	}
	if spec.Tmp != "" {
		fd, err := tmpMount(spec.Tmp, spec.TmpSize)
		if err != nil {
			return err
		}
		unix.Close(fd)
	}
	if err := unix.Mount("proc", "/proc", "proc", procFlags, procOptions); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}

// The /proc a sandboxed process gets: of its own PID namespace, and
// hidepid=2 with an exempt group no process holds (gid= names a group
// the user namespace does not map: the default, 0, would exempt the
// tools, which run as gid 0).
const (
	procFlags   = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	procOptions = "hidepid=2,gid=65534"
)

// callMounts applies a call's paths in the current mount namespace, in
// this order: hide, pin, protect. A path that does not exist is
// skipped; any other failure fails the call.
func callMounts(hides, pins, protects []string) error {
	for _, p := range hides {
		if _, err := hide(p); err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
	}
	for _, p := range pins {
		if err := pin(p); err != nil {
			return fmt.Errorf("pin %s: %w", p, err)
		}
	}
	for _, p := range protects {
		if err := readOnly(p); err != nil {
			return fmt.Errorf("protect %s: %w", p, err)
		}
	}
	return nil
}

// missing reports whether err says a path does not exist: no entry of
// that name, or a component on the way that is not a directory (the
// .git/hooks of a worktree or submodule, whose .git is a file).
func missing(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}

// pin bind-mounts p onto itself, writable: a mount point cannot be
// renamed, removed or replaced (EBUSY). A missing path needs nothing.
func pin(p string) error {
	if _, err := os.Lstat(p); missing(err) {
		return nil
	}
	return unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, "")
}

// hide covers p: a directory with an empty read-only tmpfs, anything
// else with /dev/null. A missing path needs nothing. It reports whether
// it covered p.
func hide(p string) (bool, error) {
	fi, err := os.Lstat(p)
	if missing(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fi.IsDir() {
		return true, unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555")
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return false, nil // the worker hides link targets; a link itself leads nowhere once they are hidden
	}
	return true, unix.Mount("/dev/null", p, "", unix.MS_BIND, "")
}

// readOnly bind-mounts p onto itself read-only, keeping the flags the
// mount it sits on has (a user namespace may not clear them).
func readOnly(p string) error {
	if _, err := os.Lstat(p); missing(err) {
		return nil
	}
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms int64 }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st.Flags&f.st != 0 {
			flags |= uintptr(f.ms)
		}
	}
	return unix.Mount("", p, "", flags, "")
}

// loopbackUp brings up lo in the new network namespace, so a tool can
// still serve and reach itself on 127.0.0.1.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// dropCapabilities empties the bounding and ambient sets, so the tool
// has no capability even inside its own user namespace.
func dropCapabilities() error {
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the last capability this kernel knows
			}
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	// The inheritable set too: root's permitted set after exec is the
	// inheritable set plus the (now empty) bounding set.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear inheritable capabilities: %w", err)
	}
	return nil
}

// Landlock access rights by the ABI that introduced them.
const (
	fsRead  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	fsABI1  = fsRead | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	fsFile  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	scopeV6 = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
)

// handled returns the file-system rights the ruleset restricts at abi,
// and the scopes.
func handled(abi int) (fs, scoped uint64) {
	fs = fsABI1
	if abi >= 2 {
		fs |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		fs |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		fs |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 6 {
		scoped = scopeV6
	}
	return fs, scoped
}

// devices are the character devices any program may write.
func devices() []string {
	return []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
}

// landlock restricts the calling thread for spec: see ruleset. It walks
// the walked roots itself (a helper runs once).
func landlock(spec Spec) error {
	walked, err := WalkReadable(WalkedRoots(), false)
	if err != nil {
		return err
	}
	defer walked.Close()
	rfd, err := ruleset(spec, walked, false, false)
	if err != nil {
		return err
	}
	defer unix.Close(rfd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rfd), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// ruleset builds the Landlock ruleset of a process: baseRuleset, then
// the Read paths readable and the Write paths writable.
//
// procGranted leaves /proc out: the zygote's child grants the /proc it
// mounts itself. readRoot grants read on the whole file system instead
// of the shared roots (a test's control only).
func ruleset(spec Spec, walked *Readable, readRoot, procGranted bool) (int, error) {
	rfd, err := baseRuleset(walked, readRoot, procGranted)
	if err != nil {
		return -1, err
	}
	if err := callRules(rfd, spec); err != nil {
		unix.Close(rfd)
		return -1, err
	}
	return rfd, nil
}

// baseRuleset builds what every process's ruleset holds: the system's
// shared roots and what walked found world-readable readable and
// executable, the common devices usable, /dev listable; nothing else
// readable or writable, and no signal or abstract socket reaching
// outside the domain.
func baseRuleset(walked *Readable, readRoot, procGranted bool) (int, error) {
	abi, err := ABI()
	if err != nil {
		return -1, err
	}
	if abi < MinABI {
		return -1, fmt.Errorf("landlock ABI %d is older than %d", abi, MinABI)
	}
	fs, scoped := handled(abi)
	attr := unix.LandlockRulesetAttr{Access_fs: fs, Scoped: scoped}
	size := unsafe.Sizeof(attr)
	if abi < 6 {
		size = unsafe.Offsetof(attr.Scoped) // older kernels reject the larger struct
	}
	if abi < 4 {
		size = unsafe.Offsetof(attr.Access_net)
	}
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	rfd := int(r)
	fail := func(err error) (int, error) { unix.Close(rfd); return -1, err }
	reads := SharedRoots()
	if procGranted {
		reads = slices.DeleteFunc(reads, func(p string) bool { return p == "/proc" })
	}
	if readRoot {
		reads = []string{"/"}
	}
	for _, p := range reads {
		if err := addRule(rfd, p, fsRead); err != nil {
			return fail(err)
		}
	}
	for i, fd := range walked.fds {
		if err := addRuleKnown(rfd, fd, walked.isDir[i], walked.Paths[i], fsRead); err != nil {
			return fail(err)
		}
	}
	for _, p := range devices() {
		if err := addRule(rfd, p, fsFile|(fs&(unix.LANDLOCK_ACCESS_FS_TRUNCATE|unix.LANDLOCK_ACCESS_FS_IOCTL_DEV))); err != nil {
			return fail(err)
		}
	}
	if err := addRule(rfd, "/dev", unix.LANDLOCK_ACCESS_FS_READ_DIR); err != nil {
		return fail(err)
	}
	return rfd, nil
}

// callRules adds a process's own paths to rfd: Read readable, Write
// writable.
func callRules(rfd int, spec Spec) error {
	abi, err := ABI()
	if err != nil {
		return err
	}
	fs, _ := handled(abi)
	for _, p := range spec.Read {
		if err := addRule(rfd, p, fsRead); err != nil {
			return err
		}
	}
	for _, p := range spec.Write {
		if err := addRule(rfd, p, fs); err != nil {
			return err
		}
	}
	return nil
}

// addRule grants access beneath p (only the file rights when p is not a
// directory). A missing path is skipped: it cannot be reached anyway.
func addRule(rfd int, p string, access uint64) error {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if missing(err) || errors.Is(err, unix.ENXIO) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	defer unix.Close(fd)
	return addRuleFD(rfd, fd, p, access)
}

// addRuleFD grants access beneath the file fd holds (p names it).
func addRuleFD(rfd, fd int, p string, access uint64) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	return addRuleKnown(rfd, fd, st.Mode&unix.S_IFMT == unix.S_IFDIR, p, access)
}

// addRuleKnown is addRuleFD when whether fd is a directory is known.
func addRuleKnown(rfd, fd int, isDir bool, p string, access uint64) error {
	if !isDir {
		access &= fsFile | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rfd), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock rule for %s: %w", p, errno)
	}
	return nil
}

// proxyFD is the helper's descriptor of the socket over which it sends
// a Proxy spec's listener (the command's first extra file).
const proxyFD = 3

// sendProxyListener listens on 127.0.0.1:ProxyPort in the helper's
// network namespace and sends the listener over the socket fd, which it
// closes.
func sendProxyListener(fd int) error {
	defer unix.Close(fd)
	ln, err := proxyListener()
	if err != nil {
		return err
	}
	defer unix.Close(ln)
	return unix.Sendmsg(fd, []byte("proxy"), unix.UnixRights(ln), nil, 0)
}
