package model_test

import (
	"context"
	"fmt"

	"github.com/wardenhq/warden/model"
)

// ExampleScripted parses a script and plays it: each model call answers
// with the next step, counted by the assistant messages already in the
// conversation; past the last step the turn ends with its text.
func ExampleScripted() {
	s, err := model.ParseScript([]byte(`
prompt: List the workspace
steps:
  - text: Let me look.
    tool_calls:
      - name: Bash
        input: {command: "ls"}
  - text: Done.
`))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	req := model.Request{Script: s, Messages: []model.Message{{Role: model.RoleUser, Content: s.Prompt}}}
	for range 3 {
		resp, err := model.Scripted{}.Generate(ctx, req)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%q", resp.Text)
		for _, c := range resp.ToolCalls {
			fmt.Printf(" %s %s(%s)", c.ID, c.Name, c.Input)
		}
		fmt.Println()
		req.Messages = append(req.Messages, model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
	}
	// Output:
	// "Let me look." call_1_1 Bash({"command":"ls"})
	// "Done."
	// "Done."
}

// ExampleParseScript shows that a script is checked when parsed.
func ExampleParseScript() {
	_, err := model.ParseScript([]byte("steps:\n  - tool_calls: [{input: {command: ls}}]\n"))
	fmt.Println(err)
	// Output:
	// script: steps[0].tool_calls[0]: missing name
}
