// Package content keeps a turn's conversation out of workflow history.
// Messages and tool results live in a Store under content-addressed ids;
// history, workflow state and continue-as-new inputs carry only those ids
// with small previews. Content is written before its id is returned to
// the workflow, so a replay or a retry on another worker never meets an
// id whose content is missing.
//
// The Store is keyed by turn (the workflow id) so a closed turn's content
// can be removed as a whole (see GC).
package content

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// ErrNotFound is returned (wrapped) by Store.Get for a missing object.
var ErrNotFound = errors.New("not found")

// Store holds content objects grouped by turn. Put must be durable when it
// returns. Names are content ids (see ID) or HeadName.
type Store interface {
	// Put writes an object. Writing a content id that exists is a no-op.
	Put(ctx context.Context, turn, name string, data []byte) error
	// Get reads an object; a missing one is an error wrapping ErrNotFound.
	Get(ctx context.Context, turn, name string) ([]byte, error)
	// Turns lists the turns that have objects.
	Turns(ctx context.Context) ([]string, error)
	// DeleteTurn removes all of a turn's objects.
	DeleteTurn(ctx context.Context, turn string) error
	// String describes the store for error messages ("fs:/path").
	String() string
}

// HeadName is the object that names a turn's latest conversation head
// (the only object that is rewritten). It serves inspection and GC; the
// workflow itself always carries its head, so the FS store writes it
// without syncing.
const HeadName = "HEAD"

// ID is the content id of data: its SHA-256 in hex.
func ID(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// PreviewBytes bounds a preview.
const PreviewBytes = 512

// Preview returns the head of s, at most PreviewBytes long, cut at a rune
// boundary, with an ellipsis when cut.
func Preview(s string) string {
	if len(s) <= PreviewBytes {
		return s
	}
	cut := PreviewBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// FS is a Store in a local directory: the embedded default, under the
// worker's data directory. Writes go to a temporary file that is synced
// and renamed into place, then the directory is synced.
type FS struct {
	Dir string
}

// NewFS returns a store rooted at dir, creating it (owner-only).
func NewFS(dir string) (*FS, error) {
	if err := os.MkdirAll(filepath.Join(dir, "turns"), 0o700); err != nil {
		return nil, fmt.Errorf("content store: %w", err)
	}
	return &FS{Dir: dir}, nil
}

// String implements Store.
func (s *FS) String() string { return "fs:" + s.Dir }

// turnDir escapes a workflow id into one path element.
func (s *FS) turnDir(turn string) string {
	return filepath.Join(s.Dir, "turns", EscapeTurn(turn))
}

// EscapeTurn makes a workflow id safe as one path element or key segment:
// path escaping, with dots escaped too so "." and ".." cannot occur.
func EscapeTurn(turn string) string {
	return strings.ReplaceAll(url.PathEscape(turn), ".", "%2E")
}

// UnescapeTurn reverses EscapeTurn.
func UnescapeTurn(s string) (string, error) {
	return url.PathUnescape(s)
}

func validName(name string) error {
	if name == HeadName {
		return nil
	}
	if len(name) != 64 || strings.Trim(name, "0123456789abcdef") != "" {
		return fmt.Errorf("content store: invalid object name %q", name)
	}
	return nil
}

// Put implements Store.
func (s *FS) Put(_ context.Context, turn, name string, data []byte) error {
	if err := validName(name); err != nil {
		return err
	}
	dir := s.turnDir(turn)
	path := filepath.Join(dir, name)
	if name != HeadName {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("content store: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("content store: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && name != HeadName {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("content store: write %s: %w", path, err)
	}
	if name == HeadName {
		return nil
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("content store: sync %s: %w", dir, err)
		}
	}
	return nil
}

// Get implements Store.
func (s *FS) Get(_ context.Context, turn, name string) ([]byte, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(s.turnDir(turn), name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("content store %s: turn %q object %s: %w", s, turn, name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("content store: %w", err)
	}
	return data, nil
}

// Turns implements Store.
func (s *FS) Turns(context.Context) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(s.Dir, "turns"))
	if err != nil {
		return nil, fmt.Errorf("content store: %w", err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		t, err := UnescapeTurn(e.Name())
		if err != nil {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// DeleteTurn implements Store.
func (s *FS) DeleteTurn(_ context.Context, turn string) error {
	if err := os.RemoveAll(s.turnDir(turn)); err != nil {
		return fmt.Errorf("content store: %w", err)
	}
	return nil
}
