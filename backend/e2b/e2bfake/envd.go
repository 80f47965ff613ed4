// The envd endpoint: how its requests are routed (/health, /files, the
// process Start stream, the unary RPCs), what the proxy and envd check
// before routing one (admit), and envd's path resolution. The Connect
// protocol is in connect.go, the services in process.go, filesystem.go
// and files.go.

package e2bfake

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
)

// plainError writes envd's and the proxy's non-Connect error body.
func plainError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": status, "message": msg})
}

func (s *Server) serveEnvd(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" && r.Method == http.MethodGet {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	sb, ok := s.admit(w, r)
	if !ok {
		return
	}
	if r.URL.Path == "/files" {
		s.serveFiles(w, r)
		return
	}
	if !admitConnect(w, r) {
		return
	}
	proc := strings.TrimPrefix(r.URL.Path, "/")
	if proc == "process.Process/Start" {
		s.start(w, r, &sb)
		return
	}
	s.serveUnary(w, r, proc)
}

// admit checks what the proxy and envd check before routing a request:
// the sandbox is running and addressed on envd's port, the client is not
// the legacy connect-python one, and the access token matches. It returns
// a copy of the sandbox, or false when it has written the error.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (Sandbox, bool) {
	// The proxy routes by header when the host is localhost or an IP.
	id := r.Header.Get("E2b-Sandbox-Id")
	s.mu.Lock()
	s.expireLocked()
	sb, ok := s.sandboxes[id]
	var sbCopy Sandbox
	if ok {
		sbCopy = *sb
	}
	s.mu.Unlock()
	if !ok || sbCopy.State != "running" || r.Header.Get("E2b-Sandbox-Port") != "49983" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		_ = json.NewEncoder(w).Encode(map[string]any{"sandboxId": id, "message": "The sandbox was not found", "code": 502})
		return Sandbox{}, false
	}
	if r.Header.Get("User-Agent") == "connect-python" {
		plainError(w, http.StatusBadRequest, "e2bfake: the legacy connect-python conversion path is not supported")
		return Sandbox{}, false
	}
	if sbCopy.AccessToken != "" && r.Header.Get("X-Access-Token") != sbCopy.AccessToken {
		plainError(w, http.StatusUnauthorized, "unauthorized access, please provide a valid access token or method signing if supported")
		return Sandbox{}, false
	}
	return sbCopy, true
}

// unaryHandler returns the handler of a unary RPC, or nil.
func (s *Server) unaryHandler(proc string) func([]byte) (any, *connectError) {
	return map[string]func([]byte) (any, *connectError){
		"process.Process/SendSignal":    s.sendSignal,
		"filesystem.Filesystem/Stat":    s.stat,
		"filesystem.Filesystem/ListDir": s.listDir,
		"filesystem.Filesystem/MakeDir": s.makeDir,
		"filesystem.Filesystem/Move":    s.move,
		"filesystem.Filesystem/Remove":  s.remove,
	}[proc]
}

// resolve maps a request path like envd: "~" and relative paths are under
// the user's home.
func (s *Server) resolve(p string) string {
	switch {
	case p == "" || p == "~":
		return s.Home
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(s.Home, p[2:])
	case !filepath.IsAbs(p):
		return filepath.Join(s.Home, p)
	}
	return filepath.Clean(p)
}
