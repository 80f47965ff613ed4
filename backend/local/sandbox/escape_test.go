package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/backend/local/sandbox/child"
)

var testEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}

// zygoteOf starts a zygote of spec for the test.
func zygoteOf(t *testing.T, spec child.ZygoteSpec) *Zygote {
	t.Helper()
	z, err := startZygote(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	return z
}

// zrun runs argv through z with dir writable and returns stdout+stderr.
func zrun(t *testing.T, z *Zygote, dir string, argv ...string) string {
	t.Helper()
	var out, errs bytes.Buffer
	res, err := z.Run(context.Background(), Request{Write: []string{dir}, Dir: dir, Argv: argv, Env: testEnv}, nil, &out, &errs)
	if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	s := out.String() + errs.String()
	t.Logf("%v -> exit %d: %q", argv[len(argv)-1], res.ExitCode, s)
	return s
}

// TestToolHoldsOnlyItsStdio: a tool's descriptors are 0, 1 and 2 (and
// the listing's own): not the zygote's control socket, not a descriptor
// the test process held without close-on-exec when it started the
// zygote. Control: a zygote that keeps what it inherited passes both on.
// The zygote's own descriptors are all close-on-exec.
func TestToolHoldsOnlyItsStdio(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], 0); err != nil { // no close-on-exec, like an inherited descriptor
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	leak := strconv.Itoa(p[0])
	pipeName, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", p[0]))
	dir := t.TempDir()
	list := func(z *Zygote) []string {
		return strings.Fields(zrun(t, z, dir, "/bin/ls", "/proc/self/fd"))
	}

	z := zygoteOf(t, child.ZygoteSpec{})
	if got := list(z); strings.Join(got, " ") != "0 1 2 3" { // 3: ls's own listing
		t.Errorf("a tool holds %v, want 0 1 2 and the listing's own", got)
	}
	out := zrun(t, z, dir, "/bin/bash", "-c", fmt.Sprintf(
		"echo hello >&3 && echo WRO''TE3; cat /proc/%d/fd/3 </dev/null && echo OPE''NED; ls /proc/%d/fd; [ \"$(head -c 9 /proc/1/cmdline)\" = /bin/bash ] && echo PID1-IS''-ME",
		z.pid, z.pid))
	if strings.Contains(out, "WROTE3") || strings.Contains(out, "OPENED") || !strings.Contains(out, "PID1-IS-ME") {
		t.Errorf("a tool reached the zygote, or its /proc/1 is not itself: %q", out)
	}
	if !strings.Contains(out, "Bad file descriptor") || !strings.Contains(out, "No such file or directory") {
		t.Errorf("the attempts did not run (no errno printed): %q", out)
	}
	// Every descriptor the zygote holds is close-on-exec.
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fdinfo", z.pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range fds {
		fd, _ := strconv.Atoi(e.Name())
		if fd <= 2 {
			continue
		}
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%d", z.pid, fd))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(l, "flags:\t"); ok {
				flags, _ := strconv.ParseUint(v, 8, 64)
				if flags&unix.O_CLOEXEC == 0 {
					t.Errorf("the zygote's descriptor %d is not close-on-exec (flags %s)", fd, v)
				}
			}
		}
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", z.pid, fd)); l == pipeName {
			t.Errorf("the zygote still holds the inherited pipe at %d", fd)
		}
	}

	// The helper, too, passes on only the standard streams.
	if out, _ := run(t, Spec{Write: []string{dir}, Dir: dir}, "exec /bin/ls /proc/self/fd"); strings.Join(strings.Fields(out), " ") != "0 1 2 3" {
		t.Errorf("a helper's tool holds %q, want 0 1 2 and the listing's own", out)
	}

	// Control: without the fix the tool gets the pipe and the socket.
	zc := zygoteOf(t, child.ZygoteSpec{Controls: []string{"inherited-fds"}})
	got := list(zc)
	if !strings.Contains(" "+strings.Join(got, " ")+" ", " "+leak+" ") || !strings.Contains(strings.Join(got, " "), "3") {
		t.Errorf("control: without the fix the tool should hold the pipe %s and fd 3, holds %v", leak, got)
	}
}

// TestDetachedProcessesEndWithTheCall: processes a call started in a new
// session, double-forked or nohup'ed, holding its stdout, are gone when
// the call returns, by either way of starting it; Run returns at once.
// Control: in the zygote's shared PID namespace they survive.
func TestDetachedProcessesEndWithTheCall(t *testing.T) {
	dir := t.TempDir()
	marker := fmt.Sprintf("sleep 97.%d", os.Getpid())
	script := fmt.Sprintf("setsid %[1]s & (setsid %[1]s &) ; nohup %[1]s >/dev/null 2>&1 & sh -c '%[1]s & exit'; sleep 0.2; echo started", marker)
	check := func(t *testing.T, how string, run func() string) {
		start := time.Now()
		out := run()
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: the call took %v: it waited for its detached processes", how, d)
		}
		if !strings.Contains(out, "started") {
			t.Fatalf("%s: the script did not run: %q", how, out)
		}
		deadline := time.Now().Add(3 * time.Second)
		for n := survivors(t, marker); n > 0; n = survivors(t, marker) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d detached processes outlived their call", how, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Run("zygote", func(t *testing.T) {
		z := zygoteOf(t, child.ZygoteSpec{})
		check(t, "zygote", func() string { return zrun(t, z, dir, "/bin/bash", "-c", script) })
	})
	t.Run("helper", func(t *testing.T) {
		check(t, "helper", func() string { out, _ := run(t, Spec{Write: []string{dir}, Dir: dir}, script); return out })
	})
	t.Run("control", func(t *testing.T) {
		z := zygoteOf(t, child.ZygoteSpec{Controls: []string{"shared-pid"}})
		zrun(t, z, dir, "/bin/bash", "-c", script)
		time.Sleep(300 * time.Millisecond)
		n := survivors(t, marker)
		t.Logf("control: %d detached processes survived a call in the shared PID namespace", n)
		if n == 0 {
			t.Error("control: the detached processes died anyway, so the test proves nothing")
		}
		z.Close() // they die with the zygote, the init of the shared namespace
	})
}

// TestCallsCannotSeeOrTouchEachOther: a call sees neither the zygote's
// argv in /proc/1/cmdline nor another running call, and cannot signal
// or ptrace it or the zygote. Control: in the shared PID namespace with
// procfs's default exempt group the other call and the zygote are
// visible (the Landlock domain still refuses the environment, signals
// and ptrace: the errno shows which layer stopped it), and from outside
// the sandbox every attempt succeeds.
func TestCallsCannotSeeOrTouchEachOther(t *testing.T) {
	dir := t.TempDir()
	marker := fmt.Sprintf("sleep 98.%d", os.Getpid())
	probe := func(z *Zygote, victim int) string {
		return zrun(t, z, dir, "/bin/bash", "-c", fmt.Sprintf(`
echo "cmdline of 1: $(tr '\0' ' ' </proc/1/cmdline)"
for d in /proc/[0-9]*; do
  if grep -q '%[1]s' $d/cmdline 2>/dev/null; then # the pattern does not match this script
    p=${d#/proc/}; echo "FOU""ND $p"
    (tr '\0' ' ' < $d/environ | grep -o VICTIM_SECRET=[a-z]* ) 2>&1
    kill -0 $p 2>&1 && echo SIGNAL''LED
    /usr/bin/python3 -c 'import ctypes,os,sys;l=ctypes.CDLL(None,use_errno=True);r=l.ptrace(16,int(sys.argv[1]),0,0);print("ptrace",r,os.strerror(ctypes.get_errno()))' $p
  fi
done
kill -0 %[2]d 2>&1 && echo SIGNAL''LED-HOST-PID
/usr/bin/python3 -c 'import ctypes,os;l=ctypes.CDLL(None,use_errno=True);r=l.ptrace(16,%[2]d,0,0);print("ptrace",r,os.strerror(ctypes.get_errno()))'
kill -0 %[3]d 2>&1 && echo SIGNAL''LED-ZYGOTE
ls /proc | tr '\n' ' '
`, strings.Replace(strings.TrimPrefix(marker, "sleep "), ".", "[.]", 1), victim, z.pid))
	}
	victimOf := func(z *Zygote) (int, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = z.Run(ctx, Request{Write: []string{dir}, Dir: dir, Argv: []string{"/bin/sh", "-c", "exec " + marker},
				Env: append(testEnv, "VICTIM_SECRET=hunter")}, nil, io.Discard, io.Discard)
		}()
		for i := 0; i < 100; i++ {
			if pids := pidsOf(t, marker); len(pids) > 0 {
				return pids[0], func() { cancel(); wg.Wait() }
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("the victim call did not start")
		return 0, nil
	}

	z := zygoteOf(t, child.ZygoteSpec{})
	victim, stop := victimOf(z)
	out := probe(z, victim)
	stop()
	for _, bad := range []string{child.ZygoteName, "FOUND", "hunter", "SIGNALLED", "ptrace 0"} {
		if strings.Contains(out, bad) {
			t.Errorf("a call reached another (%s): %q", bad, out)
		}
	}
	if !strings.Contains(out, "No such process") || !strings.Contains(out, "ptrace -1") {
		t.Errorf("the attempts did not run (no errno): %q", out)
	}

	// Control, the fixes off.
	zc := zygoteOf(t, child.ZygoteSpec{Controls: []string{"shared-pid", "proc-gid0"}})
	victim, stop = victimOf(zc)
	out = probe(zc, victim)
	if !strings.Contains(out, child.ZygoteName) || !strings.Contains(out, "FOUND") {
		t.Errorf("control: with the fixes off the zygote's argv and the other call should be visible: %q", out)
	}
	// From outside the sandbox the same reads and signals work.
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", victim))
	if err != nil || !bytes.Contains(env, []byte("VICTIM_SECRET=hunter")) {
		t.Errorf("control: the victim's environment is not readable from outside: %v", err)
	}
	if err := unix.Kill(victim, 0); err != nil {
		t.Errorf("control: the victim cannot be signalled from outside: %v", err)
	}
	stop()
}

// pidsOf returns the pids whose command line contains marker.
func pidsOf(t *testing.T, marker string) []int {
	t.Helper()
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []int
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})), marker) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			out = append(out, pid)
		}
	}
	return out
}

// TestRootFilesStayRoots: /etc/shadow, a 0600 file and a credentials
// directory in the home directory are unreadable to a tool, by either
// way of starting it, with the errno printed; a world-readable file of
// /etc and the system's programs still work. Control: with read on the
// whole file system (the old grant) the zygote's tool reads them, and so
// does the same command unsandboxed.
func TestRootFilesStayRoots(t *testing.T) {
	home := t.TempDir()
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	hist := filepath.Join(home, ".bash_history")
	creds := filepath.Join(home, ".agent", "credentials.json")
	if err := os.WriteFile(hist, []byte("HISTORY-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(creds), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creds, []byte("CRED-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := fmt.Sprintf("head -c 5 /etc/shadow; echo; cat %s; cat %s; ls %s; grep -c root /etc/passwd", hist, creds, home)
	secrets := []string{"root:", "HISTORY-SECRET", "CRED-SECRET"}
	check := func(how, out string) {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s: a tool read %q: %q", how, s, out)
			}
		}
		if strings.Count(out, "Permission denied") < 4 {
			t.Errorf("%s: the reads did not fail with EACCES: %q", how, out)
		}
		if !strings.Contains(out, "\n1\n") {
			t.Errorf("%s: /etc/passwd (world-readable) was not readable: %q", how, out)
		}
	}
	z := zygoteOf(t, child.ZygoteSpec{})
	check("zygote", zrun(t, z, dir, "/bin/bash", "-c", script))
	out, _ := run(t, Spec{Write: []string{dir}, Dir: dir}, script)
	t.Logf("helper: %q", out)
	check("helper", out)

	zc := zygoteOf(t, child.ZygoteSpec{Controls: []string{"read-root"}})
	out = zrun(t, zc, dir, "/bin/bash", "-c", script)
	for _, s := range secrets {
		if !strings.Contains(out, s) {
			t.Errorf("control: with read on / the tool should read %q: %q", s, out)
		}
	}
	direct, _ := exec.Command("/bin/bash", "-c", script).CombinedOutput()
	if !strings.Contains(string(direct), "CRED-SECRET") {
		t.Errorf("control: unsandboxed the credentials are not readable: %q", direct)
	}
}

// TestWalkReadable: in a tree with a root-only directory and a 0600
// file, the walk grants the world-readable directories whole, the
// world-readable files of a mixed directory one by one, and nothing
// private.
func TestWalkReadable(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	mk := func(p string, mode os.FileMode) {
		isDir := strings.HasSuffix(p, "/")
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if isDir {
			if err := os.Mkdir(p, 0o755); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
	}
	mk("open/a.conf", 0o644)
	mk("open/sub/b.conf", 0o644)
	mk("mixed/public.conf", 0o644)
	mk("mixed/shadow", 0o640)
	mk("mixed/ssl/certs/ca.pem", 0o644)
	mk("mixed/ssl/private/key.pem", 0o600)
	mk("mixed/ssl/private/", 0o700)
	mk("secret/", 0o700)
	r, err := child.WalkReadable([]string{root}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := child.WalkReadable([]string{root}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var got []string
	for _, p := range r.Paths {
		got = append(got, strings.TrimPrefix(p, root+"/"))
	}
	slices.Sort(got)
	want := "mixed/public.conf mixed/ssl/certs open"
	if strings.Join(got, " ") != want {
		t.Errorf("granted %v, want %s", got, want)
	}
	if r.Stale() || w.Stale() {
		t.Error("stale right after the walk")
	}
	// A chmod of an entry changes no directory's times: only the watched
	// walk sees it.
	if err := os.Chmod(filepath.Join(root, "open/a.conf"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !w.Stale() {
		t.Error("a file made private in a walked directory did not make the watched walk stale")
	}
	mk("open/new.key", 0o600)
	if !r.Stale() || !w.Stale() {
		t.Error("a file added to a walked directory did not make the walk stale")
	}
}

// TestHidesReapplied: a hidden file replaced on the host by rename, and
// a hidden path created after the zygote started, are empty to the next
// call. They lie in the call's working directory, which Landlock lets
// it read, so that only the hiding can stop the read. Control: a zygote
// that hides only at its start, with the same Landlock grants, shows
// all three.
func TestHidesReapplied(t *testing.T) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	if err := os.Mkdir(secrets, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, key, keyDir := filepath.Join(secrets, "warden.yaml"), filepath.Join(secrets, "later.key"), filepath.Join(secrets, "later.d")
	if err := os.WriteFile(cfg, []byte("OLD-CONFIG\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("cat %s %s %s/k 2>&1; echo done", cfg, key, keyDir)
	spec := child.ZygoteSpec{Hide: []string{cfg, key, keyDir}}
	z := zygoteOf(t, spec)
	zc := zygoteOf(t, child.ZygoteSpec{Hide: spec.Hide, Controls: []string{"no-rehide"}})
	if out := zrun(t, z, dir, "/bin/bash", "-c", script); strings.Contains(out, "CONFIG") {
		t.Fatalf("the hidden config is visible at the start: %q", out)
	}
	zrun(t, zc, dir, "/bin/true")
	// Replace by rename (an editor, sed -i), create the others.
	tmp := cfg + ".tmp"
	if err := os.WriteFile(tmp, []byte("NEW-CONFIG\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("LATER-KEY\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(keyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keyDir, "k"), []byte("LATER-DIR\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := zrun(t, z, dir, "/bin/bash", "-c", script)
	for _, s := range []string{"NEW-CONFIG", "LATER-KEY", "LATER-DIR"} {
		if strings.Contains(out, s) {
			t.Errorf("%s is visible to the next call: %q", s, out)
		}
	}
	if !strings.Contains(out, "done") {
		t.Errorf("the script did not run: %q", out)
	}
	out = zrun(t, zc, dir, "/bin/bash", "-c", script)
	for _, s := range []string{"NEW-CONFIG", "LATER-KEY", "LATER-DIR"} {
		if !strings.Contains(out, s) {
			t.Errorf("control: a zygote that hides only at its start should show %s: %q", s, out)
		}
	}
}

// TestNoCapabilities: a tool's inheritable, permitted, effective,
// bounding and ambient sets are all empty, by either way of starting it.
// Control: the full mask, from /proc/sys/kernel/cap_last_cap, is what a
// process in a fresh user namespace has.
func TestNoCapabilities(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		t.Fatal(err)
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	full := fmt.Sprintf("%016x", uint64(1)<<(last+1)-1)
	caps := func(out string) map[string]string {
		m := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.HasPrefix(k, "Cap") {
				m[k] = strings.TrimSpace(v)
			}
		}
		return m
	}
	ctl, err := exec.Command("unshare", "-Ur", "grep", "^Cap", "/proc/self/status").CombinedOutput()
	if err != nil {
		t.Fatalf("unshare: %v %s", err, ctl)
	}
	if got := caps(string(ctl)); got["CapEff"] != full || got["CapBnd"] != full {
		t.Fatalf("control: a fresh user namespace has %v, want the full mask %s", got, full)
	}
	dir := t.TempDir()
	z := zygoteOf(t, child.ZygoteSpec{})
	helperOut, _ := run(t, Spec{Write: []string{dir}, Dir: dir}, "grep ^Cap /proc/self/status")
	for how, out := range map[string]string{"zygote": zrun(t, z, dir, "/bin/grep", "^Cap", "/proc/self/status"), "helper": helperOut} {
		got := caps(out)
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			if got[k] != "0000000000000000" {
				t.Errorf("%s: %s = %q, want 0 (full is %s)", how, k, got[k], full)
			}
		}
	}
}

// TestCallMounts: a call's Hide, Pin and Protect apply to that call
// only, by either way of starting it: its .env is empty, its .git cannot
// be renamed (EBUSY) and its hooks cannot be written (EROFS); the next
// call without them (the control) reads the file, writes the hook and
// renames the directory: nothing stays behind in the zygote.
func TestCallMounts(t *testing.T) {
	type runFunc func(req Request) string
	check := func(t *testing.T, run runFunc) {
		work := t.TempDir()
		env, git := filepath.Join(work, ".env"), filepath.Join(work, ".git")
		hooks := filepath.Join(git, "hooks")
		if err := os.MkdirAll(hooks, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(env, []byte("ENV-SECRET\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		script := "cat .env; echo x > .git/hooks/pre-commit && echo HOOK-WRITTEN; mv .git g2 && echo RENAMED && mv g2 .git"
		out := run(Request{Write: []string{work}, Dir: work, Hide: []string{env}, Pin: []string{git}, Protect: []string{hooks},
			Argv: []string{"/bin/bash", "-c", script}, Env: testEnv})
		for _, bad := range []string{"ENV-SECRET", "HOOK-WRITTEN", "RENAMED"} {
			if strings.Contains(out, bad) {
				t.Errorf("the call's mounts did not hold (%s): %q", bad, out)
			}
		}
		if !strings.Contains(out, "Read-only file system") || !strings.Contains(out, "Device or resource busy") {
			t.Errorf("the attempts did not fail with EROFS and EBUSY: %q", out)
		}
		out = run(Request{Write: []string{work}, Dir: work, Argv: []string{"/bin/bash", "-c", script}, Env: testEnv})
		for _, want := range []string{"ENV-SECRET", "HOOK-WRITTEN", "RENAMED"} {
			if !strings.Contains(out, want) {
				t.Errorf("control: a later call without them should reach %s: %q", want, out)
			}
		}
	}
	t.Run("zygote", func(t *testing.T) {
		z := zygoteOf(t, child.ZygoteSpec{})
		check(t, func(req Request) string {
			var out, errs bytes.Buffer
			if _, err := z.Run(context.Background(), req, nil, &out, &errs); err != nil {
				t.Fatal(err)
			}
			t.Logf("%q", out.String()+errs.String())
			return out.String() + errs.String()
		})
	})
	t.Run("helper", func(t *testing.T) {
		check(t, func(req Request) string {
			out, _ := run(t, Spec{Write: req.Write, Dir: req.Dir, Hide: req.Hide, Pin: req.Pin, Protect: req.Protect}, req.Argv[2])
			t.Logf("%q", out)
			return out
		})
	})
}
