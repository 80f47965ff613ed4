// Package logging is a tool-call middleware that logs one structured
// slog record per call: tool, call id, attempt, duration, outcome and
// output size, with a short preview of the input and output. Secrets are
// redacted from everything it logs, and full outputs are never logged.
package logging

import (
	"context"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/tools"
)

// Defaults of Config.
const (
	DefaultPreviewChars = 200
	DefaultInputChars   = 500
)

// redactWindow is how far past a preview's end text is redacted before
// cutting, so that a secret straddling the cut is still recognized.
const redactWindow = 4096

// Config configures the logging middleware. The zero value logs every
// call at info level to slog.Default().
type Config struct {
	// Logger receives the records (default slog.Default()).
	Logger *slog.Logger `yaml:"-"`
	// Level of records of calls that ran (a tool error included): debug,
	// info (default), warn or error. Infrastructure failures are always
	// logged at error level.
	Level string `yaml:"level"`
	// PreviewChars bounds the output preview in characters (default 200;
	// negative: no preview).
	PreviewChars int `yaml:"preview_chars"`
	// InputChars bounds the logged input in characters (default 500;
	// negative: the input is not logged).
	InputChars int `yaml:"input_chars"`
	// Secrets are literal strings redacted wherever they appear.
	Secrets []string `yaml:"secrets"`
	// SecretEnv names environment variables whose values (read when the
	// middleware is built) are redacted.
	SecretEnv []string `yaml:"secret_env"`
	// Tools overrides settings per tool name.
	Tools map[string]ToolConfig `yaml:"tools"`
}

// ToolConfig overrides Config for one tool; zero fields inherit.
type ToolConfig struct {
	// Off disables logging of the tool's calls.
	Off          bool   `yaml:"off"`
	Level        string `yaml:"level"`
	PreviewChars int    `yaml:"preview_chars"`
	InputChars   int    `yaml:"input_chars"`
}

// settings are the resolved settings of one tool.
type settings struct {
	off          bool
	level        slog.Level
	previewChars int
	inputChars   int
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("level %q: %w", s, err)
	}
	return l, nil
}

// New returns the logging middleware.
func New(cfg Config) (middleware.Middleware, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	lvl, err := parseLevel(cfg.Level)
	if err != nil {
		return nil, fmt.Errorf("logging: %w", err)
	}
	def := settings{level: lvl, previewChars: cfg.PreviewChars, inputChars: cfg.InputChars}
	if def.previewChars == 0 {
		def.previewChars = DefaultPreviewChars
	}
	if def.inputChars == 0 {
		def.inputChars = DefaultInputChars
	}
	per := make(map[string]settings, len(cfg.Tools))
	for name, tc := range cfg.Tools {
		s := def
		s.off = tc.Off
		if tc.Level != "" {
			if s.level, err = parseLevel(tc.Level); err != nil {
				return nil, fmt.Errorf("logging: tools.%s: %w", name, err)
			}
		}
		if tc.PreviewChars != 0 {
			s.previewChars = tc.PreviewChars
		}
		if tc.InputChars != 0 {
			s.inputChars = tc.InputChars
		}
		per[name] = s
	}
	red := NewRedactor(cfg.Secrets, cfg.SecretEnv)

	return func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, c middleware.Call) tools.Stream {
			name := c.Name()
			s, ok := per[name]
			if !ok {
				s = def
			}
			if s.off {
				return next(ctx, c)
			}
			return func(yield func(tools.Chunk, error) bool) {
				start := time.Now()
				var (
					size    int
					isError bool
					failure error
					preview []byte
				)
				// Only the first previewChars+redactWindow bytes of output
				// are kept, for the preview.
				keep := max(s.previewChars, 0)*utf8.UTFMax + redactWindow
				defer func() {
					outcome := "success"
					level := s.level
					switch {
					case failure != nil:
						outcome, level = "failure", slog.LevelError
					case isError:
						outcome = "error"
					}
					attrs := []slog.Attr{
						slog.String("tool", name),
						slog.String("call_id", c.ID),
						slog.Int("attempt", int(c.Attempt)),
						slog.Duration("duration", time.Since(start)),
						slog.String("outcome", outcome),
						slog.Int("output_bytes", size),
					}
					if s.inputChars >= 0 {
						attrs = append(attrs, slog.String("input", clip(red, string(c.Input), s.inputChars, len(c.Input))))
					}
					if s.previewChars > 0 {
						attrs = append(attrs, slog.String("output_preview", clip(red, string(preview), s.previewChars, size)))
					}
					if failure != nil {
						attrs = append(attrs, slog.String("error", red.Redact(failure.Error())))
					}
					logger.LogAttrs(ctx, level, "tool call", attrs...)
				}()
				for ch, err := range next(ctx, c) {
					if err != nil {
						failure = err
					} else {
						size += len(ch.Text)
						for _, d := range ch.Data {
							size += len(d.Data)
						}
						isError = isError || ch.IsError
						if n := keep - len(preview); n > 0 {
							preview = append(preview, ch.Text[:min(n, len(ch.Text))]...)
						}
					}
					if !yield(ch, err) {
						return
					}
				}
			}
		}
	}, nil
}

// clip redacts s and cuts it to n characters, noting the full size
// (total bytes) when it cuts. Text far past the cut is dropped before redaction.
func clip(r *Redactor, s string, n, total int) string {
	if lim := n*utf8.UTFMax + redactWindow; len(s) > lim {
		s = s[:lim]
	}
	s = r.Redact(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + fmt.Sprintf("… (%d bytes in all)", total)
}
