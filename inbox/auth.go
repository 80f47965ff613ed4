package inbox

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// cookieName holds a token set by a ?token= link.
const cookieName = "warden_inbox_token"

// csrfHeader must be sent with every POST: a custom header cannot be set
// by a cross-origin form or a simple cross-origin fetch.
const csrfHeader = "X-Warden-Inbox"

type userKey struct{}

// userFrom returns the authenticated user name of a request.
func userFrom(r *http.Request) string {
	n, _ := r.Context().Value(userKey{}).(string)
	return n
}

// buildUsers checks the inbox's own part of its users (names,
// credentials, that their roles exist) and lists them by name. Who may
// answer what is the approvers' (client.Approvers), not theirs.
func buildUsers(users map[string]config.InboxUser, roles map[string]config.InboxRole) ([]namedUser, error) {
	var out []namedUser
	for name, u := range users {
		if name == "" || strings.ContainsAny(name, ":\n") {
			return nil, fmt.Errorf("inbox: invalid user name %q", name)
		}
		if u.Token == "" && u.Password == "" {
			return nil, fmt.Errorf("inbox: user %q has neither a token nor a password", name)
		}
		for _, rn := range u.Roles {
			if _, ok := roles[rn]; !ok {
				return nil, fmt.Errorf("inbox: user %q has unknown role %q", name, rn)
			}
		}
		out = append(out, namedUser{name: name, u: u})
	}
	slices.SortFunc(out, func(a, b namedUser) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

func eq(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// byToken finds the user of a token, comparing every user in constant
// time so the answer's timing tells nothing about which one matched.
func (s *Server) byToken(tok string) (string, bool) {
	found := ""
	for _, u := range s.users {
		if eq(tok, u.u.Token) {
			found = u.name
		}
	}
	return found, found != ""
}

func (s *Server) user(name string) (namedUser, bool) {
	for _, u := range s.users {
		if u.name == name {
			return u, true
		}
	}
	return namedUser{}, false
}

// authenticate finds the user of a request or answers 401. A ?token= on
// a GET sets a cookie and redirects to the same URL without the token.
// Refused credentials are counted in MetricSigninFailures.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	failed := "" // how refused credentials were presented
	if tok := r.URL.Query().Get("token"); tok != "" && r.Method == http.MethodGet {
		if name, ok := s.byToken(tok); ok {
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: tok, Path: "/", HttpOnly: true,
				Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return name, false
		}
		failed = "link"
	}
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		if name, ok := s.byToken(strings.TrimSpace(h[len("Bearer "):])); ok {
			return name, true
		}
		failed = "bearer"
	} else if user, pass, ok := r.BasicAuth(); ok {
		if u, found := s.user(user); found && eq(pass, u.u.Password) {
			return user, true
		}
		eq(pass, pass) // spend the same time on unknown users
		failed = "basic"
	} else if c, err := r.Cookie(cookieName); err == nil {
		if name, ok := s.byToken(c.Value); ok {
			return name, true
		}
		if failed == "" {
			failed = "cookie"
		}
	}
	if failed != "" {
		s.signinFailures.WithLabelValues(failed).Inc()
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="warden inbox", charset="UTF-8"`)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprint(w, "<!doctype html><title>warden inbox: log in</title><h1>Log in</h1>"+
		"<p>Open the inbox link with your token (<code>?token=…</code>), send <code>Authorization: Bearer</code>, or log in with your user name and password.</p>")
	return "", false
}

// may reports whether user may answer a call of tool with input in the
// workspace workdir, its paths leading through links (and, when edited
// is set, run it with that input instead): the check the turn makes of
// the answer (workflows.Approvers.MayAnswer).
func (s *Server) may(user, tool string, input, edited json.RawMessage, workdir string, links permission.Links) bool {
	return s.approvers.MayAnswer(workflows.WithLinks(s.roles, links), user, tool, input, edited, workdir) == nil
}

// restricted reports whether user's answers are limited by roles (or the
// user is no approver at all).
func (s *Server) restricted(user string) bool {
	if !s.approvers.Enabled() {
		return false // no approvers: anyone answers anything
	}
	rs, ok := s.approvers.Users[user]
	return !ok || len(rs) > 0
}
