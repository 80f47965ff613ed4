// Package activities holds warden's Temporal activities: the model call,
// the permission check (run as a local activity) and the tool call. They
// are methods on Activities, which holds every dependency; nothing here
// is global.
package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/telemetry"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// Activities runs model calls, permission checks and tool calls.
type Activities struct {
	// Tools are the tools the worker offers.
	Tools *tools.Registry
	// Backends by name; DefaultBackend names the one used when a turn
	// names none.
	Backends       map[string]backend.Backend
	DefaultBackend string
	// DefaultWorkdir is used when a turn names no workdir.
	DefaultWorkdir string
	// Protected are doublestar patterns of the worker's own paths (data
	// directory, config file) that no call may read or write in any mode
	// (permission.Context.Protected); Prepare adds them to every turn's
	// policy.
	Protected []string
	// Models by provider name.
	Models map[string]model.Model
	// Middleware wraps every tool call (first registered is outermost).
	Middleware []middleware.Middleware
	// ModelWrappers wrap every model call inside the model activity
	// (retry, failover, response transforms); the first is outermost.
	ModelWrappers []func(model.Model) model.Model
	// ResultBudget caps a tool result's size in bytes before it enters
	// history (default tools.DefaultResultBudget).
	ResultBudget int
	// ToolDefaults and ToolSettings (by tool name, laid over the
	// defaults) decide retries, timeouts, the fast path and approval
	// deadlines of calls.
	ToolDefaults config.ToolSettings
	ToolSettings map[string]config.ToolSettings
	// Notifier posts webhook notifications about waiting calls; nil sends
	// none. InboxURL links notifications to the inbox. NotifyMetrics
	// counts failed deliveries (nil: not counted).
	Notifier      *notify.Sender
	InboxURL      string
	NotifyMetrics *metrics.Notify
	// RemindBefore asks turns to send an approval_reminder this long
	// before a waiting call's deadline (0: no reminders).
	RemindBefore time.Duration
	// Chat posts waiting calls to Slack; nil posts none. ChatMetrics
	// counts its failed calls (nil: not counted).
	Chat        *Chat
	ChatMetrics *metrics.Chat
	// Content keeps conversations and tool results out of history (turns
	// call ModelStep and run tools with ByRef). Compactors, by provider
	// name, shrink conversations that outgrow the model's window.
	Content    *content.Log
	Compactors map[string]Compactor
	// MaxResultBytes bounds one tool result kept in the store
	// (DefaultMaxResultBytes); MaxCallInputBytes one tool call's input in
	// a model reply (DefaultMaxCallInputBytes).
	MaxResultBytes    int
	MaxCallInputBytes int
	// HeartbeatEvery is how often a running tool heartbeats (default 1 s).
	HeartbeatEvery time.Duration
	// Metrics records tool calls and permission decisions, ModelMetrics
	// model calls (nil: nothing is recorded).
	Metrics      *metrics.Tools
	ModelMetrics *metrics.Models
	// Prices price model calls, by the turn's model name or else the
	// provider's name; a call of a model without a price gets no cost.
	Prices map[string]model.Price
	Logger *slog.Logger
	// Client reaches the namespace's policy stores: Prepare queries the
	// store a turn follows, spends single-use remembered approvals, and
	// PolicyFanout signals waiting turns. Nil: turns that follow a store
	// fail their permission checks with the reason.
	Client tclient.Client
	// Trace records warden's spans (model calls, decisions, tool calls)
	// under the SDK interceptor's activity spans; nil records none.
	Trace *telemetry.Tracing

	validator tools.Validator
}

// Register registers the activities under the names the workflow uses.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.Model, activity.RegisterOptions{Name: workflows.ActivityModel})
	r.RegisterActivityWithOptions(a.ModelStep, activity.RegisterOptions{Name: workflows.ActivityModelStep})
	r.RegisterActivityWithOptions(a.Prepare, activity.RegisterOptions{Name: workflows.ActivityPrepare})
	r.RegisterActivityWithOptions(a.Tool, activity.RegisterOptions{Name: workflows.ActivityTool})
	r.RegisterActivityWithOptions(a.Notify, activity.RegisterOptions{Name: workflows.ActivityNotify})
	r.RegisterActivityWithOptions(a.ChatPost, activity.RegisterOptions{Name: workflows.ActivityChatPost})
	r.RegisterActivityWithOptions(a.ChatUpdate, activity.RegisterOptions{Name: workflows.ActivityChatUpdate})
	r.RegisterActivityWithOptions(a.PolicyFanout, activity.RegisterOptions{Name: workflows.ActivityPolicyFanout})
	r.RegisterActivityWithOptions(a.ListTools, activity.RegisterOptions{Name: workflows.ActivityTools})
	r.RegisterActivityWithOptions(a.CheckRules, activity.RegisterOptions{Name: workflows.ActivityCheckRules})
	r.RegisterActivityWithOptions(a.BudgetCharge, activity.RegisterOptions{Name: workflows.ActivityBudgetCharge})
	r.RegisterActivityWithOptions(a.BudgetRaise, activity.RegisterOptions{Name: workflows.ActivityBudgetRaise})
	r.RegisterActivityWithOptions(a.WindowReserve, activity.RegisterOptions{Name: workflows.ActivityWindowReserve})
	r.RegisterActivityWithOptions(a.AuditHead, activity.RegisterOptions{Name: workflows.ActivityAuditHead})
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

// Model calls the turn's model provider with the enabled tools' specs.
func (a *Activities) Model(ctx context.Context, in workflows.ModelInput) (model.Response, error) {
	m, ok := a.Models[in.Provider]
	if !ok {
		return model.Response{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("unknown model provider %q", in.Provider), workflows.ErrTypeUnknownModel, nil)
	}
	for i := len(a.ModelWrappers) - 1; i >= 0; i-- {
		m = a.ModelWrappers[i](m)
	}
	for _, info := range a.Tools.Infos(in.Tools...) {
		in.Request.Tools = append(in.Request.Tools, model.ToolSpec{Name: info.Name, Description: info.Description, InputSchema: info.InputSchema})
	}
	stop := a.heartbeat(ctx, nil)
	defer stop()
	ctx, end := a.modelSpan(ctx, in.Provider, in.Model)
	start := time.Now()
	resp, err := m.Generate(ctx, in.Request)
	resp.Usage = a.price(in.Provider, in.Model, resp.Usage)
	a.ModelMetrics.Observe(in.Provider, in.Model, time.Since(start), resp.Usage, err)
	end(resp, err)
	return resp, err
}

// price sets u's cost from the price of the model (else the provider),
// or clears it when neither has one: a cost is the worker's, never a
// provider's or a script's.
func (a *Activities) price(provider, name string, u model.Usage) model.Usage {
	u.Cost = nil
	p, ok := a.Prices[name]
	if !ok || name == "" {
		p, ok = a.Prices[provider]
	}
	if ok {
		c := p.Cost(u)
		u.Cost = &c
	}
	return u
}

// backendName is the name of the backend a call of ce runs on.
func (a *Activities) backendName(ce workflows.CallEnv) string {
	if ce.Backend == "" {
		return a.DefaultBackend
	}
	return ce.Backend
}

// env builds the environment a call runs against.
func (a *Activities) env(ce workflows.CallEnv, state *tools.State, pc *permission.Context) (*tools.Env, error) {
	name := ce.Backend
	if name == "" {
		name = a.DefaultBackend
	}
	b, ok := a.Backends[name]
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("unknown backend %q", name), "UnknownBackend", nil)
	}
	wd := ce.Workdir
	if wd == "" {
		wd = a.DefaultWorkdir
		// A sandboxed backend has its own workspace directory.
		if w, ok := b.(interface{ Workdir() string }); ok && name != "local" {
			wd = w.Workdir()
		}
	}
	return &tools.Env{Backend: b, Workdir: wd, State: state, Permission: pc}, nil
}

// Tool runs one allowed call through the middleware chain, heartbeating
// while it runs, and returns its (capped) result and the tool state.
// A failing tool is a result with IsError; a Go error means an
// infrastructure fault and is retried by the activity's RetryPolicy.
func (a *Activities) Tool(ctx context.Context, in workflows.ToolInput) (out workflows.ToolOutput, err error) {
	t, ok := a.Tools.Get(in.Call.Name)
	if !ok {
		return out, temporal.NewNonRetryableApplicationError(fmt.Sprintf("unknown tool %q", in.Call.Name), workflows.ErrTypeUnknownTool, nil)
	}
	state := in.State
	env, err := a.env(in.Env, &state, nil)
	if err != nil {
		return out, err
	}
	env.IdempotencyKey = in.Key
	prof := in.Sandbox
	if prof == nil {
		// Decided before profiles were recorded: the default profile.
		prof = calls.DefaultSandbox(env.Workdir)
	} else if in.Env.Workdir == "" {
		// The turn names no workdir: the call runs in this worker's,
		// which may not be the one of the worker that decided it.
		prof = calls.Rebased(prof, env.Workdir)
	}
	// The call is bound to its profile here, once: whatever it runs or
	// touches on the backend, it does under prof.
	ctx = backend.WithSandbox(ctx, prof)
	info := activity.GetInfo(ctx)
	attempt := info.Attempt
	ctx = tools.WithCallInfo(ctx, tools.CallDetails{Tool: in.Call.Name, CallID: in.Call.ID, IdempotencyKey: in.Key,
		Attempt: attempt, WorkflowID: info.WorkflowExecution.ID})
	ctx, end := a.toolSpan(ctx, in.Call, a.backendName(in.Env), prof, attempt)
	defer func() { end(out.Result, err) }()
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			a.logger().Error("tool panicked", "tool", in.Call.Name, "panic", p, "stack", string(debug.Stack()))
			out = workflows.ToolOutput{State: in.State, Result: tools.Result{CallID: in.Call.ID, Name: in.Call.Name,
				IsError: true, State: tools.StateError, Content: fmt.Sprintf("Tool %s crashed: %v", in.Call.Name, p)}}
			err = nil
		}
		a.Metrics.Call(in.Call.Name, outcome(out.Result, err), time.Since(start))
	}()

	prog := &progress{p: workflows.ToolProgress{CallID: in.Call.ID, Tool: in.Call.Name}}
	env.Progress = prog.add
	stop := a.heartbeat(ctx, prog)
	defer stop()
	h := middleware.Chain(a.Middleware...)(middleware.Terminal)
	res, err := tools.Collect(h(ctx, middleware.Call{ID: in.Call.ID, Tool: t, Input: in.Call.Input, Env: env, Attempt: attempt}))
	if errors.Is(ctx.Err(), context.Canceled) {
		// The turn cancelled the call (an interrupt; the SDK reports a
		// cancellation only when one was asked for): its processes are
		// stopped, and the turn gets what they printed.
		return out, temporal.NewCanceledError(prog.snapshot())
	}
	if err != nil {
		return out, fmt.Errorf("tool %s: %w", in.Call.Name, err)
	}
	res.CallID, res.Name = in.Call.ID, in.Call.Name
	if in.ByRef {
		if res, err = a.storeResult(ctx, activity.GetInfo(ctx).WorkflowExecution.ID, res); err != nil {
			return out, fmt.Errorf("tool %s: %w", in.Call.Name, err)
		}
	}
	out.Result = tools.CapResult(res, a.ResultBudget)
	out.State = state
	return out, nil
}

// heartbeat records a heartbeat periodically until stopped, so the server
// notices a dead worker and cancellation reaches the running tool.
func (a *Activities) heartbeat(ctx context.Context, prog *progress) (stop func()) {
	every := a.HeartbeatEvery
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				// Details replace the previous ones, so a running tool's
				// heartbeat always carries its latest output tail.
				if prog == nil {
					activity.RecordHeartbeat(ctx)
				} else {
					activity.RecordHeartbeat(ctx, prog.snapshot())
				}
			}
		}
	}()
	return func() { close(done) }
}

// progressTail bounds the output kept for heartbeat details.
const progressTail = 4 << 10

// progress collects a running tool's output for heartbeats.
type progress struct {
	mu sync.Mutex
	p  workflows.ToolProgress
}

func (pr *progress) add(_ string, b []byte) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.p.Bytes += int64(len(b))
	out := pr.p.Output + string(b)
	if len(out) > progressTail {
		out = out[len(out)-progressTail:]
	}
	pr.p.Output = out
}

func (pr *progress) snapshot() workflows.ToolProgress {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.p
}

func outcome(r tools.Result, err error) string {
	switch {
	case err != nil:
		return metrics.OutcomeFailure
	case r.IsError:
		return metrics.OutcomeError
	default:
		return metrics.OutcomeSuccess
	}
}
