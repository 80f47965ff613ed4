package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/cmd/starter/internal/cli"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// runFlags are the flags of `starter run` and `starter session start`.
type runFlags struct {
	script, id, mode, rules, workdir, backend, toolQueue, provider, modelName, prompt, instruction string
	livePolicy, agent, budget                                                                      string
	asJSON, detach, noLivePolicy                                                                   bool
	maxIter                                                                                        int
	// session starts a session (session start), whose senders may
	// message it besides its requester.
	session bool
	senders []string
}

func newRunCmd(cn *conn) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run --script FILE | --provider NAME --prompt TEXT",
		Short: "Start an agent turn and print its progress and final answer",
		RunE:  func(cmd *cobra.Command, _ []string) error { return f.run(cmd, cn) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.id, "workflow-id", "", "workflow id (default generated); starting a running id attaches to it")
	fl.BoolVar(&f.asJSON, "json", false, "print events and the result as JSON lines")
	fl.BoolVar(&f.detach, "detach", false, "start the turn and return without waiting")
	f.register(cmd, "turn")
	return cmd
}

// register adds to cmd the flags run and session start share; what
// names the turn or the session in their help.
func (f *runFlags) register(cmd *cobra.Command, what string) {
	fl := cmd.Flags()
	fl.StringVar(&f.script, "script", "", "scripted model file (YAML)")
	fl.StringVar(&f.provider, "provider", "scripted", "model provider configured on the worker (models: in temporal-dev.yaml)")
	fl.StringVar(&f.modelName, "model", "", "model name passed to the provider")
	fl.StringVar(&f.prompt, "prompt", "", "the user's message (default the script's prompt)")
	fl.StringVar(&f.instruction, "instruction", "", "system instruction")
	fl.StringVar(&f.mode, "mode", "", "permission mode (default from config)")
	fl.StringVar(&f.rules, "rules", "", "policy file replacing the config's permission section")
	fl.StringVar(&f.workdir, "workdir", "", "workspace directory (default the worker's)")
	fl.StringVar(&f.backend, "backend", "", "backend name: local, docker, e2b (default the worker's)")
	fl.StringVar(&f.toolQueue, "tool-queue", "", "run tool calls on the workers of this task queue (e.g. a Docker host's)")
	fl.IntVar(&f.maxIter, "max-iterations", 0, "model call bound of each turn (default turn.max_iterations, else 1000)")
	fl.StringVar(&f.livePolicy, "live-policy", workflows.DefaultPolicyStore, "the policy store the "+what+" follows: 'policy apply' and remembered approvals reach it; the store is made if missing")
	fl.BoolVar(&f.noLivePolicy, "no-live-policy", false, "follow no policy store: the "+what+" keeps the policy it starts with")
	fl.StringVar(&f.agent, "agent", "", "the "+what+"'s agent label (remembered approvals of scope agent)")
	fl.StringVar(&f.budget, "budget", "", "each turn's budget, e.g. tokens=2M,cost=5,tool_calls=500,Bash=200,time=8h,warn=80% (default turn.budget): reaching it parks the turn on a budget approval")
}

// start starts the turn (or the session) the flags describe and returns
// its id, with the open connection; the caller closes c.
func (f runFlags) start(cmd *cobra.Command, cn *conn) (tclient.Client, *client.Client, config.Config, string, error) {
	ctx := cmd.Context()
	mc, prompt, err := f.model()
	if err != nil {
		return nil, nil, config.Config{}, "", err
	}
	c, cl, cfg, err := cn.dial(ctx)
	if err != nil {
		return nil, nil, cfg, "", err
	}
	fail := func(err error) (tclient.Client, *client.Client, config.Config, string, error) {
		c.Close()
		return nil, nil, cfg, "", err
	}
	pc, err := cli.PolicyContext(ctx, cfg.Policy(), f.rules, permission.Mode(f.mode))
	if err != nil {
		return fail(err)
	}
	id, in := f.input(cfg, mc, prompt, pc)
	if in.Budget, err = turnBudget(f.budget, cfg.Turn.Budget); err != nil {
		return fail(err)
	}
	// cl.Start refuses a quorum its approvers can never meet; one they
	// can meet for only part of its calls is said here.
	if warnings, err := client.CheckQuorum(cl.Approvers, in.Permission.Quorum, cl.Via); err == nil {
		for _, msg := range warnings {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", msg)
		}
	}
	// cl.Start makes the store when missing, so that an approval
	// remembered before any `policy apply` has a store to go to.
	run, err := cl.Start(ctx, id, in)
	if err != nil {
		return fail(err)
	}
	switch {
	case f.session:
		fmt.Fprintf(cmd.OutOrStdout(), "session %s (run %s)\n", run.GetID(), run.GetRunID())
	case f.detach:
		fmt.Fprintf(cmd.OutOrStdout(), "started %s (run %s)\n", run.GetID(), run.GetRunID())
	case !f.asJSON:
		fmt.Fprintf(cmd.OutOrStdout(), "turn %s (run %s)\n", run.GetID(), run.GetRunID())
	}
	return c, cl, cfg, id, nil
}

// run starts the turn and, unless --detach, follows it to its answer.
func (f runFlags) run(cmd *cobra.Command, cn *conn) error {
	c, cl, cfg, id, err := f.start(cmd, cn)
	if err != nil {
		return err
	}
	defer c.Close()
	if f.detach {
		return nil
	}
	out := cmd.OutOrStdout()
	res, err := follow(cmd.Context(), cl, id, out, f.asJSON)
	if err != nil {
		return err
	}
	return printResult(cmd.Context(), out, cfg, id, res, f.asJSON)
}

// model is the model the turn calls, and its prompt: --prompt, or the
// script's with the scripted model.
func (f runFlags) model() (workflows.ModelConfig, string, error) {
	mc := workflows.ModelConfig{Provider: f.provider, Name: f.modelName}
	if f.provider != "scripted" {
		if f.prompt == "" {
			return mc, "", fmt.Errorf("--prompt is required with --provider %s", f.provider)
		}
		return mc, f.prompt, nil
	}
	if f.script == "" {
		return mc, "", fmt.Errorf("--script is required with the scripted model (or give --provider)")
	}
	s, err := model.LoadScript(f.script)
	if err != nil {
		return mc, "", err
	}
	mc.Script = s
	if f.prompt == "" {
		return mc, s.Prompt, nil
	}
	return mc, f.prompt, nil
}

// input is the turn's workflow id (--workflow-id, else generated) and
// input, the bounds the flags leave unset taken from the config.
func (f runFlags) input(cfg config.Config, mc workflows.ModelConfig, prompt string, pc permission.Context) (string, workflows.TurnInput) {
	id, maxIter := f.id, f.maxIter
	if id == "" && f.session {
		id = fmt.Sprintf("session-%d", time.Now().UnixNano())
	} else if id == "" {
		id = fmt.Sprintf("turn-%d", time.Now().UnixNano())
	}
	if maxIter == 0 {
		maxIter = cfg.Turn.MaxIterations
	}
	return id, workflows.TurnInput{Prompt: prompt, Model: mc, Instruction: f.instruction,
		Permission: pc, Workdir: f.workdir, Backend: f.backend, ToolQueue: f.toolQueue, MaxIterations: maxIter,
		ContinueAsNewAfter: cfg.Turn.ContinueAsNewAfter, LivePolicy: livePolicy(f.livePolicy, f.noLivePolicy), Agent: f.agent,
		Session: f.session, Senders: f.senders}
}

// livePolicy is the TurnInput.LivePolicy of --live-policy and
// --no-live-policy: the store, or client.NoLivePolicy to opt out.
func livePolicy(store string, off bool) string {
	if off || store == "" {
		return client.NoLivePolicy
	}
	return store
}

// turnBudget is the budget of --budget, else turn.budget (nil: none).
func turnBudget(flag, conf string) (*workflows.Budget, error) {
	s, from := flag, "--budget"
	if s == "" {
		s, from = conf, "turn.budget"
	}
	if s == "" {
		return nil, nil
	}
	b, err := client.ParseBudget(s, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return &b, nil
}
