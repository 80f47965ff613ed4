package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/tools"
)

// trace returns a middleware that prints when the call enters and leaves
// its layer.
func trace(name string) middleware.Middleware {
	return func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, c middleware.Call) tools.Stream {
			fmt.Println(name, "before")
			inner := next(ctx, c)
			return func(yield func(tools.Chunk, error) bool) {
				for ch, err := range inner {
					if !yield(ch, err) {
						return
					}
				}
				fmt.Println(name, "after")
			}
		}
	}
}

// ExampleChain shows the onion order: the first middleware is the
// outermost, so it runs its pre-logic first and its post-logic last.
// MapChunks rewrites every chunk the inner layers yield.
func ExampleChain() {
	echo, err := tools.Func("Echo", "Echo the text.",
		func(_ context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			fmt.Println("tool runs")
			return in.Text, nil
		})
	if err != nil {
		panic(err)
	}
	upper := middleware.MapChunks(func(_ middleware.Call, ch tools.Chunk) tools.Chunk {
		ch.Text = strings.ToUpper(ch.Text)
		return ch
	})
	h := middleware.Chain(trace("outer"), trace("inner"), upper)(middleware.Terminal)

	call := middleware.Call{ID: "call_1", Tool: echo, Input: json.RawMessage(`{"text":"hello"}`), Env: &tools.Env{}}
	res, err := tools.Collect(h(context.Background(), call))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content)
	// Output:
	// outer before
	// inner before
	// tool runs
	// inner after
	// outer after
	// HELLO
}
