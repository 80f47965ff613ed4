package backend

import (
	"fmt"
	"strings"
)

// BaseEnvNames are the variables of the worker's environment that every
// tool process inherits on the local backend. They describe where and as
// whom a process runs, never credentials:
//
//   - PATH, HOME, USER, LOGNAME: how programs and the home directory are
//     found (LOGNAME is the POSIX spelling of USER, read by git and ssh);
//   - LANG, LANGUAGE and LC_* (a prefix): the locale, so tools print text
//     the way the user reads it;
//   - TERM, NO_COLOR: the terminal type and the colour opt-out;
//   - TZ: the time zone dates are printed in;
//   - TMPDIR: where temporary files go (a sandboxing setup often points
//     it into the workspace);
//   - SSL_CERT_FILE, SSL_CERT_DIR: the CA bundle OpenSSL-based tools
//     (curl, git, pip) verify servers with; a path, not a secret, and
//     without it HTTPS fails behind a corporate CA.
//
// A traced call's processes also get TRACEPARENT and TRACESTATE: the
// call's own trace context (TraceEnv), not the worker's variables.
//
// Everything else the worker holds (model API keys, TEMPORAL_API_KEY,
// the inbox token, the webhook secret, cloud credentials) stays out
// unless the configuration names it in backend.env.
func BaseEnvNames() []string {
	return []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_*", "TERM", "NO_COLOR", "TZ", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR"}
}

// baseEnvName reports whether name is one of BaseEnvNames.
func baseEnvName(name string) bool {
	switch name {
	case "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "NO_COLOR", "TZ", "TMPDIR",
		"SSL_CERT_FILE", "SSL_CERT_DIR":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// ValidEnvName reports whether s is a portable environment variable name
// (a letter or underscore, then letters, digits and underscores).
func ValidEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// ParseEnvSpec checks the entries of backend.env: "NAME" passes the
// worker's value of NAME through, "NAME=value" sets NAME to value.
// Errors name the offending entry.
func ParseEnvSpec(spec []string) error {
	for i, e := range spec {
		name, _, _ := strings.Cut(e, "=")
		if !ValidEnvName(name) {
			return fmt.Errorf("entry %d (%q): %q is not a valid variable name", i+1, e, name)
		}
	}
	return nil
}

// ResolveEnv turns backend.env entries into NAME=value pairs: a bare
// NAME takes its value from the worker's environment environ (and is
// left out when the worker does not have it), NAME=value is kept. Later
// entries override earlier ones.
func ResolveEnv(spec, environ []string) []string {
	var out []string
	for _, e := range spec {
		if strings.Contains(e, "=") {
			out = setEnv(out, e)
			continue
		}
		if v, ok := lookup(environ, e); ok {
			out = setEnv(out, e+"="+v)
		}
	}
	return out
}

// ToolEnv is the environment of a tool process on the local backend: the
// BaseEnvNames taken from the worker's environment environ, then the
// resolved backend.env entries extra, then the request's own entries
// req. Later entries override earlier ones; nothing else of environ is
// kept.
func ToolEnv(environ, extra, req []string) []string {
	out := make([]string, 0, 8+len(extra)+len(req))
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if ok && baseEnvName(name) {
			out = setEnv(out, kv)
		}
	}
	for _, kv := range extra {
		out = setEnv(out, kv)
	}
	for _, kv := range req {
		out = setEnv(out, kv)
	}
	return out
}

func lookup(environ []string, name string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// setEnv sets kv (NAME=value) in env, replacing an earlier NAME.
func setEnv(env []string, kv string) []string {
	name, _, _ := strings.Cut(kv, "=")
	for i, e := range env {
		if k, _, _ := strings.Cut(e, "="); k == name {
			env[i] = kv
			return env
		}
	}
	return append(env, kv)
}
