package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit/stream"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content/stores"
	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/middleware/std"
	"github.com/wardenhq/warden/telemetry"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/tools/mcp"
)

// worker builds the SDK worker with warden's workflows and activities:
// the backends (the local one sandboxed unless the config turns it
// off), the model providers, MCP servers, the standard middlewares and
// the content store. It returns the worker, not started, and the
// default workspace directory.
func (n *node) worker(ctx context.Context) (worker.Worker, string, error) {
	cfg := n.cfg
	workdir, err := filepath.Abs(cfg.Worker.Workdir)
	if err != nil {
		return nil, "", fmt.Errorf("workdir: %w", err)
	}
	sbx, err := checkSandbox(cfg.Backend)
	if err != nil {
		return nil, "", err
	}
	fmt.Printf("sandbox          %s\n", sbx)
	for _, msg := range cfg.Backend.Local.LayerWarnings() {
		// Loud: a layer off is a test's control, never a setting for use.
		fmt.Printf("%s\n", msg)
		n.logger.Warn(msg)
	}
	// Check refused a quorum no approver set can meet; one only part of
	// whose calls it can is said here.
	if warnings, err := quorum(cfg); err == nil {
		for _, msg := range warnings {
			n.logger.Warn("permission.quorum: " + msg)
		}
	}
	hide := hiddenPaths(cfg)
	extra, closeBackends, err := backends(ctx, cfg.Backend, workdir, hide, cfg.OwnPaths(), cfg.Permission.SensitivePaths)
	n.onStop(closeBackends)
	if err != nil {
		return nil, "", err
	}
	if line := secretsLine(cfg.Backend.Secrets); line != "" {
		fmt.Printf("secrets          %s\n", line)
	}
	if lb, ok := extra["local"].(*local.Backend); ok {
		lb.Egress = metrics.NewEgress(n.reg) // the sandbox's egress connections
	}
	providers, err := models(cfg.Models)
	if err != nil {
		return nil, "", err
	}
	var mcpBox *mcp.Sandbox
	if !cfg.Backend.Local.SandboxOff() {
		mcpBox = &mcp.Sandbox{Workdir: workdir, Hide: hide}
	}
	mcpSet, err := mcp.ConnectSandboxed(ctx, cfg.MCP.Servers, mcpBox)
	if err != nil {
		return nil, "", fmt.Errorf("mcp servers: %w", err)
	}
	n.onStop(func() { _ = mcpSet.Close() })
	toolMW, err := std.Build(cfg.Middleware, n.reg, n.logger)
	if err != nil {
		return nil, "", fmt.Errorf("middleware: %w", err)
	}
	store, err := stores.Open(cfg)
	if err != nil {
		return nil, "", err
	}
	n.store = store
	n.housekeep(ctx)
	wo := workerOptions(cfg)
	if err := n.auditStream(ctx, &wo); err != nil {
		return nil, "", err
	}
	w := worker.New(n.c, cfg.Worker.TaskQueue, wo)
	a, err := warden.Register(w, withTracing(warden.Options{
		ToolMiddleware: toolMW, ModelMetrics: metrics.NewModels(n.reg), Models: providers, Tools: mcpSet.Tools(),
		Prices:         prices(cfg.Prices),
		DefaultBackend: cfg.Backend.Default, Backends: extra, Workdir: workdir, Registerer: n.reg, Logger: n.logger,
		Protected:    cfg.OwnPatterns(),
		ToolDefaults: cfg.Tools.Defaults, ToolSettings: cfg.Tools.PerTool, GrepEngine: grepEngine(cfg.Tools.GrepEngine),
		GrepTimeout: cfg.Tools.GrepTimeout, Notifier: sender(cfg.Notify), InboxURL: cfg.Inbox.PublicURL(), RemindBefore: cfg.Notify.RemindBefore, Chat: slackChat(cfg.Chat.Slack, os.Getenv),
		Content: store, ContentCacheBytes: int64(cfg.Content.CacheMB) << 20, Compaction: compactions(cfg.Content.Compaction),
		MaxResultBytes: cfg.Content.MaxResultBytes, MaxCallInputBytes: cfg.Content.MaxCallInputBytes,
		Client: n.c,
	}, traceSettings{n.tracer, cfg}))
	if err != nil {
		return nil, "", err
	}
	// Every tool is known now, the MCP servers' too: a content rule of
	// the config's policy that none of them can match does not load.
	if err := decide.CheckPolicyRules(a.Tools.Get, cfg.Policy()); err != nil {
		return nil, "", fmt.Errorf("permission: %w", err)
	}
	return w, workdir, nil
}

// withTracing adds the node's tracer provider and the config's
// include_inputs to o; the logging middleware's secrets are redacted from
// recorded inputs too.
func withTracing(o warden.Options, t traceSettings) warden.Options {
	if t.p == nil {
		return o
	}
	o.TracerProvider, o.TraceInputs = t.p.TracerProvider(), t.cfg.Telemetry.IncludeInputs
	if l := t.cfg.Middleware.Logging; l != nil {
		o.TraceSecrets, o.TraceSecretEnv = l.Secrets, l.SecretEnv
	}
	return o
}

// traceSettings are what withTracing reads.
type traceSettings struct {
	p   *telemetry.Provider
	cfg config.Config
}

// hiddenPaths are the paths the local backend and the MCP servers'
// sandbox hide from tools: the worker's own files as it runs with them
// (cfg.OwnPaths, after the environment's and the flags' overrides) and
// the policy's concrete sensitive paths.
func hiddenPaths(cfg config.Config) []string {
	return append(cfg.OwnPaths(), config.ConcretePaths(cfg.Permission.SensitivePaths)...)
}

// housekeep starts the node's background loops: the pending-approvals
// gauge, counted from visibility alone (no turn is queried, however many
// wait), and the content store's garbage collection. They run until ctx
// is done or the node stops (which waits for them, so they are gone
// before the client they use closes), whichever is first.
func (n *node) housekeep(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	n.onStop(func() {
		cancel()
		wg.Wait()
	})
	wc := client.New(n.c, n.cfg.Worker.TaskQueue)
	wg.Go(func() {
		n.approvals.Poll(ctx, func(ctx context.Context) (int, error) {
			return wc.CountPending(ctx, "")
		}, 30*time.Second)
	})
	wg.Go(func() { wc.GCEvery(ctx, n.store, n.cfg.Content.GCInterval, n.logger) })
}

// grepEngine maps tools.grep_engine onto the Grep tool's engine.
func grepEngine(s string) tools.GrepEngine {
	if s == "auto" {
		return tools.GrepAuto
	}
	return tools.GrepEngine(s)
}

// auditStream starts the live audit stream (audit.stream) when it has a
// sink: the streamer runs until the node stops, and o gets its
// interceptor, which touches turns as they make progress.
func (n *node) auditStream(ctx context.Context, o *worker.Options) error {
	a := n.cfg.Audit.Stream
	if a.Sink == "" {
		return nil
	}
	token := ""
	if a.TokenEnv != "" {
		token = os.Getenv(a.TokenEnv)
	}
	sink, err := stream.Open(a.Sink, stream.SinkOptions{MaxBytes: int64(a.MaxSizeMB) << 20, Keep: a.Keep, Token: token})
	if err != nil {
		return err
	}
	s := &stream.Streamer{C: n.c, Sink: sink, State: n.cfg.StateFile(), Logger: n.logger, Metrics: stream.NewMetrics(n.reg), Sweep: a.Sweep, Interval: a.Interval}
	if err := s.Load(); err != nil {
		_ = sink.Close()
		return err
	}
	o.Interceptors = append(o.Interceptors, s.Interceptor())
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Run(ctx); err != nil {
			n.logger.Error("audit stream stopped", "error", err)
		}
	}()
	n.onStop(func() {
		cancel()
		<-done
		_ = sink.Close()
	})
	fmt.Printf("audit stream     %s\n", sink)
	return nil
}
