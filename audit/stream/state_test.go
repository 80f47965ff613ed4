package stream

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// inode is p's inode number.
func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The state file and its copy are written in place: each keeps its
// inode across saves (a file renamed over a hidden one would detach the
// sandbox's mount over it in running calls), and both hold the state.
func TestSaveInPlace(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "state", "stream.json")
	s := &Streamer{State: p, Logger: quiet()}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	s.st.Since = time.Unix(1, 0).UTC()
	s.st.Turns["a"] = sent{Seq: 1, Hash: "h1"}
	s.save()
	ino, copyIno := inode(t, p), inode(t, p+CopySuffix)
	s.st.Turns["b"] = sent{Seq: 7, Hash: "h7"}
	s.save()
	if inode(t, p) != ino || inode(t, p+CopySuffix) != copyIno {
		t.Errorf("a save replaced the state file or its copy (inodes %d, %d, were %d, %d)", inode(t, p), inode(t, p+CopySuffix), ino, copyIno)
	}
	for _, f := range []string{p, p + CopySuffix} {
		r := &Streamer{State: f}
		if err := r.load(); err != nil {
			t.Fatal(err)
		}
		if r.st.Turns["b"].Seq != 7 || r.st.Turns["a"].Hash != "h1" {
			t.Errorf("%s holds %+v, not the state saved last", f, r.st)
		}
	}
}

// A state file cut short or missing (a crash while it was written) is
// read from its copy; neither whole is an error.
func TestLoadFallsBackToCopy(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "stream.json")
	s := &Streamer{State: p, Logger: quiet()}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	s.st.Turns["a"] = sent{Seq: 3, Hash: "h3"}
	s.save()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cut  func() error
	}{
		{"cut short", func() error { return os.WriteFile(p, b[:len(b)/2], 0o600) }},
		{"empty", func() error { return os.WriteFile(p, nil, 0o600) }},
		{"missing", func() error { return os.Remove(p) }},
	} {
		if err := c.cut(); err != nil {
			t.Fatal(err)
		}
		r := &Streamer{State: p}
		if err := r.load(); err != nil {
			t.Errorf("state file %s: %v", c.name, err)
		} else if r.st.Turns["a"].Seq != 3 {
			t.Errorf("state file %s: loaded %+v, not the copy's state", c.name, r.st)
		}
	}
	if err := os.WriteFile(p+CopySuffix, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (&Streamer{State: p}).load(); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("a state file and a copy both cut short load with %v, want an error naming them", err)
	}
}

// A symbolic link planted at the copy's name (before the worker made
// the copy) is not followed: the file it leads to stays as it was, and
// the worker refuses to load the state through it, naming it.
func TestSaveFollowsNoLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, victim := filepath.Join(dir, "stream.json"), filepath.Join(dir, "worker.key")
	if err := os.WriteFile(victim, []byte("wk1.key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, p+CopySuffix); err != nil {
		t.Fatal(err)
	}
	s := &Streamer{State: p, Logger: quiet(), st: state{Turns: map[string]sent{"a": {Seq: 1}}}}
	s.save()
	if b, err := os.ReadFile(victim); err != nil || string(b) != "wk1.key\n" {
		t.Errorf("the file the link leads to holds %q (%v), not what it held", b, err)
	}
	// The copy failed: the save stopped there, and there is no state
	// file to load instead of the copy.
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("save wrote the state file after its copy failed: %v", err)
	}
	if err := (&Streamer{State: p}).load(); err == nil || !strings.Contains(err.Error(), p+CopySuffix) {
		t.Errorf("loading through a link at the copy's name: %v, want an error naming it", err)
	}
}
