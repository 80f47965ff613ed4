package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend/local"
)

// walkTreeOf makes dirs directories of per empty .txt files under a new
// directory and returns it.
func walkTreeOf(t *testing.T, dirs, per int) string {
	t.Helper()
	root := t.TempDir()
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range per {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.txt", f)), []byte("needle\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// TestGlobBounded: a Glob over more entries than its bound stops at the
// bound and says so, keeping at most MaxResults matches (its memory does
// not grow with the matches); the control, with a bound above the
// tree's size, walks it all and says nothing of a stop.
func TestGlobBounded(t *testing.T) {
	root := walkTreeOf(t, 20, 100) // 2,020 entries
	env := &Env{Backend: local.New(root), Workdir: root, State: &State{}}
	in := GlobInput{Pattern: "**/*.txt", Path: root}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := callTool(t, Glob{MaxEntries: 500}, env, in)
	runtime.ReadMemStats(&after)
	if r.IsError || !strings.Contains(r.Content, "Glob stopped after looking at 500 entries") {
		t.Fatalf("bounded Glob: %v %q", r.IsError, r.Content)
	}
	if n := strings.Count(r.Content, ".txt"); n != GlobDefaultMaxResults {
		t.Errorf("bounded Glob shows %d paths, want %d", n, GlobDefaultMaxResults)
	}
	t.Logf("bounded Glob allocated %d KiB", (after.TotalAlloc-before.TotalAlloc)>>10)

	ctl := callTool(t, Glob{MaxEntries: 100_000}, env, in)
	if ctl.IsError || strings.Contains(ctl.Content, "stopped") || !strings.Contains(ctl.Content, "of 2000 matches") {
		t.Fatalf("control Glob: %v %q", ctl.IsError, ctl.Content[max(0, len(ctl.Content)-300):])
	}
}

// TestGrepGoBounded: the Go engine's walk stops at its bound of entries,
// searches what it found, and says it stopped; the control finds every
// file.
func TestGrepGoBounded(t *testing.T) {
	root := walkTreeOf(t, 20, 100)
	env := &Env{Backend: local.New(root), Workdir: root, State: &State{}}
	in := fmt.Sprintf(`{"pattern":"needle","path":%q,"output_mode":"count","head_limit":0}`, root)
	r := runGrep(t, Grep{Engine: GrepGo, MaxEntries: 500}, env, in)
	if r.IsError || !strings.Contains(r.Content, "stopped after looking at 500 entries") {
		t.Fatalf("bounded Grep: %v %q", r.IsError, r.Content[max(0, len(r.Content)-400):])
	}
	if n := strings.Count(r.Content, ".txt:"); n == 0 || n >= 500 {
		t.Errorf("bounded Grep counted %d files, want some and fewer than 500", n)
	}
	ctl := runGrep(t, Grep{Engine: GrepGo}, env, in)
	if ctl.IsError || strings.Contains(ctl.Content, "stopped") || strings.Count(ctl.Content, ".txt:") != 2000 {
		t.Fatalf("control Grep: %v, %d files: %q", ctl.IsError, strings.Count(ctl.Content, ".txt:"), ctl.Content[max(0, len(ctl.Content)-300):])
	}
}
