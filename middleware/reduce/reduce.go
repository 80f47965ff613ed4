// Package reduce is a tool-call middleware that shortens long outputs:
// it buffers a call's chunks and emits one chunk whose text keeps the
// head and the tail of the output, with a note saying how much of the
// middle was cut. Errors, data blocks and metadata are kept.
package reduce

import (
	"context"
	"fmt"
	"maps"

	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/tools"
)

// Default is the ByTool key whose settings apply to every tool without
// its own entry.
const Default = "*"

// DefaultHeadFraction is the share of MaxChars kept from the head when
// HeadFraction is unset.
const DefaultHeadFraction = 0.5

// Config configures the reduction of one tool's output. The zero value
// reduces nothing.
type Config struct {
	// MaxChars is the most characters (runes) of text a call's output
	// keeps, not counting the note; 0 keeps everything.
	MaxChars int `yaml:"max_chars"`
	// HeadFraction is the share of MaxChars taken from the head of the
	// output, the rest from its tail (default 0.5; 0 keeps only the
	// tail, 1 only the head).
	HeadFraction *float64 `yaml:"head_fraction"`
}

func (c Config) validate() error {
	if c.MaxChars < 0 {
		return fmt.Errorf("max_chars: %d must not be negative", c.MaxChars)
	}
	if f := c.HeadFraction; f != nil && (*f < 0 || *f > 1) {
		return fmt.Errorf("head_fraction: %g is not between 0 and 1", *f)
	}
	return nil
}

// New returns a middleware that reduces every tool's output per cfg.
func New(cfg Config) (middleware.Middleware, error) {
	return ByTool(map[string]Config{Default: cfg})
}

// ByTool returns a middleware that reduces each tool's output per its
// entry in cfg, or the Default entry; tools with neither pass through.
func ByTool(cfg map[string]Config) (middleware.Middleware, error) {
	for name, c := range cfg {
		if err := c.validate(); err != nil {
			return nil, fmt.Errorf("reduce: %s: %w", name, err)
		}
	}
	return func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, c middleware.Call) tools.Stream {
			s, ok := cfg[c.Name()]
			if !ok {
				s = cfg[Default]
			}
			if s.MaxChars == 0 {
				return next(ctx, c)
			}
			return reduce(next(ctx, c), s)
		}
	}, nil
}

// reduce buffers inner and yields one chunk with its reduced text. A Go
// error from inner is passed on at once.
func reduce(inner tools.Stream, s Config) tools.Stream {
	return func(yield func(tools.Chunk, error) bool) {
		var (
			out  tools.Chunk
			text []byte
			seen bool
		)
		for ch, err := range inner {
			if err != nil {
				yield(tools.Chunk{}, err)
				return
			}
			seen = true
			text = append(text, ch.Text...)
			out.IsError = out.IsError || ch.IsError
			out.Data = append(out.Data, ch.Data...)
			if len(ch.Metadata) > 0 {
				if out.Metadata == nil {
					out.Metadata = map[string]any{}
				}
				maps.Copy(out.Metadata, ch.Metadata)
			}
		}
		if !seen {
			return
		}
		head := DefaultHeadFraction
		if s.HeadFraction != nil {
			head = *s.HeadFraction
		}
		out.Text = Cut(string(text), s.MaxChars, head)
		yield(out, nil)
	}
}

// Cut keeps n characters (runes) of s, headFraction of them from its
// head and the rest from its tail, joined by a note of how many
// characters were cut. s is returned as is when it fits or n <= 0.
func Cut(s string, n int, headFraction float64) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	h := min(max(int(float64(n)*headFraction+0.5), 0), n)
	t := n - h
	cut := len(r) - n
	note := fmt.Sprintf("\n\n[... %d of %d characters cut ...]\n\n", cut, len(r))
	switch {
	case h == 0:
		note = note[2:]
	case t == 0:
		note = note[:len(note)-2]
	}
	return string(r[:h]) + note + string(r[len(r)-t:])
}
