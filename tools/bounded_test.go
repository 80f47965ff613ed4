package tools

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/backend/local"
)

// boundedTree is a workspace holding a 200 GB sparse file, a FIFO with no
// writer, and a small file that matches "needle".
func boundedTree(t *testing.T) (dir, sparse, fifo, small string) {
	t.Helper()
	dir = t.TempDir()
	sparse, fifo, small = filepath.Join(dir, "huge.log"), filepath.Join(dir, "pipe"), filepath.Join(dir, "small.txt")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(200 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(small, []byte("a needle here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, sparse, fifo, small
}

// within runs f and fails the test if it takes longer than d.
func within(t *testing.T, d time.Duration, what string, f func() Result) Result {
	t.Helper()
	done := make(chan Result, 1)
	start := time.Now()
	go func() { done <- f() }()
	select {
	case r := <-done:
		t.Logf("%s: %s", what, time.Since(start).Round(time.Millisecond))
		return r
	case <-time.After(d):
		t.Fatalf("%s: still running after %s", what, d)
		return Result{}
	}
}

// TestFileToolsCannotHurtTheWorker: Read, Edit and Write refuse a 200 GB
// sparse file with a clear error at once, without the heap growing, and
// a FIFO at once (a plain open of it would block the call for good);
// Grep's Go engine over a directory holding both returns promptly, finds
// the match in the small file and says which files it skipped. The
// small file reads normally (the control).
func TestFileToolsCannotHurtTheWorker(t *testing.T) {
	dir, sparse, fifo, small := boundedTree(t)
	env := &Env{Backend: local.New(dir), Workdir: dir, State: &State{}}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := within(t, 5*time.Second, "Read 200 GB sparse", func() Result { return callTool(t, Read{}, env, ReadInput{FilePath: sparse}) })
	runtime.ReadMemStats(&after)
	if !r.IsError || !strings.Contains(r.Content, "214748364800 bytes") || !strings.Contains(r.Content, "Use Bash") {
		t.Errorf("Read of the sparse file: %v %q", r.IsError, r.Content)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("Read of the sparse file allocated %d bytes", grew)
	}
	r = within(t, 5*time.Second, "Read FIFO", func() Result { return callTool(t, Read{}, env, ReadInput{FilePath: fifo}) })
	if !r.IsError || !strings.Contains(r.Content, "not a regular file") {
		t.Errorf("Read of the FIFO: %v %q", r.IsError, r.Content)
	}
	// As if an earlier Read had seen the sparse file (a Read of it is
	// refused): Edit and Write then reach their own reads of it.
	fi, err := env.Backend.Stat(context.Background(), sparse)
	if err != nil {
		t.Fatal(err)
	}
	recordRead(env, sparse, fi)
	for name, call := range map[string]func() Result{
		"Edit sparse": func() Result {
			return callTool(t, Edit{}, env, EditInput{FilePath: sparse, OldString: "a", NewString: "b"})
		},
		"Write sparse": func() Result { return callTool(t, Write{}, env, WriteInput{FilePath: sparse, Content: "x"}) },
	} {
		r := within(t, 5*time.Second, name, call)
		if !r.IsError || !strings.Contains(r.Content, "214748364800 bytes") {
			t.Errorf("%s: %q, want the size error", name, r.Content)
		}
	}
	if fi2, _ := os.Stat(sparse); fi2.Size() != 200<<30 {
		t.Errorf("the sparse file changed size: %d", fi2.Size())
	}
	r = within(t, 5*time.Second, "Write FIFO", func() Result { return callTool(t, Write{}, env, WriteInput{FilePath: fifo, Content: "x"}) })
	if !r.IsError {
		t.Errorf("Write of the FIFO: %q, want an error", r.Content)
	}
	if r := callTool(t, Read{}, env, ReadInput{FilePath: small}); r.IsError || !strings.Contains(r.Content, "needle") {
		t.Errorf("control: Read of the small file: %q", r.Content)
	}

	r = within(t, 10*time.Second, "Grep (Go engine) over the directory", func() Result {
		return callTool(t, Grep{Engine: GrepGo}, env, GrepInput{Pattern: "needle", Path: dir, OutputMode: "files_with_matches"})
	})
	if r.IsError || !strings.Contains(r.Content, small) || !strings.Contains(r.Content, "Not searched: 2 file(s)") ||
		!strings.Contains(r.Content, fifo+" (not a regular file)") || !strings.Contains(r.Content, sparse+" (214748364800 bytes") {
		t.Errorf("Grep over the directory: %v %q", r.IsError, r.Content)
	}
	if haveRipgrep(t) {
		// rg skips what the Go engine skips: without --max-filesize it
		// reads the sparse file's zeros until its 30 s timeout.
		r = within(t, 10*time.Second, "Grep (rg) over the directory", func() Result {
			return callTool(t, Grep{Engine: GrepRipgrep, Timeout: 30 * time.Second}, env, GrepInput{Pattern: "needle", Path: dir, OutputMode: "files_with_matches"})
		})
		if r.IsError || !strings.Contains(r.Content, small) {
			t.Errorf("Grep (rg) over the directory: %v %q", r.IsError, r.Content)
		}
	}
	r = within(t, 10*time.Second, "Grep (Go engine) of the FIFO", func() Result {
		return callTool(t, Grep{Engine: GrepGo}, env, GrepInput{Pattern: "needle", Path: fifo})
	})
	if !strings.Contains(r.Content, "not a regular file") {
		t.Errorf("Grep of the FIFO: %q", r.Content)
	}
}
