// Package middlewaretest holds what the tool-middleware tests share: a
// tool with canned output and a one-call runner.
package middlewaretest

import (
	"context"
	"encoding/json"

	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/tools"
)

// Tool is a tool named Name that yields Chunks in order and then, when
// Err is set, fails with Err. Its input is ignored.
type Tool struct {
	Name   string
	Chunks []tools.Chunk
	Err    error
}

// Text is a Tool that answers text in one chunk.
func Text(name, text string) Tool {
	return Tool{Name: name, Chunks: []tools.Chunk{{Text: text}}}
}

// Info implements tools.Tool.
func (t Tool) Info() tools.Info { return tools.Info{Name: t.Name} }

// Call implements tools.Tool.
func (t Tool) Call(context.Context, *tools.Env, json.RawMessage) tools.Stream {
	return func(yield func(tools.Chunk, error) bool) {
		for _, ch := range t.Chunks {
			if !yield(ch, nil) {
				return
			}
		}
		if t.Err != nil {
			yield(tools.Chunk{}, t.Err)
		}
	}
}

// Content is the text of the tool's chunks joined, as a collected
// result holds it.
func (t Tool) Content() string {
	s := ""
	for _, ch := range t.Chunks {
		s += ch.Text
	}
	return s
}

// Run sends c through mw to the tool and collects the result.
func Run(ctx context.Context, mw middleware.Middleware, c middleware.Call) (tools.Result, error) {
	return tools.Collect(mw(middleware.Terminal)(ctx, c))
}
