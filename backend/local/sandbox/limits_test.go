package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/backend/local/cgroup"
	"github.com/wardenhq/warden/backend/local/sandbox/child"
	"github.com/wardenhq/warden/calls"
)

// limitsScript prints what the process sees of its limits: its
// cgroups, its file size rlimit and its TMPDIR's file system.
const limitsScript = `cat /proc/self/cgroup; echo "fsize=$(ulimit -f)"; stat -f -c "tmpfs=%T blocks=%b bsize=%S" "$TMPDIR"`

// TestJoinBeforeExec: a process the zygote starts (and one the helper
// starts, the slow path) is in its call's cgroups from its first
// instruction (the groups are joined through descriptors the worker
// opened, from inside the zygote's user namespace), has the rlimits it
// asked for and a TMPDIR that is a tmpfs of the size asked. Control:
// without them it is in the worker's groups, with no file size limit and
// its TMPDIR on the disk.
func TestJoinBeforeExec(t *testing.T) {
	m, err := cgroup.Open(cgroup.Options{CPUShare: true})
	if err != nil {
		t.Fatalf("cgroups: %v", err)
	}
	defer m.Close()
	z := zygoteOf(t, child.ZygoteSpec{})
	for _, path := range []string{"zygote", "helper"} {
		for _, limited := range []bool{true, false} {
			g, err := m.New(calls.Limits{Processes: 100, Memory: 64 << 20})
			if err != nil {
				t.Fatal(err)
			}
			dir, tmp := t.TempDir(), t.TempDir()
			req := Request{Write: []string{dir, tmp}, Dir: dir, Env: append(testEnv, "TMPDIR="+tmp), Argv: []string{"bash", "-c", limitsScript}}
			var files []*os.File
			if limited {
				req.Rlimits = []child.Rlimit{{Resource: unix.RLIMIT_FSIZE, Cur: 1 << 20, Max: 1 << 20}}
				req.Tmp, req.TmpSize = tmp, 8<<20
				files = g.Procs()
			}
			var out, errs bytes.Buffer
			if path == "zygote" {
				res, err := z.RunCall(context.Background(), req, Call{Stdout: &out, Stderr: &errs, Cgroups: files})
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("%s: %v %+v %s", path, err, res, errs.String())
				}
			} else {
				spec := Spec{Write: req.Write, Dir: dir, Argv: req.Argv, Cgroups: len(files), Rlimits: req.Rlimits, Tmp: req.Tmp, TmpSize: req.TmpSize}
				cmd, err := Command(context.Background(), spec, req.Env)
				if err != nil {
					t.Fatal(err)
				}
				cmd.ExtraFiles, cmd.Stdout, cmd.Stderr = files, &out, &errs
				if err := cmd.Run(); err != nil {
					t.Fatalf("%s: %v %s", path, err, errs.String())
				}
			}
			got := out.String()
			t.Logf("%s limited=%v:\n%s", path, limited, got)
			for _, d := range g.Dirs() {
				// /proc/self/cgroup names each group below its hierarchy's
				// mount: the call's directory ends with it.
				rel := filepath.Base(filepath.Dir(d)) + "/" + filepath.Base(d)
				if strings.Contains(got, rel+"\n") != limited {
					t.Errorf("%s limited=%v: in %s: %v", path, limited, rel, !limited)
				}
			}
			for _, want := range []string{"fsize=1024\n", "tmpfs=tmpfs blocks=2048 bsize=4096"} {
				if strings.Contains(got, want) != limited {
					t.Errorf("%s limited=%v: %q shown: %v", path, limited, want, !limited)
				}
			}
			if err := g.Remove(); err != nil {
				t.Error(err)
			}
			for _, d := range g.Dirs() {
				if _, err := os.Stat(d); err == nil {
					t.Errorf("%s still there", d)
				}
			}
		}
	}
}
