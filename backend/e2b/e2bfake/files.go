// GET and POST /files: download of one file, and upload (octet-stream
// or multipart).

package e2bfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
)

func (s *Server) serveFiles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if u := q.Get("username"); q.Has("username") && u != User {
		plainError(w, http.StatusUnauthorized, fmt.Sprintf("error looking up user '%s': user: unknown user %s", u, u))
		return
	}
	switch r.Method {
	case http.MethodGet:
		if !q.Has("path") {
			plainError(w, http.StatusBadRequest, "path is required")
			return
		}
		p := s.resolve(q.Get("path"))
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			plainError(w, http.StatusNotFound, fmt.Sprintf("path '%s' does not exist", p))
			return
		case err != nil:
			plainError(w, http.StatusInternalServerError, fmt.Sprintf("error checking if path exists: %v", err))
			return
		case fi.IsDir():
			plainError(w, http.StatusBadRequest, fmt.Sprintf("path '%s' is a directory", p))
			return
		}
		f, err := os.Open(p)
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, fs.ErrPermission) {
				status = http.StatusForbidden
			}
			plainError(w, status, fmt.Sprintf("error opening file '%s': %v", p, err))
			return
		}
		defer f.Close()
		w.Header().Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": filepath.Base(p)}))
		http.ServeContent(w, r, filepath.Base(p), fi.ModTime(), f)
	case http.MethodPost:
		s.upload(w, r)
	default:
		plainError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		plainError(w, http.StatusBadRequest, "error parsing content type: "+err.Error())
		return
	}
	u := &uploader{s: s}
	var status int
	var msg string
	switch mt {
	case "application/octet-stream":
		if !q.Has("path") {
			plainError(w, http.StatusBadRequest, "path is required for an octet-stream upload")
			return
		}
		status, msg = u.put(q.Get("path"), r.Body)
	case "multipart/form-data":
		status, msg = u.multipart(r, q, params["boundary"])
	default:
		status, msg = http.StatusBadRequest, fmt.Sprintf("unsupported content type %q", mt)
	}
	if status != 0 {
		plainError(w, status, msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(u.out)
}

// written is one file of an upload's answer.
type written struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// uploader writes the files of one upload. Its methods return the status
// and message of an error, or 0.
type uploader struct {
	s   *Server
	out []written
}

// put writes rd to the file dst names.
func (u *uploader) put(dst string, rd io.Reader) (int, string) {
	p := u.s.resolve(dst)
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return http.StatusBadRequest, fmt.Sprintf("path '%s' is a directory", p)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return statusFor(err), fmt.Sprintf("error ensuring directories: %v", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return statusFor(err), fmt.Sprintf("error opening file '%s': %v", p, err)
	}
	_, err = io.Copy(f, rd)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return http.StatusInternalServerError, fmt.Sprintf("error writing file '%s': %v", p, err)
	}
	u.out = append(u.out, written{Path: p, Name: filepath.Base(p), Type: "file"})
	return 0, ""
}

// multipart writes each "file" part, to the path the query names or
// else to the part's file name.
func (u *uploader) multipart(r *http.Request, q url.Values, boundary string) (int, string) {
	if boundary == "" {
		return http.StatusBadRequest, "multipart boundary missing"
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return http.StatusBadRequest, "error parsing multipart: " + err.Error()
	}
	seen := map[string]bool{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return http.StatusBadRequest, "error reading multipart: " + err.Error()
		}
		if part.FormName() != "file" {
			continue
		}
		dst := part.FileName()
		if q.Has("path") {
			dst = q.Get("path")
		}
		switch {
		case dst == "":
			return http.StatusBadRequest, "part without a destination path"
		case seen[dst]:
			return http.StatusBadRequest, fmt.Sprintf("cannot upload multiple files to the same path '%s'", dst)
		}
		seen[dst] = true
		if status, msg := u.put(dst, part); status != 0 {
			return status, msg
		}
	}
	if len(u.out) == 0 {
		return http.StatusBadRequest, "no file part in the request"
	}
	return 0, ""
}

func statusFor(err error) int {
	if errors.Is(err, fs.ErrPermission) {
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}
