package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/chat"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/metrics"
)

// serve starts the metrics endpoint and, when enabled, the inbox.
func (n *node) serve(ctx context.Context) error {
	stopMetrics, err := serveMetrics(n.cfg.Metrics.Addr, n.reg, n.o.Pprof)
	if err != nil {
		return err
	}
	n.onStop(stopMetrics)
	if !n.cfg.Inbox.Enabled {
		return nil
	}
	url, err := n.startInbox(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("approvals inbox  %s\n", url)
	return nil
}

// startInbox serves the approvals inbox in the background, on a
// connection of its own with the inbox's key, and returns the URL to
// print (with a sign-in token when the worker made one up).
func (n *node) startInbox(ctx context.Context) (string, error) {
	ic, err := inboxClient(ctx, n.c, n.copts, n.inboxKey)
	if err != nil {
		return "", err
	}
	n.onStop(ic.Close)
	cl := client.New(ic, n.cfg.Worker.TaskQueue)
	if n.inboxKey != "" {
		cl.Via, _ = auth.NameOf(n.inboxKey)
	}
	cfg := n.cfg.Inbox
	users := cfg.Users
	login := ""
	if len(users) == 0 {
		token := os.Getenv("WARDEN_INBOX_TOKEN")
		if token == "" {
			b := make([]byte, 16)
			if _, err := rand.Read(b); err != nil {
				return "", fmt.Errorf("inbox token: %w", err)
			}
			token = hex.EncodeToString(b)
		}
		users = map[string]config.InboxUser{"admin": {Token: token}}
		login = "/?token=" + token
	}
	srv, err := inbox.New(inbox.Config{Client: cl, Content: n.store, Listen: cfg.Listen, TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey,
		Users: users, Roles: cfg.Roles, Registerer: n.reg,
		SlackSecret: os.Getenv(chat.EnvSigningSecret), SlackStepUp: n.cfg.Chat.Slack.StepUp, PublicURL: cfg.PublicURL(),
		MarksFile: n.cfg.InboxMarksFile(), History: auditHistory{c: ic}})
	if err != nil {
		return "", fmt.Errorf("inbox: %w", err)
	}
	go func() {
		if err := srv.ListenAndServe(ctx); err != nil && ctx.Err() == nil {
			n.logger.Error("inbox stopped", "error", err)
		}
	}()
	return cfg.PublicURL() + login, nil
}

// auditHistory reads the inbox's history from the turns' histories
// (audit.Answers), on the inbox's own connection.
type auditHistory struct{ c tclient.Client }

// Answered implements inbox.HistoryReader.
func (h auditHistory) Answered(ctx context.Context, since time.Time, prefix string) ([]inbox.Answer, error) {
	recs, err := audit.Answers(ctx, h.c, audit.Query{Since: since, Prefix: prefix})
	if err != nil {
		return nil, err
	}
	out := make([]inbox.Answer, len(recs))
	for i, r := range recs {
		out[i] = inbox.Answer{Time: r.Time, WorkflowID: r.WorkflowID, CallID: r.CallID, Tool: r.Tool, Kind: r.Kind,
			Decision: r.Decision, By: r.By, Via: audit.Channel(r), Identity: r.Identity, Reason: r.Reason}
	}
	return out, nil
}

// serveMetrics serves /metrics (and pprof when asked) on addr until the
// returned stop is called; an empty addr or "off" serves nothing.
func serveMetrics(addr string, g prometheus.Gatherer, pprof bool) (stop func(), err error) {
	if addr == "" || addr == "off" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	hs := &http.Server{Handler: metrics.Handler(g, pprof), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	fmt.Printf("metrics          http://%s/metrics\n", ln.Addr())
	if pprof {
		fmt.Printf("pprof            http://%s/debug/pprof/\n", ln.Addr())
	}
	return func() { _ = hs.Close() }, nil
}

// inboxClient is the inbox's own connection, with the inbox's delegate
// key when the embedded server requires keys; otherwise the worker's.
func inboxClient(ctx context.Context, c tclient.Client, copts tclient.Options, key string) (tclient.Client, error) {
	if key == "" {
		return tclient.NewClientFromExisting(c, tclient.Options{Namespace: copts.Namespace, Interceptors: copts.Interceptors})
	}
	copts.HeadersProvider = auth.Headers(key)
	ic, err := tclient.DialContext(ctx, copts)
	if err != nil {
		return nil, fmt.Errorf("inbox client: %w", err)
	}
	return ic, nil
}
