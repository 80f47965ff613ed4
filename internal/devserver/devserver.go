// Package devserver runs a Temporal server (static-hosts membership) and
// optionally its Web UI inside the current process. It persists to SQLite
// by default (one file, or memory) or to PostgreSQL with SQL visibility
// (Options.Postgres), which is how the cluster profile runs the server as
// a process of its own that several workers join.
//
// It is the only package that links go.temporal.io/server; only cmd/worker
// and the integration tests import it.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiapi "github.com/temporalio/ui-server/v2/server/api"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiopts "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/wardenhq/warden/auth"
)

// Options configure the embedded server. The zero value (plus a
// Namespace) runs an in-memory server on free ports without a UI.
type Options struct {
	// DataDir holds the SQLite database; empty means in memory. Unused
	// with Postgres.
	DataDir string
	// Postgres, when set, persists to PostgreSQL instead of SQLite.
	Postgres *Postgres
	// HistoryShards is the number of history shards; default 1 on
	// SQLite, 4 on PostgreSQL. It is fixed when the database is created.
	HistoryShards int
	// IP the frontend (and UI) bind; default 127.0.0.1. An unspecified
	// address such as 0.0.0.0 serves on every interface while the
	// server's internal services stay on loopback.
	IP string
	// Port of the frontend gRPC service; 0 picks a free port.
	Port int
	// UIPort of the Web UI; 0 turns the UI off.
	UIPort int
	// Namespace to create (and register search attributes in).
	Namespace string
	// SearchAttributes to register: name → type.
	SearchAttributes map[string]enumspb.IndexedValueType
	// DynamicConfig overrides server dynamic config keys.
	DynamicConfig map[string]any
	// LogLevel of the server's own log ("debug", "info", "warn", "error");
	// default "warn". Logs go to stderr.
	LogLevel string
	// Retention of closed workflows; default 72h. Below a day, the
	// server's minimum retention is lowered to it (a test setting).
	Retention time.Duration
	// Archive, when set, turns on History and Visibility Archival with
	// the filestore archiver in this directory: each closed workflow's
	// history is kept there after retention deletes it from the
	// database, and the frontend reads it back through the same APIs
	// (GetWorkflowExecutionHistory, ListArchivedWorkflowExecutions).
	Archive string
	// Auth, when set, makes the frontend require keys (see Auth). The
	// server's own services then talk to each other, and its system
	// workers to an internal frontend, over mutual TLS with a
	// certificate authority made for this process.
	Auth *Auth
}

// Server is a running embedded server.
type Server struct {
	srv      temporal.Server
	ui       *uiserver.Server
	addr     string
	uiAddr   string
	dbPath   string
	storage  string
	namspace string
	// internalAddr is the internal frontend's host:port (with Auth).
	internalAddr string
}

// Start starts the server and waits until its frontend answers.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Namespace == "" {
		return nil, errors.New("devserver: namespace is required")
	}
	o, httpPort, err := o.resolved()
	if err != nil {
		return nil, err
	}
	s := &Server{addr: net.JoinHostPort(localIP(o.IP), strconv.Itoa(o.Port)), namspace: o.Namespace}
	srv, dyn, err := s.newTemporal(o, httpPort)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("devserver: start: %w", err)
	}
	s.srv = srv
	added, err := s.ensureNamespace(ctx, o)
	if err != nil {
		s.Stop()
		return nil, err
	}
	dyn.registered(added)
	if o.UIPort > 0 {
		if err := s.startUI(o); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// resolved returns o with its defaults filled in and a frontend port
// picked when o has none, and a free port for the frontend's HTTP API.
func (o Options) resolved() (Options, int, error) {
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.LogLevel == "" {
		o.LogLevel = "warn"
	}
	if o.Retention == 0 {
		o.Retention = 72 * time.Hour
	}
	var err error
	if o.Archive != "" {
		if o.Archive, err = filepath.Abs(o.Archive); err != nil {
			return o, 0, fmt.Errorf("devserver: archive: %w", err)
		}
		if err := os.MkdirAll(o.Archive, 0o700); err != nil {
			return o, 0, fmt.Errorf("devserver: archive: %w", err)
		}
	}
	if o.Port == 0 {
		if o.Port, err = freePort(o.IP); err != nil {
			return o, 0, err
		}
	}
	httpPort, err := freePort(o.IP)
	if err != nil {
		return o, 0, err
	}
	return o, httpPort, nil
}

// newTemporal sets up the stores and builds the (not yet started)
// server with its config, logger, authorization and dynamic config.
func (s *Server) newTemporal(o Options, httpPort int) (temporal.Server, *dynConfig, error) {
	stores, err := s.stores(o)
	if err != nil {
		return nil, nil, err
	}
	conf, hosts, err := serverConfig(o, httpPort, stores)
	if err != nil {
		return nil, nil, err
	}
	if ife, ok := conf.Services[string(primitives.InternalFrontendService)]; ok {
		s.internalAddr = net.JoinHostPort(localIP(o.IP), strconv.Itoa(ife.RPC.GRPCPort))
	}
	logger, err := newLogger(o.LogLevel)
	if err != nil {
		return nil, nil, err
	}
	authorizer, claimMapper, err := authorizers(conf, logger, o.Auth)
	if err != nil {
		return nil, nil, err
	}
	dyn := newDynConfig(staticConfig(o))
	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(services(o)),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dyn),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("devserver: new server: %w", err)
	}
	return srv, dyn, nil
}

// newLogger is the server's log, at level, to stderr.
func newLogger(level string) (log.Logger, error) {
	l := zapcore.WarnLevel
	if err := l.Set(level); err != nil {
		return nil, fmt.Errorf("devserver: log level %q: %w", level, err)
	}
	zcfg := zap.NewProductionConfig()
	zcfg.Level = zap.NewAtomicLevelAt(l)
	zcfg.Sampling = nil
	zl, err := zcfg.Build()
	if err != nil {
		return nil, fmt.Errorf("devserver: logger: %w", err)
	}
	return log.NewZapLogger(zl), nil
}

// authorizers returns the frontend's authorizer and claim mapper: the
// key-based ones with Auth, else those conf configures.
func authorizers(conf *config.Config, logger log.Logger, a *Auth) (authorization.Authorizer, authorization.ClaimMapper, error) {
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, nil, fmt.Errorf("devserver: authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, nil, fmt.Errorf("devserver: claim mapper: %w", err)
	}
	if a != nil {
		return keyAuthorizer{*a}, keyClaimMapper{*a}, nil
	}
	return authorizer, claimMapper, nil
}

// startUI starts the Web UI on o.UIPort and gives it a moment to fail
// (a port already taken).
func (s *Server) startUI(o Options) error {
	s.uiAddr = net.JoinHostPort(localIP(o.IP), strconv.Itoa(o.UIPort))
	uiOpts := []uiopts.ServerOption{uiopts.WithConfigProvider(&uiconfig.Config{
		Host:                o.IP,
		Port:                o.UIPort,
		TemporalGRPCAddress: s.addr,
		EnableUI:            true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
	})}
	if o.Auth != nil {
		uiOpts = append(uiOpts, uiopts.WithAPIMiddleware([]uiapi.Middleware{uiMiddleware(o.Auth.UIKey)}))
	}
	s.ui = uiserver.NewServer(uiOpts...)
	uiErr := make(chan error, 1)
	go func() { uiErr <- s.ui.Start() }()
	select {
	case err := <-uiErr:
		return fmt.Errorf("devserver: web ui on %s: %w", s.uiAddr, err)
	case <-time.After(200 * time.Millisecond):
	}
	return nil
}

// Addr is the frontend's host:port.
func (s *Server) Addr() string { return s.addr }

// UIAddr is the Web UI's host:port, or "" when the UI is off.
func (s *Server) UIAddr() string { return s.uiAddr }

// DatabasePath is the SQLite file, or "" for an in-memory or PostgreSQL server.
func (s *Server) DatabasePath() string { return s.dbPath }

// Storage describes where the server persists: "sqlite FILE", "sqlite
// in memory" or "postgresql://USER@HOST:PORT/DB (visibility DB)".
func (s *Server) Storage() string { return s.storage }

// Stop stops the UI and the server.
func (s *Server) Stop() {
	if s.ui != nil {
		s.ui.Stop()
	}
	if s.srv != nil {
		_ = s.srv.Stop()
	}
}

// ensureNamespace waits for the frontend and registers search attributes
// that an older database lacks (a namespace created by an earlier version
// keeps its old attribute set otherwise).
func (s *Server) ensureNamespace(ctx context.Context, o Options) (added bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	copts := sdkclient.Options{HostPort: s.addr, Namespace: o.Namespace, Logger: quietLogger{}}
	if o.Auth != nil {
		copts.HeadersProvider = auth.Headers(o.Auth.ClientKey)
	}
	c, err := sdkclient.DialContext(ctx, copts)
	if err != nil {
		return false, fmt.Errorf("devserver: dial %s: %w", s.addr, err)
	}
	defer c.Close()
	var ns *workflowservice.DescribeNamespaceResponse
	for {
		ns, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: o.Namespace})
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("devserver: namespace %s not ready: %w", o.Namespace, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := reconcileNamespace(ctx, c.WorkflowService(), ns, o); err != nil {
		return false, err
	}
	if len(o.SearchAttributes) == 0 {
		return false, nil
	}
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: o.Namespace})
	if err != nil {
		return false, fmt.Errorf("devserver: list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range o.SearchAttributes {
		if _, ok := have.GetCustomAttributes()[name]; !ok {
			missing[name] = typ
		}
	}
	if len(missing) == 0 {
		return false, nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: o.Namespace, SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return false, fmt.Errorf("devserver: add search attributes: %w", err)
	}
	return true, nil
}

// quietLogger drops the SDK client's own log lines during the readiness probe.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
