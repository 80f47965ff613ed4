// Command worker runs warden's Temporal worker. With no Temporal address
// it first starts an embedded Temporal server (SQLite in --data-dir) and
// its Web UI in the same process; with --temporal-address it joins an
// existing cluster. It serves Prometheus metrics and can run a demo turn.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	tclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/internal/devserver"
	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/middleware/std"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/tools/mcp"
	"github.com/wardenhq/warden/workflows"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// flags are the command line options that are not config overrides.
type flags struct {
	config                           string
	exitAfterDemo, pprof, serverOnly bool
	postgres, ip                     string
	historyShards                    int
}

// parse reads the command line; the config is the file's with the
// environment's and the flags' overrides (config.Resolve).
func parse(args []string) (flags, config.Config, error) {
	var f flags
	var o config.Overrides
	var uiPort int
	var inbox bool
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.StringVar(&f.config, "config", "", "config file (default temporal-dev.yaml when present)")
	fs.StringVar(&o.DataDir, "data-dir", "", "embedded server data directory (default ./.warden)")
	fs.IntVar(&o.Port, "port", 0, "embedded server frontend port (default 7233)")
	fs.IntVar(&uiPort, "ui-port", -1, "Web UI port (default 8233; 0 turns the UI off)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "", "Prometheus /metrics address (default 127.0.0.1:9464; \"off\" disables)")
	fs.BoolVar(&f.pprof, "pprof", false, "also serve Go's pprof profiles under /debug/pprof/ on the metrics address (off by default)")
	fs.BoolVar(&f.serverOnly, "server-only", false, "run only the Temporal server (and Web UI), for workers that join with --temporal-address")
	fs.StringVar(&f.postgres, "postgres", os.Getenv("WARDEN_POSTGRES_URL"), "embedded server on PostgreSQL instead of SQLite: postgres://USER@HOST:PORT/DB (env WARDEN_POSTGRES_URL; password also from WARDEN_POSTGRES_PASSWORD)")
	fs.StringVar(&f.ip, "ip", "", "address the embedded server's frontend and UI bind (default 127.0.0.1; 0.0.0.0 for all)")
	fs.IntVar(&f.historyShards, "history-shards", 0, "embedded server history shards, fixed when its database is created (default 1 on SQLite, 4 on PostgreSQL)")
	fs.StringVar(&o.Address, "temporal-address", "", "join this Temporal cluster instead of embedding a server (env TEMPORAL_ADDRESS)")
	fs.StringVar(&o.Namespace, "namespace", "", "namespace (env TEMPORAL_NAMESPACE)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "client certificate for the cluster (env TEMPORAL_TLS_CERT)")
	fs.StringVar(&o.TLSKey, "tls-key", "", "client key for the cluster (env TEMPORAL_TLS_KEY)")
	fs.StringVar(&o.TLSCA, "tls-ca", "", "CA certificate for the cluster (env TEMPORAL_TLS_CA)")
	fs.StringVar(&o.APIKey, "api-key", "", "API key for a hosted cluster (env TEMPORAL_API_KEY)")
	fs.StringVar(&o.KeyFile, "key-file", "", "warden key to join a warden server with --temporal-address (env WARDEN_KEY_FILE; --server-only writes DATA_DIR/auth/worker.key)")
	fs.StringVar(&o.TaskQueue, "task-queue", "", "task queue (default warden)")
	fs.StringVar(&o.Workdir, "workdir", "", "default workspace directory for tools")
	fs.StringVar(&o.LogLevel, "log-level", "", "embedded server log level")
	fs.StringVar(&o.Backend, "backend", "", "default backend for turns that name none: local, docker or e2b (enables it)")
	fs.BoolVar(&inbox, "inbox", false, "serve the approvals inbox (inbox.enabled)")
	fs.StringVar(&o.InboxListen, "inbox-listen", "", "inbox address (default 127.0.0.1:8234)")
	fs.StringVar(&o.DemoScript, "demo", "", "after start, run a demo turn from this script file and print it")
	fs.BoolVar(&f.exitAfterDemo, "exit-after-demo", false, "stop once the demo turn finished")
	if err := fs.Parse(args); err != nil {
		return f, config.Config{}, err
	}
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "ui-port":
			o.UIPort = &uiPort
		case "inbox":
			o.Inbox = &inbox
		}
	})
	cfg, err := config.Resolve(f.config, config.FromEnv(os.Getenv), o)
	return f, cfg, err
}

// ensureSearchAttributes checks the namespace's search attributes and
// creates the missing ones (warden.EnsureSearchAttributes); when the
// credentials may not, the worker does not start and says which command
// creates them.
func ensureSearchAttributes(ctx context.Context, c tclient.Client, cfg config.Config, address string) error {
	ns := cfg.Namespace()
	created, err := warden.EnsureSearchAttributes(ctx, c, ns)
	var missing *warden.MissingSearchAttributesError
	if errors.As(err, &missing) {
		hint := "with the TLS or API-key flags an administrator of the cluster uses"
		if cfg.Temporal.Address == "" || cfg.Temporal.KeyFile != "" {
			hint = "on a warden server, with --api-key \"$(cat DATA_DIR/auth/operator.key)\" --tls=false"
		}
		return fmt.Errorf("namespace %s lacks warden's search attributes %s, and this worker's credentials may not create them: %w\n"+
			"create them as an administrator of the namespace (%s), then start the worker again:\n  %s",
			ns, strings.Join(slices.Sorted(maps.Keys(missing.Missing)), ", "), missing.Err, hint, missing.Command(address))
	}
	if err != nil {
		return fmt.Errorf("search attributes: %w", err)
	}
	if len(created) > 0 {
		fmt.Printf("search attrs     created %s in namespace %s\n", strings.Join(created, ", "), ns)
	}
	return nil
}

func run(args []string) error {
	f, cfg, err := parse(args)
	if err != nil {
		return err
	}
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.serverOnly {
		return runServer(ctx, f, cfg)
	}
	start := time.Now()
	// The SDK's workflow cache is shared by every worker of the process
	// and sized when the first one starts: the embedded server starts its
	// own system workers, so the size must be set before the server.
	sticky := cfg.Worker.StickyCacheSize
	if sticky == 0 {
		sticky = config.DefaultStickyCacheSize
	}
	worker.SetStickyWorkflowCacheSize(sticky)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	// One Prometheus registry for warden's metrics and the SDK's own.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	approvals := metrics.NewApprovals(reg)
	copts := tclient.Options{Namespace: cfg.Namespace(), Logger: sdklog.NewStructuredLogger(logger),
		MetricsHandler: metrics.NewSDKHandler(reg, metrics.ApprovalRoutes(approvals)...)}
	var inboxKey string
	if cfg.Temporal.Address == "" {
		o, err := serverOptions(f, cfg)
		if err != nil {
			return err
		}
		keys, err := serverAuth(&o, cfg)
		if err != nil {
			return err
		}
		if o.Auth != nil {
			copts.HeadersProvider = auth.Headers(o.Auth.ClientKey)
			if inboxKey, err = keys.Issue("inbox", auth.RoleDelegate); err != nil {
				return err
			}
		}
		srv, err := devserver.Start(ctx, o)
		if err != nil {
			return err
		}
		defer srv.Stop()
		copts.HostPort = srv.Addr()
		fmt.Printf("temporal server  %s (namespace %s, data %s)\n", srv.Addr(), cfg.Server.Namespace, srv.DatabasePath())
		if o.Postgres != nil {
			fmt.Printf("persistence      %s\n", srv.Storage())
		}
		if srv.UIAddr() != "" {
			fmt.Printf("web ui           http://%s\n", srv.UIAddr())
		}
		printKeys(keys)
	} else {
		cluster, err := cfg.ClientOptions("")
		if err != nil {
			return err
		}
		copts.HostPort, copts.ConnectionOptions, copts.Credentials = cluster.HostPort, cluster.ConnectionOptions, cluster.Credentials
		copts.HeadersProvider = cluster.HeadersProvider
		if f := cfg.InboxKeyFile(); cfg.Inbox.Enabled && f != "" {
			if inboxKey, err = auth.ReadKeyFile(f); err != nil {
				return fmt.Errorf("inbox.key_file: %w", err)
			}
		}
		fmt.Printf("temporal cluster %s (namespace %s)\n", cfg.Temporal.Address, cfg.Temporal.Namespace)
	}
	tuneClient(&copts, cfg)
	c, err := tclient.DialContext(ctx, copts)
	if err != nil {
		return fmt.Errorf("dial temporal: %w", err)
	}
	defer c.Close()
	if err := ensureSearchAttributes(ctx, c, cfg, copts.HostPort); err != nil {
		return err
	}

	workdir, err := filepath.Abs(cfg.Worker.Workdir)
	if err != nil {
		return fmt.Errorf("workdir: %w", err)
	}
	sbx, err := checkSandbox(cfg.Backend)
	if err != nil {
		return err
	}
	fmt.Printf("sandbox          %s\n", sbx)
	extra, closeBackends, err := backends(ctx, cfg.Backend, workdir, append(cfg.OwnPaths(), concretePaths(cfg.Permission.SensitivePaths)...))
	if err != nil {
		return err
	}
	defer closeBackends()
	w := worker.New(c, cfg.Worker.TaskQueue, workerOptions(cfg))
	providers, err := models(cfg.Models)
	if err != nil {
		return err
	}
	var mcpBox *mcp.Sandbox
	if !cfg.Backend.Local.SandboxOff() {
		mcpBox = &mcp.Sandbox{Workdir: workdir, Hide: append(cfg.OwnPaths(), concretePaths(cfg.Permission.SensitivePaths)...)}
	}
	mcpSet, err := mcp.ConnectSandboxed(ctx, cfg.MCP.Servers, mcpBox)
	if err != nil {
		return fmt.Errorf("mcp servers: %w", err)
	}
	defer mcpSet.Close()
	toolMW, err := std.Build(cfg.Middleware, reg, logger)
	if err != nil {
		return fmt.Errorf("middleware: %w", err)
	}
	wc := client.New(c, cfg.Worker.TaskQueue)
	// Counted from visibility alone: no turn is queried, however many wait.
	go approvals.Poll(ctx, func(ctx context.Context) (int, error) {
		return wc.CountPending(ctx, "")
	}, 30*time.Second)
	store, err := cfg.ContentStore()
	if err != nil {
		return err
	}
	go wc.GCEvery(ctx, store, cfg.Content.GCInterval, logger)
	if _, err := warden.Register(w, warden.Options{
		ToolMiddleware: toolMW, ModelMetrics: metrics.NewModels(reg), Models: providers, Tools: mcpSet.Tools(),
		DefaultBackend: cfg.Backend.Default, Backends: extra, Workdir: workdir, Registerer: reg, Logger: logger,
		Protected:    cfg.Permission.Protected,
		ToolDefaults: cfg.Tools.Defaults, ToolSettings: cfg.Tools.PerTool,
		Notifier: cfg.Notify.Sender(), InboxURL: cfg.Inbox.PublicURL(),
		Content: store, ContentCacheBytes: int64(cfg.Content.CacheMB) << 20, Compaction: cfg.Content.Compaction,
		MaxResultBytes: cfg.Content.MaxResultBytes, MaxCallInputBytes: cfg.Content.MaxCallInputBytes,
		Client: c,
	}); err != nil {
		return err
	}
	stopMetrics, err := serveMetrics(cfg.Metrics.Addr, reg, f.pprof)
	if err != nil {
		return err
	}
	defer stopMetrics()
	if cfg.Inbox.Enabled {
		ic, err := inboxClient(ctx, c, copts, inboxKey)
		if err != nil {
			return err
		}
		defer ic.Close()
		icl := client.New(ic, cfg.Worker.TaskQueue)
		if inboxKey != "" {
			icl.Via, _ = auth.NameOf(inboxKey)
		}
		url, err := startInbox(ctx, cfg.Inbox, icl, store, reg, logger)
		if err != nil {
			return err
		}
		fmt.Printf("approvals inbox  %s\n", url)
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer w.Stop()
	fmt.Printf("worker           task queue %s, workdir %s (ready in %s)\n", cfg.Worker.TaskQueue, workdir, time.Since(start).Round(time.Millisecond))

	if cfg.Demo.Script != "" {
		if err := demo(ctx, c, cfg); err != nil {
			return err
		}
		if f.exitAfterDemo {
			return nil
		}
	}
	<-ctx.Done()
	fmt.Println("stopping")
	return nil
}

// demo runs one scripted turn and prints its progress.
func demo(ctx context.Context, c tclient.Client, cfg config.Config) error {
	script, err := model.LoadScript(cfg.Demo.Script)
	if err != nil {
		return err
	}
	pc, err := cfg.Permission.Context()
	if err != nil {
		return err
	}
	cl := client.New(c, cfg.Worker.TaskQueue)
	id := fmt.Sprintf("demo-%d", time.Now().UnixNano())
	// An unattended demo must end: its approval waits two minutes.
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Prompt: script.Prompt, Model: workflows.ModelConfig{Provider: "scripted", Script: script},
		Permission: pc, ApprovalTimeout: 2 * time.Minute}); err != nil {
		return err
	}
	fmt.Printf("\ndemo turn %s\n", id)
	res, err := cl.Watch(ctx, id, func(e workflows.Event) {
		fmt.Print(client.FormatEvent(e))
		if e.Type == workflows.EventWaiting {
			fmt.Printf("         -> approve in the inbox, or: go run ./cmd/starter approvals approve %s %s\n"+
				"            (unanswered, it is denied after 2 minutes)\n", id, e.CallID)
		}
	})
	if err != nil {
		return fmt.Errorf("demo turn: %w", err)
	}
	fmt.Printf("\nfinal answer: %s\n(%d model calls, %d tool calls)\n", res.Answer, res.Iterations, res.ToolCalls)
	return nil
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
