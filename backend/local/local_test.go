package local_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/tools/backendtest"
)

func TestConformance(t *testing.T) {
	// Not parallel: backendtest.Run sets environment variables.
	backendtest.Run(t, func(t *testing.T) (backend.Backend, string) {
		dir := t.TempDir()
		return local.New(dir), dir
	})
}

// TestEnvPassThrough: backend.env names pass the worker's value through,
// NAME=value sets a value, the request's entries come last, and nothing
// else of the worker's environment reaches the process.
func TestEnvPassThrough(t *testing.T) {
	t.Setenv("WARDEN_TEST_PASSED", "passed-value")
	t.Setenv("WARDEN_TEST_HIDDEN", "hidden-value")
	t.Setenv("LC_TIME", "C")
	spec := []string{"WARDEN_TEST_PASSED", "WARDEN_TEST_SET=literal", "WARDEN_TEST_ABSENT"}
	if err := backend.ParseEnvSpec(spec); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b := &local.Backend{Workdir: dir, Env: backend.ResolveEnv(spec, os.Environ())}
	res, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"env"}, Env: []string{"WARDEN_TEST_SET=request"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("env: %v %+v", err, res)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		got[k] = v
	}
	want := map[string]string{"WARDEN_TEST_PASSED": "passed-value", "WARDEN_TEST_SET": "request", "LC_TIME": "C", "PATH": os.Getenv("PATH")}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if k == "WARDEN_TEST_HIDDEN" || k == "WARDEN_TEST_ABSENT" {
			t.Errorf("%s reached the process", k)
		}
		// The sandbox adds where its temporary files and caches go.
		sandbox := []string{"TMPDIR", "XDG_CACHE_HOME", "GOCACHE", "npm_config_cache", "PIP_CACHE_DIR"}
		if !slices.Contains(backend.BaseEnvNames(), k) && !slices.Contains(sandbox, k) && !strings.HasPrefix(k, "LC_") && !strings.HasPrefix(k, "WARDEN_TEST_") && k != "PWD" && k != "SHLVL" && k != "_" {
			t.Errorf("unexpected variable %s in a tool's environment", k)
		}
	}
}

func TestParseEnvSpecErrors(t *testing.T) {
	t.Parallel()
	for _, bad := range [][]string{{""}, {"1X"}, {"A-B=c"}, {"=v"}, {"OK", "BAD NAME"}} {
		if err := backend.ParseEnvSpec(bad); err == nil {
			t.Errorf("ParseEnvSpec(%q) accepted", bad)
		}
	}
}

// TestHomeReads: a sandboxed tool reads the toolchain on its PATH under
// the home directory and ~/.gitconfig, but not the rest of the home
// directory (a 0600 history, an agent's credentials directory), with the
// errno printed. Control: unsandboxed it reads them all.
func TestHomeReads(t *testing.T) {
	home := t.TempDir()
	mk := func(p, data string, mode os.FileMode) {
		p = filepath.Join(home, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	mk(".tool/bin/hello", "#!/bin/sh\necho TOOL-RAN\n", 0o755)
	mk(".gitconfig", "[user]\n\tname = GITCONFIG-READ\n", 0o644)
	mk(".bash_history", "HISTORY-SECRET\n", 0o600)
	mk(".agent/credentials.json", "CRED-SECRET\n", 0o600)
	t.Setenv("HOME", home)
	t.Setenv("PATH", filepath.Join(home, ".tool/bin")+":/usr/bin:/bin")
	script := "hello; cat ~/.gitconfig; cat ~/.bash_history; cat ~/.agent/credentials.json; ls ~"
	for _, off := range []bool{false, true} {
		dir := t.TempDir()
		b := &local.Backend{Workdir: dir, Unsandboxed: off}
		res, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"/bin/sh", "-c", script}})
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		out := string(res.Stdout) + string(res.Stderr)
		t.Logf("unsandboxed=%v: %q", off, out)
		for _, want := range []string{"TOOL-RAN", "GITCONFIG-READ"} {
			if !strings.Contains(out, want) {
				t.Errorf("unsandboxed=%v: %s missing: %q", off, want, out)
			}
		}
		for _, secret := range []string{"HISTORY-SECRET", "CRED-SECRET"} {
			if strings.Contains(out, secret) != off {
				t.Errorf("unsandboxed=%v: %s readable=%v: %q", off, secret, !off, out)
			}
		}
		if !off && strings.Count(out, "Permission denied") < 3 {
			t.Errorf("the reads did not fail with EACCES: %q", out)
		}
	}
}

// TestRealTools: the tools of this machine work in the sandbox with the
// real home directory: a shell, coreutils, make, python3 (pyenv's
// shims), git init/commit/status (reading ~/.gitconfig), go build (with
// GOCACHE in the sandbox cache), node and npm, cargo.
func TestRealTools(t *testing.T) {
	dir := t.TempDir()
	b := &local.Backend{Workdir: dir}
	defer b.Close()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { println(\"go-built\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/x\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte("all:\n\t@echo make-ran\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, script, want string
		optional           string // the program; skipped when not installed, unless WARDEN_REQUIRE_TOOLS=1
	}{
		{"sh and coreutils", "echo a > f && cat f && ls f && wc -l < f", "f", ""},
		{"make", "make", "make-ran", "make"},
		{"python3", "python3 -c 'import json,ssl; print(json.dumps(1+1))'", "2", "python3"},
		{"git", "git init -q r && cd r && echo x > a && git add a && git commit -qm m && git status --short && git log --format=%an", "", "git"},
		{"go build", "go build -o prog . && ./prog", "go-built", "go"},
		{"node", "node -e 'console.log(6*7)'", "42", "node"},
		{"npm", "npm --version", ".", "npm"},
		{"cargo", "cargo --version", "cargo", "cargo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.optional != "" {
				if _, err := exec.LookPath(c.optional); err != nil {
					if os.Getenv("WARDEN_REQUIRE_TOOLS") == "1" {
						t.Fatalf("%s is not installed (WARDEN_REQUIRE_TOOLS=1: scripts/test.sh runs every tool's case)", c.optional)
					}
					t.Skipf("%s is not installed (WARDEN_REQUIRE_TOOLS=1 makes this a failure)", c.optional)
				}
			}
			res, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"/bin/sh", "-c", c.script}, Timeout: 3 * time.Minute})
			out := string(res.Stdout) + string(res.Stderr)
			t.Logf("%s: exit %d: %q", c.name, res.ExitCode, out)
			if err != nil || res.ExitCode != 0 || !strings.Contains(out, c.want) {
				t.Fatalf("%s failed in the sandbox: %v exit %d: %q", c.name, err, res.ExitCode, out)
			}
		})
	}
}

// TestWorktreeWorkspace: a workspace whose .git is a file (a linked
// worktree or a submodule) runs its calls: the profile's protected
// .git/hooks and .git/config lie beneath a file, so they do not exist
// and need no mount (the mount failed every call with ENOTDIR).
func TestWorktreeWorkspace(t *testing.T) {
	repo, wt := t.TempDir(), filepath.Join(t.TempDir(), "wt")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"},
		{"-C", repo, "worktree", "add", "-q", wt}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if fi, err := os.Lstat(filepath.Join(wt, ".git")); err != nil || fi.IsDir() {
		t.Fatalf("the worktree's .git is not a file: %v", err)
	}
	b := local.New(wt)
	defer b.Close()
	prof := &calls.Sandbox{Write: []string{wt}, Dirs: []string{wt},
		Protect: []string{filepath.Join(wt, ".git", "hooks"), filepath.Join(wt, ".git", "config")}}
	res, err := b.Exec(backend.WithSandbox(t.Context(), prof), backend.ExecRequest{Argv: []string{"sh", "-c", "echo ran > out.txt && cat out.txt"}})
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "ran" {
		t.Fatalf("a call in a worktree: %v exit %d %q %q", err, res.ExitCode, res.Stdout, res.Stderr)
	}
}
