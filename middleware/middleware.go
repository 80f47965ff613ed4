// Package middleware wraps tool calls in an onion of middlewares.
//
// A Middleware takes the next Handler and returns a Handler. Chain(a, b, c)
// yields a(b(c(tool))): the first registered middleware is the outermost
// layer, runs its pre-logic first and its post-logic last. Every Handler
// returns a stream, whether the tool streams or not, so a middleware can
// rewrite the call's input before calling next and transform the chunks
// it yields. Middlewares run inside the tool activity.
package middleware

import (
	"context"
	"encoding/json"

	"github.com/wardenhq/warden/tools"
)

// Call is one tool invocation as middlewares see it.
type Call struct {
	// ID is the model's tool-call id.
	ID string
	// Tool is the tool being called.
	Tool tools.Tool
	// Input is the call's JSON input; a middleware may replace it.
	Input json.RawMessage
	// Env is the environment the call runs against.
	Env *tools.Env
	// Attempt is the activity attempt (1 on the first try).
	Attempt int32
}

// Name is the called tool's name.
func (c Call) Name() string { return c.Tool.Info().Name }

// Handler runs a call and returns its chunk stream.
type Handler func(ctx context.Context, c Call) tools.Stream

// Middleware wraps a Handler.
type Middleware func(next Handler) Handler

// Terminal is the innermost handler: it calls the tool itself.
func Terminal(ctx context.Context, c Call) tools.Stream {
	return c.Tool.Call(ctx, c.Env, c.Input)
}

// Chain composes middlewares so that the first is outermost.
func Chain(mws ...Middleware) Middleware {
	return func(next Handler) Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			if mws[i] != nil {
				next = mws[i](next)
			}
		}
		return next
	}
}

// MapChunks returns a middleware that transforms every chunk the inner
// layers yield with fn.
func MapChunks(fn func(c Call, ch tools.Chunk) tools.Chunk) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, c Call) tools.Stream {
			inner := next(ctx, c)
			return func(yield func(tools.Chunk, error) bool) {
				for ch, err := range inner {
					if err == nil {
						ch = fn(c, ch)
					}
					if !yield(ch, err) {
						return
					}
				}
			}
		}
	}
}

// RewriteInput returns a middleware that replaces a call's input with
// fn's result before the inner layers see it. An error from fn becomes a
// tool error chunk.
func RewriteInput(fn func(c Call) (json.RawMessage, error)) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, c Call) tools.Stream {
			in, err := fn(c)
			if err != nil {
				return tools.Errorf("input rejected: %v", err)
			}
			c.Input = in
			return next(ctx, c)
		}
	}
}
