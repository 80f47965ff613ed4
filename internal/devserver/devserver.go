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
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/types/known/durationpb"

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
	// Retention of closed workflows; default 72h.
	Retention time.Duration
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

// Tuned dynamic config: the defaults throttle the single history shard's
// transfer queue to 20 reads/s, which makes each workflow task wait
// (~45 ms per activity).
func defaultDynamicConfig() map[string]any {
	return map[string]any{
		"history.transferProcessorMaxPollRPS":  1000,
		"matching.numTaskqueueReadPartitions":  1,
		"matching.numTaskqueueWritePartitions": 1,
		"frontend.namespaceRPS.visibility":     500,
		// The host's mutable-state cache (default 128,000 entries, an hour
		// each) kept every waiting turn's state; a turn evicted from it is
		// read back from the database when it is answered. The key used
		// before, history.cacheHostLevelMaxSize, does not exist.
		"history.hostLevelCacheMaxSize": 512,
		// On (the default), the history service walks every payload of
		// every event batch it writes, in a goroutine of its own, to count
		// external-storage references warden never makes: ~4% of the
		// process's CPU at 100 tool calls/s, and most of its stack growth.
		"history.externalPayloadsEnabled": false,
		// Listing every waiting turn (approvals list, the inbox's
		// oldest-first view) in pages of 5,000 instead of the default cap of 1,000 took a
		// listing of 10,000 from ~1.6-2.0 s to ~1.2-1.3 s: each page
		// costs the frontend a fixed share on top of its rows.
		"frontend.visibilityMaxPageSize": 5000,
		// The history service's task schedulers default to 512 workers
		// per queue (and 640 for replication, which a single cluster
		// never uses): 2,200 goroutines parked in select, whose stacks
		// were ~30 MB of the process's memory with 10,000 waiting turns.
		// With 32 per queue the throughput and waiting benches ran as
		// fast as before (BENCHMARKS.md).
		"history.timerProcessorSchedulerWorkerCount":                  32,
		"history.transferProcessorSchedulerWorkerCount":               32,
		"history.visibilityProcessorSchedulerWorkerCount":             32,
		"history.archivalProcessorSchedulerWorkerCount":               4,
		"history.memoryTimerProcessorSchedulerWorkerCount":            8,
		"history.ReplicationProcessorSchedulerWorkerCount":            2,
		"history.ReplicationLowPriorityProcessorSchedulerWorkerCount": 2,
		// Events kept for cross-cluster replication, which never runs here.
		"history.xdcCacheMaxSizeBytes": 256 << 10,
	}
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

// services are the server's services: the defaults, and with Auth the
// internal frontend its system workers use.
func services(o Options) []string {
	if o.Auth == nil {
		return temporal.DefaultServices
	}
	return append(slices.Clone(temporal.DefaultServices), string(primitives.InternalFrontendService))
}

// staticConfig is the server's dynamic config: the tuned defaults, the
// principal propagation Auth needs, then o's overrides.
func staticConfig(o Options) dynamicconfig.StaticClient {
	dc := dynamicconfig.StaticClient{}
	for k, v := range defaultDynamicConfig() {
		dc[dynamicconfig.MakeKey(k)] = v
	}
	if o.Auth != nil {
		// Signals and starts are stamped in history with the principal
		// whose key sent them.
		dc[dynamicconfig.MakeKey("frontend.enablePrincipalPropagation")] = true
	}
	for k, v := range o.DynamicConfig {
		dc[dynamicconfig.MakeKey(k)] = v
	}
	return dc
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

// storeSet is the server's stores: the default (history, matching,
// namespaces) and visibility, which may be the same store.
type storeSet struct {
	defaultName, visibilityName string
	stores                      map[string]config.DataStore
	shards                      int32
}

// stores sets up the databases and registers the namespace in them.
func (s *Server) stores(o Options) (storeSet, error) {
	if o.Postgres != nil {
		p := o.Postgres.withDefaults()
		if err := setupPostgres(p); err != nil {
			return storeSet{}, err
		}
		def := p.sqlConfig(p.Database)
		if err := createNamespace(def, o); err != nil {
			return storeSet{}, err
		}
		s.storage = p.String()
		shards := o.HistoryShards
		if shards == 0 {
			shards = 4
		}
		return storeSet{defaultName: "postgres-default", visibilityName: "postgres-visibility", shards: int32(shards),
			stores: map[string]config.DataStore{
				"postgres-default":    {SQL: def},
				"postgres-visibility": {SQL: p.sqlConfig(p.VisibilityDatabase)},
			}}, nil
	}
	conf, err := s.sqliteConfig(o)
	if err != nil {
		return storeSet{}, err
	}
	shards := o.HistoryShards
	if shards == 0 {
		shards = 1
	}
	return storeSet{defaultName: "sqlite-default", visibilityName: "sqlite-default", shards: int32(shards),
		stores: map[string]config.DataStore{"sqlite-default": {SQL: conf}}}, nil
}

// createNamespace registers the namespace in the database before the
// server starts, so that it is there from the first request (the SQLite
// schema package's helper writes through the generic SQL persistence,
// so it serves PostgreSQL as well).
func createNamespace(conf *config.SQL, o Options) error {
	ns, err := sqliteschema.NewNamespaceConfig("active", o.Namespace, false, o.SearchAttributes)
	if err != nil {
		return fmt.Errorf("devserver: namespace config: %w", err)
	}
	ns.Detail.Config.Retention = durationpb.New(o.Retention)
	if err := sqliteschema.CreateNamespaces(conf, ns); err != nil {
		return fmt.Errorf("devserver: create namespace: %w", err)
	}
	return nil
}

func (s *Server) sqliteConfig(o Options) (*config.SQL, error) {
	conf := &config.SQL{PluginName: sqliteplugin.PluginName}
	s.storage = "sqlite in memory"
	if o.DataDir == "" {
		conf.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		conf.DatabaseName = fmt.Sprintf("warden-%d", time.Now().UnixNano())
	} else {
		if err := os.MkdirAll(o.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("devserver: data dir: %w", err)
		}
		s.dbPath = filepath.Join(o.DataDir, "temporal.db")
		// WAL with synchronous=normal loses nothing committed when the
		// process is killed; a power loss may lose the last writes.
		conf.ConnectAttributes = map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal"}
		conf.DatabaseName = s.dbPath
		s.storage = "sqlite " + s.dbPath
	}
	// The SQLite plugin creates the schema of an in-memory database itself.
	if _, err := os.Stat(s.dbPath); o.DataDir != "" && errors.Is(err, os.ErrNotExist) {
		if err := sqliteschema.SetupSchema(conf); err != nil {
			return nil, fmt.Errorf("devserver: schema: %w", err)
		}
	}
	if err := createNamespace(conf, o); err != nil {
		return nil, err
	}
	return conf, nil
}

// localIP is the address the server's own services use to reach an
// address bound as ip: loopback for an unspecified address.
func localIP(ip string) string {
	if a := net.ParseIP(ip); a != nil && a.IsUnspecified() {
		return "127.0.0.1"
	}
	return ip
}

func serverConfig(o Options, httpPort int, p storeSet) (*config.Config, map[primitives.ServiceName]static.Hosts, error) {
	conf := baseConfig(o, httpPort, p)
	names := []primitives.ServiceName{primitives.FrontendService, primitives.HistoryService, primitives.MatchingService, primitives.WorkerService}
	if o.Auth != nil {
		tlsConf, err := internodeTLS()
		if err != nil {
			return nil, nil, err
		}
		conf.Global.TLS.Internode = tlsConf
		names = append(names, primitives.InternalFrontendService)
	}
	hosts := map[primitives.ServiceName]static.Hosts{}
	local := localIP(o.IP)
	for _, name := range names {
		svc, err := serviceConfig(name, o, httpPort)
		if err != nil {
			return nil, nil, err
		}
		conf.Services[string(name)] = svc
		hosts[name] = static.SingleLocalHost(net.JoinHostPort(local, strconv.Itoa(svc.RPC.GRPCPort)))
	}
	return conf, hosts, nil
}

// baseConfig is the server's config without its services' TLS and
// ports: membership, persistence, the one cluster, archival off.
func baseConfig(o Options, httpPort int, p storeSet) *config.Config {
	local := localIP(o.IP)
	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = local
	conf.Persistence.DefaultStore = p.defaultName
	conf.Persistence.VisibilityStore = p.visibilityName
	conf.Persistence.NumHistoryShards = p.shards
	conf.Persistence.DataStores = p.stores
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        "active",
		CurrentClusterName:       "active",
		ClusterInformation: map[string]cluster.ClusterInformation{
			"active": {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             net.JoinHostPort(local, strconv.Itoa(o.Port)),
				HTTPAddress:            net.JoinHostPort(local, strconv.Itoa(httpPort)),
				ClusterID:              "warden-embedded",
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	if o.Auth == nil {
		// With Auth the system workers find the internal frontend.
		conf.PublicClient.HostPort = net.JoinHostPort(local, strconv.Itoa(o.Port))
	}
	return &conf
}

// serviceConfig is one service's RPC config: the frontend on o's
// address and ports, the others on loopback (for an unspecified o.IP)
// and free ports, the internal frontend with an HTTP port as well.
func serviceConfig(name primitives.ServiceName, o Options, httpPort int) (config.Service, error) {
	local := localIP(o.IP)
	var svc config.Service
	svc.RPC.BindOnIP = local
	if name == primitives.FrontendService {
		svc.RPC.BindOnIP = o.IP
		svc.RPC.GRPCPort = o.Port
		svc.RPC.HTTPPort = httpPort
	} else {
		port, err := freePort(local)
		if err != nil {
			return svc, err
		}
		svc.RPC.GRPCPort = port
	}
	if name == primitives.InternalFrontendService {
		port, err := freePort(local)
		if err != nil {
			return svc, err
		}
		svc.RPC.HTTPPort = port
	}
	return svc, nil
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
	for {
		_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: o.Namespace})
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("devserver: namespace %s not ready: %w", o.Namespace, err)
		case <-time.After(100 * time.Millisecond):
		}
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

func freePort(ip string) (int, error) { return FreePort(ip) }

// FreePort returns a TCP port on ip that is free now and that the kernel
// does not hand out by itself: the server binds its ports a moment after
// they are chosen, and a port from the ephemeral range (the one a
// listen on port 0 returns) can be taken in between by any outgoing
// connection of any process. So the port is picked at random below the
// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), and checked
// by listening on it; a listen on port 0 is the fallback.
func FreePort(ip string) (int, error) {
	low := ephemeralLow()
	for range 50 {
		if low <= minPickedPort {
			break
		}
		port := minPickedPort + rand.IntN(low-minPickedPort)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err == nil {
			_ = l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("devserver: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// minPickedPort is the lowest port FreePort picks.
const minPickedPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux;
// 32768, the usual value, when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

// quietLogger drops the SDK client's own log lines during the readiness probe.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
