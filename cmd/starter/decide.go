package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/cmd/starter/internal/cli"
	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/workflows"
)

// decideFlags are the flags of `approvals approve` (allow) and
// `approvals deny`.
type decideFlags struct {
	allow                     bool
	always, all, signal, once bool
	rules                     []string
	by, reason, tool, input   string
	hash, scope, agent, raise string
	olderThan, ttl            time.Duration
}

// declare declares the flags of approve or deny on cmd.
func (f *decideFlags) declare(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.by, "by", "", "who decides (default the key's name, else the OS user)")
	fl.StringVar(&f.hash, "hash", "", "the call's hash as listed by 'approvals list' (default: the call as read now); refused if the call or policy changed since")
	fl.BoolVar(&f.signal, "signal", false, "send a signal instead of an update: the server takes it while no worker runs, and the turn checks it later (a refusal is a rejected event: starter watch WORKFLOW)")
	fl.BoolVar(&f.all, "all", false, "answer every pending approval matching --tool/--older-than")
	fl.StringVar(&f.tool, "tool", "", "with --all: only this tool")
	fl.DurationVar(&f.olderThan, "older-than", 0, "with --all: only entries waiting longer than this")
	if !f.allow {
		fl.StringVar(&f.reason, "reason", "", "why (the model reads it)")
		return
	}
	fl.StringVar(&f.reason, "reason", "", "why it is allowed, or a ticket (the audit and the turn's answered event record it)")
	fl.StringVar(&f.raise, "raise", "", "answer a budget approval: what to add to the turn's budget, e.g. cost=+2,tokens=+1M,tool_calls=+100,Bash=+50,time=+1h")
	fl.BoolVar(&f.always, "always", false, "also add a rule so similar calls are allowed from now on")
	fl.StringArrayVar(&f.rules, "rule", nil, "rule to add with --always (default the suggested rules)")
	fl.StringVar(&f.input, "input", "", "run with this edited JSON input instead (re-checked)")
	fl.StringVar(&f.scope, "scope", "", "with --always: remember it in the policy store for input (this exact input), turn, agent or namespace, instead of this turn only")
	fl.StringVar(&f.agent, "agent", "", "with --scope agent: the turn label or workflow-id prefix (default the turn's label)")
	fl.DurationVar(&f.ttl, "ttl", 0, "with --scope: forget it after this long")
	fl.BoolVar(&f.once, "once", false, "with --scope: forget it after the first call it allows")
}

// approval is the answer the flags give (By is set by run), checked
// before anything is sent.
func (f *decideFlags) approval() (workflows.Approval, error) {
	if !f.allow && f.reason == "" {
		return workflows.Approval{}, errors.New("--reason is required")
	}
	a := workflows.Approval{Decision: workflows.DecisionAllow, Rules: f.rules, Reason: f.reason}
	if f.always {
		a.Decision = workflows.DecisionAlwaysAllow
	}
	if err := f.remember(&a); err != nil {
		return a, err
	}
	if f.raise != "" {
		if f.always || f.input != "" {
			return a, errors.New("--raise answers a budget approval: no --always or --input with it")
		}
		r, err := client.ParseBudget(f.raise, true)
		if err != nil {
			return a, fmt.Errorf("--raise: %w", err)
		}
		a.Raise = &r
	}
	if !f.allow {
		a.Decision = workflows.DecisionDeny
	}
	if f.input != "" {
		if !json.Valid([]byte(f.input)) {
			return a, errors.New("--input is not valid JSON")
		}
		a.Input = json.RawMessage(f.input)
	}
	return a, nil
}

// remember sets where an --always approval is remembered (--scope,
// --ttl, --once, --agent).
func (f *decideFlags) remember(a *workflows.Approval) error {
	if f.scope == "" && f.ttl == 0 && !f.once && f.agent == "" {
		return nil
	}
	if !f.always {
		return errors.New("--scope, --ttl, --once and --agent remember an --always approval: add --always")
	}
	if f.scope == "" {
		return errors.New("--ttl, --once and --agent need --scope input|turn|agent|namespace")
	}
	sc := workflows.RememberScope(f.scope)
	switch {
	case !sc.Valid():
		return fmt.Errorf("--scope %q: want input, turn, agent or namespace", f.scope)
	case f.agent != "" && sc != workflows.ScopeAgent:
		return fmt.Errorf("--agent names the agent of --scope agent, not of --scope %s", sc)
	case f.ttl < 0:
		return fmt.Errorf("--ttl %v: want a positive duration such as 24h", f.ttl)
	}
	a.Scope, a.TTL, a.SingleUse, a.Agent = sc, f.ttl, f.once, f.agent
	return nil
}

// run sends the answer to the call of args, or to every call --all
// selects, and prints each outcome.
func (f *decideFlags) run(cmd *cobra.Command, cn *conn, args []string) error {
	a, err := f.approval()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	c, cl, _, err := cn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	a.By = cn.by(f.by)
	allowed := cli.AnswerCheck(cl.Approvers, roles.Checker{})
	sel := client.Selection{All: f.all, Filter: client.Filter{Tool: f.tool, OlderThan: f.olderThan}, Hash: f.hash, FullInput: allowed != nil}
	if !f.all {
		sel.WorkflowID, sel.CallID = args[0], args[1]
	}
	targets, err := cl.Targets(ctx, sel)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if failed := printAnswers(out, cmd.ErrOrStderr(), cl.AnswerAll(ctx, targets, a, f.signal, allowed), a.Decision); failed > 0 {
		return fmt.Errorf("%d of %d answers failed", failed, len(targets))
	}
	if f.all {
		fmt.Fprintf(out, "%d answered\n", len(targets))
	}
	return nil
}
