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
}

// Step is one scripted model response.
type Step struct {
	Text      string         `json:"text,omitempty" yaml:"text"`
	ToolCalls []ScriptedCall `json:"tool_calls,omitempty" yaml:"tool_calls"`
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
	if req.Script == nil || len(req.Script.Steps) == 0 {
		return Response{}, errors.New("scripted model: request has no script")
	}
	n := 0
	for _, m := range req.Messages {
		if m.Role == RoleAssistant {
			n++
		}
	}
	if n >= len(req.Script.Steps) {
		return Response{Text: req.Script.Steps[len(req.Script.Steps)-1].Text}, nil
	}
	st := req.Script.Steps[n]
	resp := Response{Text: st.Text}
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
