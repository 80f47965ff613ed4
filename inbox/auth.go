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
	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/permission"
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

func buildUsers(users map[string]config.InboxUser, roles map[string]config.InboxRole) ([]namedUser, error) {
	var out []namedUser
	for name, u := range users {
		if name == "" || strings.ContainsAny(name, ":\n") {
			return nil, fmt.Errorf("inbox: invalid user name %q", name)
		}
		if u.Token == "" && u.Password == "" {
			return nil, fmt.Errorf("inbox: user %q has neither a token nor a password", name)
		}
		nu := namedUser{name: name, u: u}
		for _, rn := range u.Roles {
			role, ok := roles[rn]
			if !ok {
				return nil, fmt.Errorf("inbox: user %q has unknown role %q", name, rn)
			}
			for _, p := range role.Allow {
				rule, err := permission.ParseRule(p, permission.Allow)
				if err != nil {
					return nil, fmt.Errorf("inbox: role %q: %w", rn, err)
				}
				nu.rules = append(nu.rules, rule)
			}
		}
		if len(u.Roles) > 0 && nu.rules == nil {
			nu.rules = []permission.Rule{} // roles that allow nothing
		}
		out = append(out, nu)
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

// may reports whether user may answer a call of tool with input.
func (s *Server) may(user, tool string, input json.RawMessage) bool {
	u, ok := s.user(user)
	if !ok {
		return false
	}
	if u.rules == nil {
		return true
	}
	return covers(u.rules, tool, input)
}

// covers reports whether the role rules cover a call: the workflow's
// own check (roles.Cover, which asks the one decision function),
// so the inbox and the turn agree.
func covers(rules []permission.Rule, tool string, input json.RawMessage) bool {
	return roles.Cover(rules, tool, input)
}

// Policy answers who may decide which calls, for decisions made outside
// the web page (the CLI's --by): the same users and roles as the inbox.
type Policy struct{ users []namedUser }

// NewPolicy checks users and roles like New does.
func NewPolicy(users map[string]config.InboxUser, roles map[string]config.InboxRole) (*Policy, error) {
	us, err := buildUsers(users, roles)
	if err != nil {
		return nil, err
	}
	return &Policy{users: us}, nil
}

// Allows reports whether user may answer a call of tool with input: the
// user must exist, and its roles (if any) must cover the call.
func (p *Policy) Allows(user, tool string, input json.RawMessage) bool {
	for _, u := range p.users {
		if u.name == user {
			return u.rules == nil || covers(u.rules, tool, input)
		}
	}
	return false
}

// AllowsRule reports whether user may add the always-allow rule (written
// as "Tool" or "Tool(content)"): the user must exist, and the rule must be
// no wider than its roles (if any).
func (p *Policy) AllowsRule(user, rule string) bool {
	for _, u := range p.users {
		if u.name == user {
			return mayAddRule(u, rule) == nil
		}
	}
	return false
}

// mayAddRule checks one always-allow rule against u's roles.
func mayAddRule(u namedUser, rule string) error {
	r, err := permission.ParseRule(rule, permission.Allow)
	if err != nil {
		return fmt.Errorf("rule %q: %w", rule, err)
	}
	if u.rules != nil && !roles.Within(r, u.rules) {
		return fmt.Errorf("rule %s is wider than what %s's roles allow", r, u.name)
	}
	return nil
}
