// Package inbox serves a web page where an operations team answers the
// pending approvals, AskUser questions and external calls of every
// running warden turn. It talks only to the warden client API
// ([client.Client]); pages are rendered on the server with html/template
// and kept current by a little vanilla JavaScript fed by server-sent events
// (GET /api/stream), falling back to polling a JSON endpoint.
//
// Sessions (workflows.TurnInput.Session) have a view of their own
// (session.go): the open sessions by state (GET /sessions), and a
// session's page (GET /session?id=) with its conversation, state and
// waiting calls, a box to message it (queue, steer, interrupt) and
// pause, resume and cancel buttons.
//
// Every request is authenticated (bearer token, token cookie or basic
// auth), every decision records the approver as [workflows.Approval.By],
// and users can be limited by roles to the tools (and Bash command
// prefixes) they may answer.
package inbox

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/workflows"
)

// DefaultListen is the address a server listens on when Config.Listen is
// empty (inbox.listen's default).
const DefaultListen = config.DefaultInboxListen

//go:embed assets
var assets embed.FS

// Config configures a Server. Client and at least one user are required.
type Config struct {
	// Client answers and lists pending calls.
	Client *client.Client
	// Listen is the address ListenAndServe binds (default DefaultListen).
	Listen string
	// TLSCert and TLSKey, when both set, make ListenAndServe serve HTTPS.
	TLSCert, TLSKey string
	// Users maps user names to their credentials and roles.
	Users map[string]config.InboxUser
	// Roles maps role names to the calls their members may answer.
	Roles map[string]config.InboxRole
	// Registerer receives the server's metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Refresh is how often the page polls for changes (default 2 s).
	Refresh time.Duration
	// Title is shown at the top of the page (default "warden inbox").
	Title string
	// Content is the store turns keep their conversations in; with it,
	// GET /conversation?workflow=ID shows a turn's conversation.
	Content content.Store
	// SlackSecret, when set, serves POST /slack/interactivity: Slack's
	// button clicks, checked with this signing secret. SlackStepUp are
	// the chat.slack.step_up patterns.
	SlackSecret string
	SlackStepUp []string
	// PublicURL is the inbox's public address, linked from the Slack
	// messages it refreshes ("": no link).
	PublicURL string
	// Channels are the chat services approvers answer from besides
	// Slack, each served at /channels/NAME (Channel).
	Channels []Channel
	// MarksFile keeps the users' claims and snoozes across restarts
	// ("": in memory only). The worker's is
	// server.data_dir/inbox-marks.json.
	MarksFile string
	// History reads the queue's history, the answered entries (GET
	// /history, /api/history); nil: the history is not served.
	History HistoryReader
}

// Server is the inbox web server. It is an http.Handler.
type Server struct {
	cfg   Config
	mux   *http.ServeMux
	page  *template.Template
	users []namedUser
	// approvers is who may answer which calls: the inbox users and their
	// roles, as the turns record them (client.Approvers), checked by the
	// workflow's own check (workflows.Approvers) with the roles checker.
	approvers    *workflows.Approvers
	roles        workflows.RoleChecker
	unauthorized prometheus.Counter
	// signinFailures counts refused credentials (see auth.go).
	signinFailures *prometheus.CounterVec
	// refusals counts answers not taken, by channel (inbox, slack).
	refusals *prometheus.CounterVec
	// lister reads a listing (list; tests count the reads).
	lister func(context.Context, query) ([]client.PendingEntry, error)
	// waiting reads a turn's open entries (Config.Client.Pending;
	// tests replace it).
	waiting func(ctx context.Context, workflowID string) ([]workflows.Pending, error)
	// sess is what the session view asks of warden (Config.Client).
	sess sessionClient
	// hub shares a visibility poller per query among the open streams.
	hub *streamHub
	// slackSeen holds the signatures of Slack callbacks accepted within
	// the window (replays are refused).
	slackMu   sync.Mutex
	slackSeen map[string]time.Time
	// marks are the users' claims and snoozes (marks.go).
	marks *marks
	// channels serves Config.Channels' callbacks (channel.go).
	channels *http.ServeMux
	// usageSeen is the turn usage of the waits last listed (withUsage).
	usageMu   sync.Mutex
	usageSeen map[string]*model.Usage
}

type namedUser struct {
	name string
	u    config.InboxUser
}

// New validates cfg and builds a server.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil {
		return nil, errors.New("inbox: no warden client")
	}
	if len(cfg.Users) == 0 {
		return nil, errors.New("inbox: no users configured")
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 2 * time.Second
	}
	if cfg.Title == "" {
		cfg.Title = "warden inbox"
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, errors.New("inbox: TLS needs both a certificate and a key")
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), slackSeen: map[string]time.Time{}}
	s.lister = s.list
	s.waiting = cfg.Client.Pending
	s.sess = cfg.Client
	s.hub = newStreamHub(func(ctx context.Context, q query) ([]client.PendingEntry, error) { return s.lister(ctx, q) }, streamEvery)
	users, err := buildUsers(cfg.Users, cfg.Roles)
	if err != nil {
		return nil, err
	}
	s.users = users
	if s.approvers, err = client.Approvers(config.Inbox{Users: cfg.Users, Roles: cfg.Roles}); err != nil {
		return nil, err
	}
	s.roles = roles.Checker{}
	if s.marks, err = loadMarks(cfg.MarksFile); err != nil {
		return nil, err
	}
	if err := s.mountChannels(); err != nil {
		return nil, err
	}
	page, err := template.New("index.html").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("inbox: parse templates: %w", err)
	}
	s.page = page
	m := metrics.NewInbox(cfg.Registerer)
	s.unauthorized, s.signinFailures, s.refusals = m.Unauthorized, m.SigninFailures, m.Refusals
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.handleIndex)
	s.mux.HandleFunc("GET /api/pending", s.handlePending)
	s.mux.HandleFunc("GET /api/stream", s.handleStream)
	s.mux.HandleFunc("POST /api/approve", s.api(s.counted(s.handleApprove)))
	s.mux.HandleFunc("POST /api/deny", s.api(s.counted(s.handleDeny)))
	s.mux.HandleFunc("POST /api/budget", s.api(s.counted(s.handleBudget)))
	s.mux.HandleFunc("POST /api/answer", s.api(s.counted(s.handleAnswer)))
	s.mux.HandleFunc("POST /api/bulk", s.api(s.handleBulk))
	s.mux.HandleFunc("POST /api/claim", s.api(s.handleClaim))
	s.mux.HandleFunc("POST /api/snooze", s.api(s.handleSnooze))
	s.mux.HandleFunc("GET /history", s.handleHistoryPage)
	s.mux.HandleFunc("GET /api/history", s.handleHistory)
	s.mux.HandleFunc("GET /conversation", s.handleConversation)
	s.mux.HandleFunc("GET /sessions", s.handleSessionsPage)
	s.mux.HandleFunc("GET /session", s.handleSessionPage)
	s.mux.HandleFunc("GET /api/sessions", s.handleSessions)
	s.mux.HandleFunc("GET /api/session", s.handleSession)
	s.mux.HandleFunc("POST /api/session/message", s.api(s.handleSessionMessage))
	s.mux.HandleFunc("POST /api/session/control", s.api(s.handleSessionControl))
	return s, nil
}

// ServeHTTP authenticates the request and serves the inbox.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.URL.Path == slackPath && s.cfg.SlackSecret != "" {
		// Slack signs its callbacks instead of signing in.
		s.handleSlack(w, r)
		return
	}
	if isChannelPath(r.URL.Path) {
		// A channel verifies its own callbacks (Channel.Handler).
		s.channels.ServeHTTP(w, r)
		return
	}
	name, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, name)))
}

// Addr is the address ListenAndServe binds.
func (s *Server) Addr() string { return s.cfg.Listen }

// ListenAndServe serves the inbox on Config.Listen (HTTPS when a
// certificate is configured) until ctx ends.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("inbox: listen: %w", err)
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if s.cfg.TLSCert != "" {
		err = hs.ServeTLS(ln, s.cfg.TLSCert, s.cfg.TLSKey)
	} else {
		err = hs.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("inbox: serve: %w", err)
}
