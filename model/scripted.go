package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Script is a scripted model's plan: a list of steps, each answered in
// order, one per model call. Demos and tests use it instead of an LLM.
//
//	prompt: List the workspace
//	steps:
//	  - text: Let me look.
//	    tool_calls:
//	      - name: Bash
//	        input: {command: "ls"}
//	  - text: Done.
type Script struct {
	// Prompt is the user's message that opens the turn (optional).
	Prompt string `json:"prompt,omitempty" yaml:"prompt"`
	Steps  []Step `json:"steps" yaml:"steps"`
	// Current, when set, is the one step to answer now: a turn sends the
	// step it is at rather than the whole script, so a model call's input
	// does not grow with the script.
	Current *Step `json:"current,omitempty" yaml:"-"`
}

// StepAt returns step n of the script (0-based) as the workflow sends
// it: call ids filled in, and past the last step the last step's text
// with no tool calls, so a turn always ends.
func (s *Script) StepAt(n int) Step {
	if n >= len(s.Steps) {
		last := s.Steps[len(s.Steps)-1]
		return Step{Text: last.Text, Echo: last.Echo}
	}
	st := s.Steps[n]
	calls := make([]ScriptedCall, len(st.ToolCalls))
	for j, c := range st.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", n+1, j+1)
		}
		calls[j] = c
	}
	st.ToolCalls = calls
	return st
}

// Step is one scripted model response.
type Step struct {
	Text      string         `json:"text,omitempty" yaml:"text"`
	ToolCalls []ScriptedCall `json:"tool_calls,omitempty" yaml:"tool_calls"`
	// Usage is the usage the step reports, as a provider would (its cost
	// is the worker's to compute: a scripted cost is ignored).
	Usage *Usage `json:"usage,omitempty" yaml:"usage"`
	// Echo adds to the step's text how many user messages the model
	// received and the last one, so a demo or test shows what reached
	// the model.
	Echo bool `json:"echo,omitempty" yaml:"echo"`
}

// ScriptedCall is a tool call in a script; its input is any YAML value
// and becomes JSON. An ID is generated when empty.
type ScriptedCall struct {
	ID    string `json:"id,omitempty" yaml:"id"`
	Name  string `json:"name" yaml:"name"`
	Input any    `json:"input,omitempty" yaml:"input"`
}

// ParseScript reads a script from YAML (or JSON) and checks it.
func ParseScript(data []byte) (*Script, error) {
	var s Script
	if err := yaml.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	if len(s.Steps) == 0 {
		return nil, errors.New("script: no steps")
	}
	for i, st := range s.Steps {
		for j, c := range st.ToolCalls {
			if strings.TrimSpace(c.Name) == "" {
				return nil, fmt.Errorf("script: steps[%d].tool_calls[%d]: missing name", i, j)
			}
			if _, err := json.Marshal(normalize(c.Input)); err != nil {
				return nil, fmt.Errorf("script: steps[%d].tool_calls[%d].input: %w", i, j, err)
			}
		}
	}
	return &s, nil
}

// LoadScript reads and parses a script file.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	return ParseScript(data)
}

// Scripted answers model calls from the request's Script: the n-th call
// (counted by the assistant messages already in the conversation) gets
// step n. Past the last step it answers with the last step's text and no
// tool calls, so a turn always ends.
type Scripted struct{}

// Generate implements Model.
func (Scripted) Generate(_ context.Context, req Request) (Response, error) {
	if req.Purpose == PurposeSummarize {
		return Response{Text: summarize(req.Messages)}, nil
	}
	if req.Script != nil && req.Script.Current != nil {
		return answerTo(*req.Script.Current, 0, req.Messages)
	}
	if req.Script == nil || len(req.Script.Steps) == 0 {
		return Response{}, errors.New("scripted model: request has no script")
	}
	n := 0
	for _, m := range req.Messages {
		if m.Role == RoleAssistant {
			n++
		}
	}
	return answerTo(req.Script.StepAt(n), n, req.Messages)
}

// answerTo is step n's response; an Echo step's text ends with how many
// user messages msgs holds and the last one.
func answerTo(st Step, n int, msgs []Message) (Response, error) {
	r, err := answer(st, n)
	if err != nil || !st.Echo {
		return r, err
	}
	n, last := 0, ""
	for _, m := range msgs {
		if m.Role == RoleUser {
			n, last = n+1, m.Content
		}
	}
	r.Text += fmt.Sprintf("\n(%d user messages; the last: %s)", n, last)
	return r, nil
}

// answer turns step n into a response.
func answer(st Step, n int) (Response, error) {
	resp := Response{Text: st.Text}
	if st.Usage != nil {
		resp.Usage = *st.Usage
		resp.Usage.Cost = nil
	}
	for j, c := range st.ToolCalls {
		in, err := json.Marshal(normalize(c.Input))
		if err != nil {
			return Response{}, fmt.Errorf("scripted model: step %d call %d: %w", n, j, err)
		}
		if c.Input == nil {
			in = json.RawMessage(`{}`)
		}
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", n+1, j+1)
		}
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: id, Name: c.Name, Input: in})
	}
	return resp, nil
}

// summarize is the scripted model's summary of a conversation: one line
// per message with its role and the start of its content. It is
// extractive, so tests can see which messages a summary covered.
func summarize(msgs []Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Summary of %d earlier messages:", len(msgs))
	for _, m := range msgs {
		line := m.Content
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		if len(line) > 80 {
			line = line[:80] + "…"
		}
		fmt.Fprintf(&b, "\n- %s: %s", m.Role, line)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, " [%s]", c.Name)
		}
	}
	return b.String()
}

// normalize turns YAML's map[any]any (nested) into JSON-encodable maps.
func normalize(v any) any {
	switch t := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = normalize(x)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = normalize(x)
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = normalize(x)
		}
		return out
	default:
		return v
	}
}
