package middleware

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wardenhq/warden/tools"
)

// echo is a tool that returns its input's "text" field.
type echo struct{}

func (echo) Info() tools.Info { return tools.Info{Name: "echo"} }

func (echo) Call(_ context.Context, _ *tools.Env, in json.RawMessage) tools.Stream {
	var v struct{ Text string }
	_ = json.Unmarshal(in, &v)
	return tools.Single(tools.Chunk{Text: v.Text})
}

// trace records pre and post events for a named layer.
func trace(name string, log *[]string) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, c Call) tools.Stream {
			*log = append(*log, "pre "+name)
			inner := next(ctx, c)
			return func(yield func(tools.Chunk, error) bool) {
				for ch, err := range inner {
					ch.Text = name + "(" + ch.Text + ")"
					if !yield(ch, err) {
						return
					}
				}
				*log = append(*log, "post "+name)
			}
		}
	}
}

func TestChainOrderFirstIsOutermost(t *testing.T) {
	t.Parallel()
	var log []string
	h := Chain(trace("a", &log), trace("b", &log), trace("c", &log))(Terminal)
	res, err := tools.Collect(h(context.Background(), Call{Tool: echo{}, Input: json.RawMessage(`{"text":"x"}`)}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "a(b(c(x)))" {
		t.Errorf("content = %q, want a(b(c(x)))", res.Content)
	}
	want := "pre a,pre b,pre c,post c,post b,post a"
	if got := strings.Join(log, ","); got != want {
		t.Errorf("order = %s, want %s", got, want)
	}
}

func TestRewriteInputAndMapChunks(t *testing.T) {
	t.Parallel()
	upper := MapChunks(func(_ Call, ch tools.Chunk) tools.Chunk {
		ch.Text = strings.ToUpper(ch.Text)
		return ch
	})
	rewrite := RewriteInput(func(Call) (json.RawMessage, error) {
		return json.RawMessage(`{"text":"rewritten"}`), nil
	})
	h := Chain(upper, rewrite)(Terminal)
	res, err := tools.Collect(h(context.Background(), Call{Tool: echo{}, Input: json.RawMessage(`{"text":"orig"}`)}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "REWRITTEN" {
		t.Errorf("content = %q, want REWRITTEN", res.Content)
	}
}

func TestRewriteInputErrorBecomesToolError(t *testing.T) {
	t.Parallel()
	h := Chain(RewriteInput(func(Call) (json.RawMessage, error) {
		return nil, context.Canceled
	}))(Terminal)
	res, err := tools.Collect(h(context.Background(), Call{Tool: echo{}, Input: json.RawMessage(`{}`)}))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content, "input rejected") {
		t.Errorf("got %+v, want an error result", res)
	}
}
