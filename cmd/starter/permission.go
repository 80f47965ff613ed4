package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/cmd/starter/internal/cli"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// newPermissionCmd is "starter permission": offline checks of the
// permission engine against the built-in tools on the local machine.
func newPermissionCmd(cn *conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "permission",
		Short: "Inspect permission decisions",
	}
	cmd.AddCommand(newPermissionCheckCmd(cn))
	return cmd
}

// permFlags are the flags of "permission check".
type permFlags struct {
	tool, input, mode, rules, config string
	// dataDir is the worker's --data-dir, when it overrides its config's.
	dataDir  string
	workdirs []string
	jsonl    bool
	// livePolicy names the policy store to read (its live rules and
	// remembered approvals), for the turn workflow (labelled agent) and
	// its call.
	livePolicy, workflow, agent, call string
	// session names a file of the session's earlier calls (JSON lines).
	session string
}

func newPermissionCheckCmd(cn *conn) *cobra.Command {
	var f permFlags
	cmd := &cobra.Command{
		Use:   "check --tool NAME --input JSON | --jsonl",
		Short: "Explain the decision for one tool call, or for JSON lines on stdin",
		Long: `check decides tool calls as the worker does (decide.Verdict: the
permission engine, the sandbox auto-allow, remembered approvals and the
policy's quorum rules), locally; only --live-policy connects to Temporal,
to read the policy store's live rules and remembered approvals (for the
turn --workflow, labelled --agent), as the worker reads them.

With --tool and --input it prints the decision, the layer that decided,
why, and the suggested rules. --session FILE decides the session's
earlier calls first (one request per line, as --jsonl reads them), so
the policy's session rules (trifecta, rule_of_two) see what they touched. With --jsonl it reads one request per line
on stdin:

  {"tool":"Bash","input":{"command":"ls"},"mode":"default",
   "workdirs":["/src"],"rules":{"allow":[],"ask":[],"deny":["Bash(rm:*)"]}}

and writes one JSON result (or {"error":...}) per request, in order.
--rules, --mode and --workdir give defaults the requests extend.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd.Context(), cn)
			if err != nil {
				return err
			}
			if f.jsonl {
				if f.tool != "" || f.input != "" {
					return errors.New("--jsonl reads requests from stdin: drop --tool and --input")
				}
				return decide.CheckJSONL(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), o)
			}
			if f.tool == "" || f.input == "" {
				return errors.New("--tool and --input are required (or use --jsonl)")
			}
			res, err := decide.Check(cmd.Context(), decide.CheckRequest{Tool: f.tool, Input: json.RawMessage(f.input)}, o)
			if err != nil {
				return err
			}
			res.Explain(cmd.OutOrStdout())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.tool, "tool", "", "tool name, e.g. Bash")
	fl.StringVar(&f.input, "input", "", `tool input as JSON, e.g. '{"command":"ls"}'`)
	fl.StringVar(&f.mode, "mode", "", "permission mode: default, explore, accept_edits, bypass, dont_ask")
	fl.StringArrayVar(&f.workdirs, "workdir", nil, "working directory (repeatable; the first is the workspace, default the current directory)")
	fl.StringVar(&f.rules, "rules", "", "policy file (YAML or JSON)")
	fl.StringVar(&f.config, "worker-config", "", "the worker's config file, for its protected files and sandbox setting (default temporal-dev.yaml when present)")
	fl.StringVar(&f.dataDir, "worker-data-dir", "", "the worker's data directory when its --data-dir overrides the config's (protected like the rest of its own files)")
	fl.BoolVar(&f.jsonl, "jsonl", false, "read JSON requests from stdin, write JSON results to stdout")
	fl.StringVar(&f.livePolicy, "live-policy", "", "read this policy store (e.g. "+workflows.DefaultPolicyStore+"): its live rules replace the file's, and its remembered approvals apply, as in a turn that follows it")
	fl.StringVar(&f.workflow, "workflow", "check", "with --live-policy: the turn's workflow id (remembered approvals of the turn and agent scopes)")
	fl.StringVar(&f.agent, "agent", "", "with --live-policy: the turn's agent label (remembered approvals of the agent scope)")
	fl.StringVar(&f.call, "call", "check", "with --live-policy: the call's id (a single-use approval it already spent)")
	fl.StringVar(&f.session, "session", "", "a file of the session's earlier calls, one JSON request per line as --jsonl reads them: the session rules (permission.session) decide against what they touched")
	return cmd
}

// options builds the check's options from --rules, --mode, --workdir
// and --live-policy.
func (f permFlags) options(ctx context.Context, cn *conn) (decide.CheckOptions, error) {
	base, err := cli.PolicyContext(ctx, permission.Policy{}, f.rules, permission.Mode(f.mode))
	if err != nil {
		return decide.CheckOptions{}, err
	}
	var live workflows.PolicyState
	if f.livePolicy != "" {
		if live, err = cn.policyState(ctx, f.livePolicy); err != nil {
			return decide.CheckOptions{}, err
		}
		if err := live.Apply(&base); err != nil {
			return decide.CheckOptions{}, err
		}
	}
	// The worker's own files are protected as the worker protects them
	// (its config, the environment's overrides and --worker-data-dir),
	// and its local backend's sandbox setting decides the profile.
	cfg, _, err := config.ResolveClient(f.config, config.FromEnv(os.Getenv), config.Overrides{DataDir: f.dataDir})
	if err != nil {
		return decide.CheckOptions{}, err
	}
	base.Protected = append(base.Protected, cfg.OwnPatterns()...)
	limits, err := local.ConfigLimits(cfg.Backend.Local.Limits)
	if err != nil {
		return decide.CheckOptions{}, fmt.Errorf("backend.local.limits: %w", err)
	}
	o := decide.CheckOptions{Base: base, Workdirs: f.workdirs, Unsandboxed: cfg.Backend.Local.SandboxOff(), ToolNetwork: toolNetwork(cfg),
		NoLinks:    cfg.Backend.Local.LayerOff(local.LinksLayer),
		Remembered: live.Remembered, Turn: decide.Turn{WorkflowID: f.workflow, Agent: f.agent, CallID: f.call}, Now: time.Now()}
	if limits != (calls.Limits{}) {
		o.Limits = &limits
	}
	if f.session != "" {
		fh, err := os.Open(f.session)
		if err != nil {
			return decide.CheckOptions{}, fmt.Errorf("--session: %w", err)
		}
		defer fh.Close()
		if o.Session, err = decide.PlaySession(ctx, fh, o); err != nil {
			return decide.CheckOptions{}, fmt.Errorf("--session %s: %w", f.session, err)
		}
	}
	return o, nil
}
