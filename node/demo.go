package node

import (
	"context"
	"fmt"
	"time"

	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/workflows"
)

// demo runs one scripted turn and prints its progress.
func demo(ctx context.Context, c tclient.Client, cfg config.Config) error {
	script, err := model.LoadScript(cfg.Demo.Script)
	if err != nil {
		return err
	}
	pc, err := cfg.Policy().Context()
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
