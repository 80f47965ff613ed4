package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newRunCmd(cn *conn) *cobra.Command {
	var script, id, mode, rules, workdir, backend, toolQueue, provider, modelName, prompt, instruction string
	var asJSON, detach bool
	var maxIter int
	cmd := &cobra.Command{
		Use:   "run --script FILE | --provider NAME --prompt TEXT",
		Short: "Start an agent turn and print its progress and final answer",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			mc := workflows.ModelConfig{Provider: provider, Name: modelName}
			if provider == "scripted" {
				if script == "" {
					return fmt.Errorf("--script is required with the scripted model (or give --provider)")
				}
				s, err := model.LoadScript(script)
				if err != nil {
					return err
				}
				mc.Script = s
				if prompt == "" {
					prompt = s.Prompt
				}
			} else if prompt == "" {
				return fmt.Errorf("--prompt is required with --provider %s", provider)
			}
			c, cl, cfg, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			policy := cfg.Permission
			if rules != "" {
				if policy, err = loadPolicy(rules); err != nil {
					return err
				}
			}
			if mode != "" {
				policy.Mode = permission.Mode(mode)
			}
			pc, err := policy.Context()
			if err != nil {
				return err
			}
			if id == "" {
				id = fmt.Sprintf("turn-%d", time.Now().UnixNano())
			}
			if maxIter == 0 {
				maxIter = cfg.Turn.MaxIterations
			}
			in := workflows.TurnInput{Prompt: prompt, Model: mc, Instruction: instruction,
				Permission: pc, Workdir: workdir, Backend: backend, ToolQueue: toolQueue, MaxIterations: maxIter,
				ContinueAsNewAfter: cfg.Turn.ContinueAsNewAfter}
			run, err := cl.Start(ctx, id, in)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if detach {
				fmt.Fprintf(out, "started %s (run %s)\n", run.GetID(), run.GetRunID())
				return nil
			}
			if !asJSON {
				fmt.Fprintf(out, "turn %s (run %s)\n", run.GetID(), run.GetRunID())
			}
			res, err := follow(ctx, cl, id, out, asJSON)
			if err != nil {
				return err
			}
			return printResult(ctx, out, cfg, id, res, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&script, "script", "", "scripted model file (YAML)")
	f.StringVar(&provider, "provider", "scripted", "model provider configured on the worker (models: in temporal-dev.yaml)")
	f.StringVar(&modelName, "model", "", "model name passed to the provider")
	f.StringVar(&prompt, "prompt", "", "the user's message (default the script's prompt)")
	f.StringVar(&instruction, "instruction", "", "system instruction")
	f.StringVar(&id, "workflow-id", "", "workflow id (default generated); starting a running id attaches to it")
	f.BoolVar(&asJSON, "json", false, "print events and the result as JSON lines")
	f.BoolVar(&detach, "detach", false, "start the turn and return without waiting")
	f.StringVar(&mode, "mode", "", "permission mode (default from config)")
	f.StringVar(&rules, "rules", "", "policy file replacing the config's permission section")
	f.StringVar(&workdir, "workdir", "", "workspace directory (default the worker's)")
	f.StringVar(&backend, "backend", "", "backend name: local, docker, e2b (default the worker's)")
	f.StringVar(&toolQueue, "tool-queue", "", "run tool calls on the workers of this task queue (e.g. a Docker host's)")
	f.IntVar(&maxIter, "max-iterations", 0, "model call bound (default turn.max_iterations, else 1000)")
	return cmd
}
