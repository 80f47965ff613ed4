package inbox

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
	"github.com/wardenhq/warden/tools"
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

func buildUsers(users map[string]User, roles map[string]Role) ([]namedUser, error) {
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

// MetricSigninFailures counts requests to the inbox whose credentials
// were refused, by how they were presented (label "method": link,
// bearer, basic or cookie). Requests without credentials are not counted.
const MetricSigninFailures = "warden_inbox_signin_failures_total"

// newSigninFailures builds the sign-in failure counter, registered with
// reg when it is not nil.
func newSigninFailures(reg prometheus.Registerer) *prometheus.CounterVec {
	opts := prometheus.CounterOpts{
		Name: MetricSigninFailures,
		Help: "Inbox requests whose credentials (token link, bearer token, basic auth or cookie) were refused.",
	}
	if reg != nil {
		return promauto.With(reg).NewCounterVec(opts, []string{"method"})
	}
	return prometheus.NewCounterVec(opts, []string{"method"})
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

// roleRoot is the workspace a role check resolves relative paths
// against. The inbox does not know the turn's workspace, so a relative
// path only matches a relative role pattern ("src/a.go" and Edit(src/**)),
// after cleaning ("src/../../etc/passwd" is /etc/passwd, which it does
// not match), and an absolute path only an absolute one.
const roleRoot = "/.warden-role-check"

// covers reports whether the role rules cover a call. It asks the one
// decision function (tools.Decide) whether the rules, as the only allow
// rules and with nothing allowed otherwise (no read-only or mode
// shortcut), allow the call: so Bash is matched per simple command, paths
// are matched cleaned, and a sensitive path or a file outside the
// workspace still needs an unrestricted approver. A tool that is not
// built in (an MCP tool) is covered only by a rule naming the whole tool.
func covers(rules []permission.Rule, tool string, input json.RawMessage) bool {
	var t tools.Tool
	for _, b := range tools.Builtins() {
		if b.Info().Name == tool {
			t = b
			break
		}
	}
	if t == nil {
		return slices.ContainsFunc(rules, func(r permission.Rule) bool { return r.Tool == tool && r.Content == "" })
	}
	pc := permission.Context{Mode: permission.ModeDontAsk, Allow: rules, RulesOnly: true}
	v, err := tools.Decide(context.Background(), tools.Call{Tool: t, Input: input, Workdir: roleRoot, Policy: &pc})
	return err == nil && v.Behavior == permission.Allow
}

// ruleWithin reports whether the rule r (one an approver wants to add
// with "always allow") is no wider than one of the role rules: the same
// tool, and a content the role's content covers. A rule may never widen
// what the approver's roles allow: a user whose role allows only
// Bash(kubectl:*) cannot add Bash, Bash(*) or Bash(rm:*).
func ruleWithin(r permission.Rule, roles []permission.Rule) bool {
	for _, q := range roles {
		if q.Tool != r.Tool {
			continue
		}
		if q.Content == "" {
			return true
		}
		if r.Content == "" {
			continue
		}
		if contentWithin(r.Tool, r.Content, q.Content) {
			return true
		}
	}
	return false
}

// contentWithin reports whether every call rule content rc matches is
// also matched by role content qc.
func contentWithin(tool, rc, qc string) bool {
	if rc == qc {
		return true
	}
	switch tool {
	case "Bash":
		if strings.HasSuffix(qc, ":*") {
			qp := strings.Join(strings.Fields(qc[:len(qc)-2]), " ")
			if strings.HasSuffix(rc, ":*") {
				rp := strings.Join(strings.Fields(rc[:len(rc)-2]), " ")
				return qp != "" && (rp == qp || strings.HasPrefix(rp, qp+" "))
			}
		}
		// An exact command (no wildcard) the role's pattern matches.
		// An exact command (no wildcard): the role must allow it as it
		// would allow the call, per simple command.
		return !strings.Contains(rc, "*") && shell.Analyze(rc, shell.Config{}).MatchRule(qc, permission.Allow)
	case "Read", "Edit", "Write", "Glob", "Grep":
		// Both are patterns: the cleaned rule pattern, read literally,
		// must be matched by the role pattern ("src/a/**" is within
		// "src/**"; "src/../**" cleans to "**", which is not).
		clean := func(p string) string {
			trail := strings.HasSuffix(p, "/")
			p = path.Clean(p)
			if trail && p != "/" {
				p += "/"
			}
			return p
		}
		rc, qc = clean(rc), clean(qc)
		if (path.IsAbs(rc)) != (path.IsAbs(qc)) || strings.HasPrefix(rc, "../") || rc == ".." {
			return false
		}
		ok, err := doublestar.Match(qc, rc)
		return err == nil && ok
	}
	return false
}

// Policy answers who may decide which calls, for decisions made outside
// the web page (the CLI's --by): the same users and roles as the inbox.
type Policy struct{ users []namedUser }

// NewPolicy checks users and roles like New does.
func NewPolicy(users map[string]User, roles map[string]Role) (*Policy, error) {
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
	if u.rules != nil && !ruleWithin(r, u.rules) {
		return fmt.Errorf("rule %s is wider than what %s's roles allow", r, u.name)
	}
	return nil
}
