// Package warden runs AI-agent tool calls durably on Temporal. Register
// puts the agent-turn workflow and its activities on a worker you own;
// package client drives turns and approvals from your services.
//
//	if _, err := warden.EnsureSearchAttributes(ctx, c, "default"); err != nil { ... }
//	w := worker.New(c, "warden", worker.Options{})
//	if _, err := warden.Register(w, warden.Options{}); err != nil { ... }
//	err = w.Run(worker.InterruptCh())
package warden

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/activities"
	"github.com/wardenhq/warden/activities/compact"
	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/telemetry"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// Options configure what Register puts on a worker. The zero value gives
// the built-in tools on the local backend in the current directory, the
// scripted model, and no metrics.
type Options struct {
	// Tools are added after the built-ins (or alone with NoBuiltins).
	Tools      []tools.Tool
	NoBuiltins bool
	// GrepEngine forces the built-in Grep's engine (config
	// tools.grep_engine; GrepAuto, the zero value, probes for rg).
	GrepEngine tools.GrepEngine
	// GrepTimeout bounds one search of the built-in Grep (config
	// tools.grep_timeout; zero: tools.GrepTimeout).
	GrepTimeout time.Duration
	// ToolMiddleware wraps every tool call; the first is outermost.
	ToolMiddleware []middleware.Middleware
	// AgentMiddleware hooks into each turn (see workflows.AgentMiddleware);
	// the first is outermost. A middleware with a WrapModel or WrapTool
	// method also wraps model calls or tool calls (after ToolMiddleware).
	AgentMiddleware []workflows.AgentMiddleware
	// Backends by name, added to "local". DefaultBackend names the one a
	// turn uses when it names none (default "local").
	Backends       map[string]backend.Backend
	DefaultBackend string
	// Workdir is the default workspace directory (default: the current
	// directory).
	Workdir string
	// Protected are doublestar patterns of the worker's own paths that no
	// tool may read or write in any mode (permission.Context.Protected).
	// The default "local" backend runs every tool process in the kernel
	// sandbox and hides the patterns that name one path
	// (config.ConcretePaths) from it; pass Backends["local"] to hide other
	// paths from it or to turn the sandbox off.
	Protected []string
	// Models by provider name, added to "scripted".
	Models map[string]model.Model
	// ToolDefaults and ToolSettings (by tool name) tune retries (mapped
	// onto the activity RetryPolicy), timeouts (start-to-close), the
	// local-activity fast path and approval deadlines.
	ToolDefaults config.ToolSettings
	ToolSettings map[string]config.ToolSettings
	// Notifier posts webhook notifications about waiting calls (nil: none);
	// InboxURL is linked from them.
	Notifier *notify.Sender
	InboxURL string
	// RemindBefore sends an approval_reminder this long before a waiting
	// call's deadline (notify.remind_before; 0: none).
	RemindBefore time.Duration
	// Chat posts waiting calls to Slack (nil: none).
	Chat *activities.Chat
	// ModelMetrics records model calls, tokens and durations (nil: none).
	ModelMetrics *metrics.Models
	// Prices price model calls per million tokens, by model name or
	// provider name (nil: no costs).
	Prices map[string]model.Price
	// ResultBudget caps what of a tool result enters history besides its
	// content (data blocks, metadata), in bytes.
	ResultBudget int
	// Content is the store that keeps conversations and tool results out
	// of workflow history (nil: a directory store in ./.warden/content,
	// which is then protected and hidden like Protected).
	// Workers that run the same turns must share one store (an S3 bucket,
	// see content/s3store).
	Content content.Store
	// ContentCacheBytes bounds the conversations kept loaded in memory
	// (0: content.DefaultCacheBytes).
	ContentCacheBytes int64
	// MaxResultBytes bounds one tool result (0: 4 MiB); a larger one is a
	// tool error. MaxCallInputBytes bounds one tool call's input in a
	// model reply (0: 256 KiB); a larger one ends the turn with a reason.
	MaxResultBytes    int
	MaxCallInputBytes int
	// Compaction shrinks conversations that outgrow a model's context
	// window, by provider name (the context-window compaction).
	Compaction map[string]compact.Config
	// Client is the worker's Temporal client: turns that follow a policy
	// store (TurnInput.LivePolicy) query it through this client, and the
	// store's workflow signals waiting turns with it. Nil: such turns
	// fail their permission checks with the reason.
	Client tclient.Client
	// TracerProvider records warden's spans (model calls, decisions,
	// tool calls) under the Temporal SDK's activity spans; nil records
	// none. The workflow's own spans (approval waits, continue-as-new)
	// and the SDK's come from the tracing interceptor, which goes on the
	// worker's client: TracingInterceptor(tp) in client.Options.
	// Interceptors. TraceInputs also records inputs and outputs in
	// spans, capped and redacted of secrets as logs are (default off).
	TracerProvider trace.TracerProvider
	TraceInputs    bool
	// TraceSecrets and TraceSecretEnv are literal secrets and the names
	// of variables whose values are redacted from recorded inputs.
	TraceSecrets, TraceSecretEnv []string
	// VersioningBehavior is the Worker Versioning behaviour of warden's
	// workflows, for a worker with worker.Options.DeploymentOptions
	// UseVersioning on; it applies whatever the worker's
	// DefaultVersioningBehavior. The zero value is AutoUpgrade: each
	// turn moves to the deployment's current version at its next workflow
	// task, which warden's workflows allow because they patch every change
	// with workflow.GetVersion (see "Upgrading while turns wait" in
	// docs/operations.md). Pinned keeps each turn on the build that started it, so a
	// turn parked for a week keeps that build's code and needs its workers
	// running until it closes. The policy store's workflow, which never
	// closes, is AutoUpgrade either way. Without versioning on the worker,
	// it has no effect.
	VersioningBehavior workflow.VersioningBehavior
	// Registerer receives warden's metrics; nil records none.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// ModelWrapper is an agent middleware (Options.AgentMiddleware) that also
// wraps every model call, inside the model activity (retry, failover,
// response transforms). Assert it where you write one, so that a method
// with a slightly different signature is a compile error rather than a
// wrapper that silently never runs:
//
//	var _ warden.ModelWrapper = myMiddleware{}
type ModelWrapper interface {
	WrapModel(model.Model) model.Model
}

// ToolWrapper is an agent middleware that also wraps every tool call,
// inside the tool activity, after Options.ToolMiddleware. Assert it as
// ModelWrapper's doc shows.
type ToolWrapper interface {
	WrapTool(middleware.Handler) middleware.Handler
}

// Register registers the agent-turn workflow, the policy store's and
// the agent budget stores' workflows, the tools listing (workflows.ToolsWorkflow, which `starter
// tools list` runs to show this worker's registry) and warden's
// activities on w, and returns the activities (for inspection or tests).
//
// Register cannot reach the server: the namespace must also have
// warden's search attributes (SearchAttributes), or every turn that
// parks a call fails its workflow tasks with BadSearchAttributes until
// they exist. Call EnsureSearchAttributes with the worker's client before
// the worker starts: it creates them when the credentials allow, and
// otherwise returns the `temporal operator search-attribute create`
// command an administrator runs (and the tcld command, for Temporal
// Cloud).
//
// On a worker with Worker Versioning on, warden's workflows take
// Options.VersioningBehavior (AutoUpgrade by default), so Register does
// not panic for want of one.
func Register(w worker.Registry, o Options) (*activities.Activities, error) {
	a, err := NewActivities(o)
	if err != nil {
		return nil, err
	}
	vb := o.VersioningBehavior
	if vb == workflow.VersioningBehaviorUnspecified {
		vb = workflow.VersioningBehaviorAutoUpgrade
	}
	w.RegisterWorkflowWithOptions(workflows.New(roles.Checker{}, o.AgentMiddleware...), workflow.RegisterOptions{Name: workflows.TurnWorkflow, VersioningBehavior: vb})
	// The policy and budget stores never close: pinned, it would hold its build's
	// workers forever.
	w.RegisterWorkflowWithOptions(workflows.PolicyStore, workflow.RegisterOptions{Name: workflows.PolicyWorkflow, VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
	w.RegisterWorkflowWithOptions(workflows.BudgetStore, workflow.RegisterOptions{Name: workflows.BudgetStoreWorkflow, VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
	w.RegisterWorkflowWithOptions(workflows.ListTools, workflow.RegisterOptions{Name: workflows.ToolsWorkflow, VersioningBehavior: vb})
	a.Register(w)
	return a, nil
}

// NewActivities builds the activities Register would register.
func NewActivities(o Options) (*activities.Activities, error) {
	var all []tools.Tool
	if !o.NoBuiltins {
		for _, t := range tools.Builtins() {
			if g, ok := t.(tools.Grep); ok {
				g.Engine, g.Timeout = o.GrepEngine, o.GrepTimeout
				t = g
			}
			all = append(all, t)
		}
	}
	reg, err := tools.NewRegistry(append(all, o.Tools...)...)
	if err != nil {
		return nil, fmt.Errorf("warden: %w", err)
	}
	wd := o.Workdir
	if wd == "" {
		if wd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("warden: workdir: %w", err)
		}
	}
	store := o.Content
	if store == nil {
		dir, err := filepath.Abs(filepath.Join(".warden", "content"))
		if err != nil {
			return nil, fmt.Errorf("warden: %w", err)
		}
		if store, err = content.NewFS(dir); err != nil {
			return nil, fmt.Errorf("warden: %w", err)
		}
		// The default store is one of the worker's own paths.
		o.Protected = append(slices.Clone(o.Protected), dir+"{,/**}")
	}
	backends, def, err := backendsOf(o, wd)
	if err != nil {
		return nil, err
	}
	models := map[string]model.Model{"scripted": model.Scripted{}}
	maps.Copy(models, o.Models)
	compactors, err := compactorsOf(o.Compaction, models)
	if err != nil {
		return nil, err
	}
	a := &activities.Activities{
		Tools: reg, Backends: backends, DefaultBackend: def, DefaultWorkdir: wd, Protected: slices.Clone(o.Protected),
		Models: models, Middleware: slices.Clone(o.ToolMiddleware), ResultBudget: o.ResultBudget, Logger: o.Logger,
		ToolDefaults: o.ToolDefaults, ToolSettings: o.ToolSettings, Notifier: o.Notifier, InboxURL: o.InboxURL, RemindBefore: o.RemindBefore, Chat: o.Chat,
		ModelMetrics: o.ModelMetrics, Prices: o.Prices,
		Content: &content.Log{Store: store, CacheBytes: o.ContentCacheBytes}, Compactors: compactors,
		MaxResultBytes: o.MaxResultBytes, MaxCallInputBytes: o.MaxCallInputBytes, Client: o.Client,
		Trace: telemetry.NewTracing(o.TracerProvider, o.TraceInputs, o.TraceSecrets, o.TraceSecretEnv),
	}
	for _, m := range o.AgentMiddleware {
		if w, ok := m.(ModelWrapper); ok {
			a.ModelWrappers = append(a.ModelWrappers, w.WrapModel)
		}
		if w, ok := m.(ToolWrapper); ok {
			a.Middleware = append(a.Middleware, w.WrapTool)
		}
	}
	if o.Registerer != nil {
		a.Metrics = metrics.NewTools(o.Registerer)
		if o.Chat != nil {
			a.ChatMetrics = metrics.NewChat(o.Registerer)
		}
		if o.Notifier != nil {
			a.NotifyMetrics = metrics.NewNotify(o.Registerer)
		}
	}
	return a, nil
}

// TracingInterceptor is the Temporal SDK's OpenTelemetry interceptor over
// tp. Put it in the client.Options.Interceptors of the client your
// worker is built on, and of the clients that start turns: one trace
// then runs from the start of a turn through the workflow, its
// activities and its continue-as-new runs, and the workflow's own spans
// (approval waits) are recorded.
func TracingInterceptor(tp trace.TracerProvider) (interceptor.Interceptor, error) {
	return telemetry.Interceptor(tp)
}

// backendsOf are the backends of o by name, "local" in wd among them,
// and the name of the default one.
func backendsOf(o Options, wd string) (map[string]backend.Backend, string, error) {
	backends := map[string]backend.Backend{"local": &local.Backend{Workdir: wd, Hide: config.ConcretePaths(o.Protected)}}
	maps.Copy(backends, o.Backends)
	def := o.DefaultBackend
	if def == "" {
		def = "local"
	}
	if _, ok := backends[def]; !ok {
		return nil, "", fmt.Errorf("warden: default backend %q is not configured", def)
	}
	return backends, def, nil
}

// compactorsOf checks each compaction setting and that it names one of
// models.
func compactorsOf(cs map[string]compact.Config, models map[string]model.Model) (map[string]activities.Compactor, error) {
	compactors := map[string]activities.Compactor{}
	for _, name := range slices.Sorted(maps.Keys(cs)) {
		c := cs[name]
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("warden: compaction of %s: %w", name, err)
		}
		if _, ok := models[name]; !ok {
			return nil, fmt.Errorf("warden: compaction of %s: no such model provider", name)
		}
		compactors[name] = c
	}
	return compactors, nil
}
