package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/calls"
)

// TestGrantsAsShown: a write path that does not exist yet is granted as
// that path, never its nearest existing ancestor. An approved `echo x >
// OUT/newapp/a.conf` writes it, and the same call cannot rewrite
// OUT/existing.conf or create OUT/other.new (the ancestor OUT is not
// writable); a new file in an existing directory, and a mkdir target,
// likewise. What the worker made for a call that left it untouched is
// removed. The control: the same writes succeed with the sandbox off.
func TestGrantsAsShown(t *testing.T) {
	ws, out := t.TempDir(), t.TempDir()
	existing := filepath.Join(out, "existing.conf")
	must(t, os.WriteFile(existing, []byte("orig\n"), 0o644))
	b := &local.Backend{Workdir: ws}
	run := func(be *local.Backend, write []string, script string) backend.ExecResult {
		t.Helper()
		prof := &calls.Sandbox{Write: append([]string{ws}, write...), Dirs: []string{ws}}
		res, err := be.Exec(backend.WithSandbox(context.Background(), prof), backend.ExecRequest{Argv: []string{"/bin/sh", "-c", script}, Dir: ws})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res.Stdout), "ran-42") {
			t.Fatalf("%q did not run: %q %q", script, res.Stdout, res.Stderr)
		}
		return res
	}
	attack := "echo y > " + existing + "; echo z > " + filepath.Join(out, "other.new") + "; "
	unchanged := func(what string) {
		t.Helper()
		if got, _ := os.ReadFile(existing); string(got) != "orig\n" {
			t.Errorf("%s: the ancestor's existing file was rewritten: %q", what, got)
		}
		if _, err := os.Stat(filepath.Join(out, "other.new")); err == nil {
			t.Errorf("%s: a new sibling was created in the ancestor", what)
			os.Remove(filepath.Join(out, "other.new"))
		}
	}

	// A new file in a new directory: the new directory is granted.
	conf := filepath.Join(out, "newapp", "a.conf")
	res := run(b, []string{conf}, attack+"echo x > "+conf+"; echo ran-$((40+2))")
	if got, _ := os.ReadFile(conf); string(got) != "x\n" {
		t.Errorf("the approved write: %q (stderr %q)", got, res.Stderr)
	}
	unchanged("new directory")

	// A new file in an existing directory: the file alone is granted.
	newFile := filepath.Join(out, "new.txt")
	res = run(b, []string{newFile}, attack+"echo hi > "+newFile+"; echo ran-$((40+2))")
	if got, _ := os.ReadFile(newFile); string(got) != "hi\n" {
		t.Errorf("the approved new file: %q (stderr %q)", got, res.Stderr)
	}
	unchanged("new file")

	// A mkdir target (the analyser marks it with a trailing slash).
	made := filepath.Join(out, "made")
	res = run(b, []string{made + "/"}, attack+"mkdir -p "+made+" && echo q > "+made+"/f; echo ran-$((40+2))")
	if got, _ := os.ReadFile(filepath.Join(made, "f")); string(got) != "q\n" {
		t.Errorf("the approved mkdir: %q (stderr %q)", got, res.Stderr)
	}
	unchanged("mkdir")

	// Granted paths the call did not write are gone afterwards.
	unusedFile, unusedDeep := filepath.Join(out, "unused.txt"), filepath.Join(out, "deep", "er", "x.conf")
	run(b, []string{unusedFile, unusedDeep}, "echo ran-$((40+2))")
	for _, p := range []string{unusedFile, filepath.Join(out, "deep")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s, made for the grant and left untouched, is still there", p)
		}
	}

	// Control: the attack's writes work unsandboxed.
	run(&local.Backend{Workdir: ws, Unsandboxed: true}, nil, attack+"echo ran-$((40+2))")
	if got, _ := os.ReadFile(existing); string(got) != "y\n" {
		t.Errorf("control: the existing file was not rewritten with the sandbox off: %q", got)
	}
}
