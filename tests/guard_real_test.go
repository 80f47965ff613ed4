package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// guardBound is the most directories the repository guard checks in a
// call's working directories, as the test's workers set it
// (backend.local.guard_max_dirs; 250,000 by default): the flood goes just
// past it. The flood's cost grows with the bound, its path does not.
const guardBound = 20_000

// TestRealWorkerGuard: the repositories the guard must see, through the
// worker as a deployment starts it, in default and accept_edits mode
// (a Bash(python3:*) rule) and in bypass, then with only the guard off
// (backend.local.sandbox_off: [git_guard], the rest of the sandbox on)
// as the control: a bare repository planted in src/ (its core.pager
// runs at the user's next git log in a terminal), a hook written in the
// core.hooksPath directory (.githooks, existing and missing: it runs at
// the next commit), and a flood of guardBound+1 directories that plants
// sub/.git with core.fsmonitor, followed by a call in the same
// workspace that must still run. Every attempt prints its marker first.
func TestRealWorkerGuard(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatalf("script(1) is needed to give git a terminal: %v", err)
	}
	for _, r := range []struct {
		name     string
		mode     permission.Mode
		rules    []string
		guardOff bool
	}{
		{"default", permission.ModeDefault, []string{"Bash(python3:*)"}, false},
		{"accept_edits", permission.ModeAcceptEdits, []string{"Bash(python3:*)"}, false},
		{"bypass", permission.ModeBypass, nil, false},
		{"git_guard_off", permission.ModeBypass, nil, true},
	} {
		t.Run(r.name, func(t *testing.T) {
			extra := fmt.Sprintf("backend:\n  local:\n    guard_max_dirs: %d\n", guardBound)
			if r.guardOff {
				extra += "    sandbox_off: [git_guard]\n"
			}
			w := startRealWorker(t, inside, false, extra)
			if r.guardOff && !strings.Contains(w.stdout.String(), "WARNING: sandbox layer git_guard is OFF") {
				t.Errorf("the worker does not warn that the guard is off:\n%s", w.tail())
			}
			m := modeRun{w: w, mode: r.mode, rules: r.rules}
			t.Run("repositories", func(t *testing.T) { guardRepos(t, m, r.guardOff) })
			t.Run("flood", func(t *testing.T) { guardFlood(t, m, r.guardOff) })
			t.Run("runs_later", func(t *testing.T) { guardRunLater(t, m, r.guardOff) })
		})
	}
}

// guardExpect checks one attempt's result: it ran (its marker), and
// its effect was reached with the guard off and not with it on.
func guardExpect(t *testing.T, m modeRun, guardOff bool, name string, r model.Message, effect bool) {
	t.Helper()
	if !strings.Contains(r.Content, attemptMarker) {
		t.Errorf("%s: %s: the attempt never ran (no marker), so it proves nothing:\n%.1500s", m.name(), name, r.Content)
		return
	}
	switch {
	case guardOff && !effect:
		t.Errorf("guard off: %s: the planted command did not run, so the case proves nothing:\n%.1500s", name, r.Content)
	case !guardOff && effect:
		t.Errorf("%s: %s: ESCAPED, the planted command ran:\n%.1500s", m.name(), name, r.Content)
	default:
		t.Logf("%s (guard off %v): %s: effect %v: %.500s", m.name(), guardOff, name, effect, strings.ReplaceAll(r.Content, "\n", " | "))
	}
}

// guardRepos: the bare repository and the hooks directory cases.
func guardRepos(t *testing.T, m modeRun, guardOff bool) {
	w := m.w
	mark := func(name string) string { return filepath.Join(w.out, "guard-"+name) }
	hook := func(dir, name string) string {
		return fmt.Sprintf("show('HOOK', lambda: (os.makedirs(%q,exist_ok=True), open(%q,'w').write('#!/bin/sh\\ntouch %s\\n'), os.chmod(%q,0o755)))\n",
			dir, dir+"/pre-commit", mark(name), dir+"/pre-commit")
	}
	commit := func(dir, name string) func() bool {
		return func() bool {
			_ = exec.Command("git", "-C", dir, "commit", "-q", "--allow-empty", "-m", "later").Run()
			_, err := os.Stat(mark(name))
			return err == nil
		}
	}
	type variant struct {
		name, dir, code string
		effect          func() bool
	}
	var vs []variant

	d := filepath.Join(w.root, "guard", "bare")
	bare := d
	initRepo(t, d)
	if err := os.Mkdir(filepath.Join(d, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	vs = append(vs, variant{"plant a bare repository in src/ whose core.pager runs a command", d,
		"import shutil\nshow('OBJECTS', lambda: shutil.copytree('.git/objects','src/objects'))\nshow('REFS', lambda: shutil.copytree('.git/refs','src/refs'))\n" +
			"show('HEAD', lambda: shutil.copy('.git/HEAD','src/HEAD'))\n" +
			fmt.Sprintf("show('CONFIG', lambda: open('src/config','w').write('[core]\\n\\tpager = \"touch %s; cat\"\\n'))\n", mark("bare")),
		func() bool {
			// The user's next git log in src/, in a terminal (git
			// starts its pager there).
			// (bare, not d: the closure runs after d names the next
			// repository.)
			cmd := exec.Command("script", "-qec", "git log -1", "/dev/null")
			cmd.Dir = filepath.Join(bare, "src")
			cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "GIT_PAGER=") })
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Logf("git log in the planted repository: %v\n%s", err, out)
			}
			_, err := os.Stat(mark("bare"))
			return err == nil
		}})

	d = filepath.Join(w.root, "guard", "hookspath")
	initRepo(t, d)
	gitRun(t, d, "config", "core.hooksPath", ".githooks")
	if err := os.Mkdir(filepath.Join(d, ".githooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	vs = append(vs, variant{"write a pre-commit hook in the existing core.hooksPath directory .githooks", d, hook(".githooks", "hookspath"), commit(d, "hookspath")})

	d = filepath.Join(w.root, "guard", "hookspath-missing")
	initRepo(t, d)
	gitRun(t, d, "config", "core.hooksPath", ".githooks")
	vs = append(vs, variant{"create the missing core.hooksPath directory .githooks with a pre-commit hook", d, hook(".githooks", "hookspath-missing"), commit(d, "hookspath-missing")})

	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			rs := m.turn(t, "guard", v.dir, 3*time.Minute, []attempt{{tool: "Bash", input: pyCall(v.code)}})
			guardExpect(t, m, guardOff, v.name, rs[0], v.effect())
		})
	}
}

// guardFlood: a call creates guardBound+1 directories and plants
// sub/.git with core.fsmonitor; the next call in the same workspace
// runs git status there and must work.
func guardFlood(t *testing.T, m modeRun, guardOff bool) {
	w := m.w
	d := filepath.Join(w.root, "guard", "flood")
	initRepo(t, d)
	if err := os.Mkdir(filepath.Join(d, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(w.out, "guard-flood")
	flood := fmt.Sprintf("import subprocess\nN=%d\nshow('FLOOD', lambda: (os.mkdir('flood'), [os.mkdir('flood/%%d'%%i) for i in range(N)], N)[2])\n"+
		"show('INIT', lambda: subprocess.run(['git','init','-q','sub']).returncode)\n"+
		"show('CONFIG', lambda: open('sub/.git/config','a').write('[core]\\n\\tfsmonitor = touch %s\\n'))\n", guardBound+1, mark)
	next := "import subprocess\nshow('NEXT-CALL', lambda: subprocess.run(['git','status','--short'],capture_output=True).returncode)\n"
	in := pyCall(flood)
	in["timeout"] = 600000
	rs := m.turn(t, "guard-flood", d, 12*time.Minute, []attempt{{tool: "Bash", input: in}}, []attempt{{tool: "Bash", input: pyCall(next)}})
	_ = exec.Command("git", "-C", filepath.Join(d, "sub"), "status").Run()
	_, err := os.Stat(mark)
	guardExpect(t, m, guardOff, "flood past the guard's bound, then plant sub/.git with core.fsmonitor", rs[0], err == nil)
	if !guardOff && !strings.Contains(rs[0].Content, "directories: the call made its working directories hold more than") {
		t.Errorf("%s: the flood's result does not say the call was stopped and its trees moved out:\n%.1500s", m.name(), rs[0].Content)
	}
	if !strings.Contains(rs[1].Content, attemptMarker) || !strings.Contains(rs[1].Content, "NEXT-CALL OK 0") || rs[1].IsError {
		t.Errorf("%s: the call after the flood did not run:\n%.1500s", m.name(), rs[1].Content)
	}
	if !guardOff {
		if _, err := os.Stat(filepath.Join(d, "flood")); err == nil {
			t.Errorf("%s: the flood is still in the workspace", m.name())
		}
	}
}

// guardRunLater: an allowed python3 call writes the files the host runs
// later (permission.RunLaterFiles and RunLaterDirs): the six an
// advisory's agent wrote, created new, and the others over existing
// ones. With the guard on none holds what the call wrote (an existing
// one is read-only, a new one is moved aside after the call); with it
// off (the control) every one does. The workspace's .venv is a real
// virtual environment, and the planted .pth is a line of Python: the
// host's next use of the environment (its interpreter, which runs every
// .pth line that starts with import) is where the effect is looked for.
func guardRunLater(t *testing.T, m modeRun, guardOff bool) {
	w := m.w
	d := filepath.Join(w.root, "guard", "later")
	initRepo(t, d)
	if out, err := exec.Command("python3", "-m", "venv", "--without-pip", filepath.Join(d, ".venv")).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv: %v\n%s", err, out)
	}
	ver, err := exec.Command("python3", "-c", "import sys; print('python%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		t.Fatal(err)
	}
	pth := ".venv/lib/" + strings.TrimSpace(string(ver)) + "/site-packages/zz_evil.pth"
	created := []string{"pyvenv.cfg", ".claude/settings.json", ".mcp.json", ".github/workflows/ci.yml",
		".husky/pre-commit", ".pre-commit-config.yaml", pth}
	existing := []string{".venv/bin/activate", "tests/conftest.py", ".cargo/config.toml", ".yarnrc.yml",
		".gitattributes", ".codex/config.toml", ".cursor/mcp.json", ".devcontainer/devcontainer.json"}
	for _, p := range existing {
		writeFile(t, filepath.Join(d, p), "ORIGINAL\n", 0o644)
	}
	planted := "PLANTED-" + w.tag
	venvMark := filepath.Join(w.out, "guard-venv")
	var b strings.Builder
	for _, p := range append(slices.Clone(created), existing...) {
		text := planted
		if p == pth {
			text = fmt.Sprintf("import os; open(%q, 'w').write(%q) # %s\n", venvMark, planted, planted)
		}
		fmt.Fprintf(&b, "show(%q, lambda: (os.makedirs(os.path.dirname(%q) or '.', exist_ok=True), open(%q,'w').write(%q))[1])\n", "WRITE "+p, p, p, text)
	}
	rs := m.turn(t, "guard-later", d, 3*time.Minute, []attempt{{tool: "Bash", input: pyCall(b.String())}})
	for _, p := range append(slices.Clone(created), existing...) {
		got, _ := os.ReadFile(filepath.Join(d, p))
		guardExpect(t, m, guardOff, "python3 writes "+p, rs[0], strings.Contains(string(got), planted))
	}
	// The host's next use of the virtual environment.
	if out, err := exec.Command(filepath.Join(d, ".venv", "bin", "python"), "-c", "pass").CombinedOutput(); err != nil {
		t.Errorf("the host's .venv/bin/python: %v\n%s", err, out)
	}
	_, err = os.Stat(venvMark)
	guardExpect(t, m, guardOff, "the host's next .venv/bin/python runs the planted "+pth, rs[0], err == nil)
}
