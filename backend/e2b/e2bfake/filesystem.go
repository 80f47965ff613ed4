// The filesystem service: Stat, ListDir, MakeDir, Move and Remove, and
// the EntryInfo they answer.

package e2bfake

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// entry builds a protojson EntryInfo: zero values omitted, int64 size as
// a string, mode holding only the permission bits.
func entry(p string, fi fs.FileInfo) map[string]any {
	m := map[string]any{"name": fi.Name(), "path": p, "permissions": fi.Mode().String()}
	mode := fi.Mode()
	if mode&fs.ModeSymlink != 0 {
		if target, err := os.Readlink(p); err == nil {
			m["symlinkTarget"] = target
		}
		if tfi, err := os.Stat(p); err == nil {
			mode = tfi.Mode()
		}
	}
	switch {
	case mode.IsDir():
		m["type"] = "FILE_TYPE_DIRECTORY"
	case mode.IsRegular():
		m["type"] = "FILE_TYPE_FILE"
	}
	if fi.Size() != 0 {
		m["size"] = strconv.FormatInt(fi.Size(), 10)
	}
	if perm := uint32(fi.Mode().Perm()); perm != 0 {
		m["mode"] = perm
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		m["owner"], m["group"] = strconv.Itoa(int(st.Uid)), strconv.Itoa(int(st.Gid))
		if u, err := user.LookupId(m["owner"].(string)); err == nil {
			m["owner"] = u.Username
		}
		if g, err := user.LookupGroupId(m["group"].(string)); err == nil {
			m["group"] = g.Name
		}
	}
	m["modifiedTime"] = fi.ModTime().UTC().Format(time.RFC3339Nano)
	return m
}

func fsError(err error, notFound string) *connectError {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return cerr("not_found", "%s: %v", notFound, err)
	case errors.Is(err, fs.ErrPermission):
		return cerr("permission_denied", "%v", err)
	}
	return cerr("internal", "%v", err)
}

type pathReq struct {
	Path  string  `json:"path"`
	Depth *uint32 `json:"depth"`
}

func (s *Server) stat(body []byte) (any, *connectError) {
	var req pathReq
	if e := decodeMessage(body, &req); e != nil {
		return nil, e
	}
	if req.Depth != nil {
		return nil, cerr("invalid_argument", "unmarshal message: unknown field \"depth\"")
	}
	p := s.resolve(req.Path)
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, fsError(err, "file not found")
	}
	return map[string]any{"entry": entry(p, fi)}, nil
}

func (s *Server) listDir(body []byte) (any, *connectError) {
	var req pathReq
	if e := decodeMessage(body, &req); e != nil {
		return nil, e
	}
	depth := uint32(1)
	if req.Depth != nil && *req.Depth > 0 {
		depth = *req.Depth
	}
	root := s.resolve(req.Path)
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fsError(err, "directory not found")
	}
	if !fi.IsDir() {
		return nil, cerr("invalid_argument", "path is not a directory: %s", root)
	}
	entries := []map[string]any{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		level := uint32(strings.Count(rel, string(filepath.Separator)) + 1)
		info, err := d.Info()
		if err != nil {
			return nil // removed since the listing
		}
		entries = append(entries, entry(p, info))
		if d.IsDir() && level >= depth {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fsError(err, "error reading directory")
	}
	return map[string]any{"entries": entries}, nil
}

func (s *Server) makeDir(body []byte) (any, *connectError) {
	var req struct {
		Path string `json:"path"`
	}
	if e := decodeMessage(body, &req); e != nil {
		return nil, e
	}
	p := s.resolve(req.Path)
	if fi, err := os.Stat(p); err == nil {
		if fi.IsDir() {
			return nil, cerr("already_exists", "directory already exists: %s", p)
		}
		return nil, cerr("invalid_argument", "path already exists but it is not a directory: %s", p)
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return nil, fsError(err, "error creating directory")
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, fsError(err, "error creating directory")
	}
	return map[string]any{"entry": entry(p, fi)}, nil
}

func (s *Server) move(body []byte) (any, *connectError) {
	var req struct {
		Source      string `json:"source"`
		Destination string `json:"destination"`
	}
	if e := decodeMessage(body, &req); e != nil {
		return nil, e
	}
	src, dst := s.resolve(req.Source), s.resolve(req.Destination)
	if _, err := os.Lstat(src); err != nil {
		return nil, fsError(err, "source file not found")
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, fsError(err, "error creating destination directory")
	}
	if err := os.Rename(src, dst); err != nil {
		return nil, fsError(err, "error moving")
	}
	fi, err := os.Lstat(dst)
	if err != nil {
		return nil, fsError(err, "error moving")
	}
	return map[string]any{"entry": entry(dst, fi)}, nil
}

func (s *Server) remove(body []byte) (any, *connectError) {
	var req struct {
		Path string `json:"path"`
	}
	if e := decodeMessage(body, &req); e != nil {
		return nil, e
	}
	if err := os.RemoveAll(s.resolve(req.Path)); err != nil {
		return nil, cerr("internal", "error removing: %v", err)
	}
	return struct{}{}, nil
}
