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

	"github.com/wardenhq/warden/config"
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

// Config configures the logging middleware: the settings of the file's
// middleware.logging section (config.Logging: level, preview and input
// bounds, secrets, per-tool overrides) and the logger. The zero value
// logs every call at info level to slog.Default().
type Config struct {
	config.Logging
	// Logger receives the records (default slog.Default()).
	Logger *slog.Logger
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
	def, per, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	l := &callLogger{logger: logger, def: def, per: per, red: NewRedactor(cfg.Secrets, cfg.SecretEnv)}
	return l.wrap, nil
}

// resolve returns the default settings of cfg and those of each tool it
// overrides.
func resolve(cfg Config) (settings, map[string]settings, error) {
	lvl, err := parseLevel(cfg.Level)
	if err != nil {
		return settings{}, nil, fmt.Errorf("logging: %w", err)
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
		s, err := def.override(tc)
		if err != nil {
			return settings{}, nil, fmt.Errorf("logging: tools.%s: %w", name, err)
		}
		per[name] = s
	}
	return def, per, nil
}

// override returns s with tc's non-zero fields applied.
func (s settings) override(tc config.LoggingTool) (settings, error) {
	s.off = tc.Off
	if tc.Level != "" {
		var err error
		if s.level, err = parseLevel(tc.Level); err != nil {
			return s, err
		}
	}
	if tc.PreviewChars != 0 {
		s.previewChars = tc.PreviewChars
	}
	if tc.InputChars != 0 {
		s.inputChars = tc.InputChars
	}
	return s, nil
}

// callLogger is the built middleware: where records go, the resolved
// settings and the redactor.
type callLogger struct {
	logger *slog.Logger
	def    settings
	per    map[string]settings
	red    *Redactor
}

// wrap is the middleware: it passes next's chunks through unchanged and
// logs one record when the stream ends (or its consumer stops).
func (l *callLogger) wrap(next middleware.Handler) middleware.Handler {
	return func(ctx context.Context, c middleware.Call) tools.Stream {
		name := c.Name()
		s, ok := l.per[name]
		if !ok {
			s = l.def
		}
		if s.off {
			return next(ctx, c)
		}
		return func(yield func(tools.Chunk, error) bool) {
			rec := &callRecord{
				name:  name,
				s:     s,
				start: time.Now(),
				// Only the first previewChars+redactWindow bytes of output
				// are kept, for the preview.
				keep: max(s.previewChars, 0)*utf8.UTFMax + redactWindow,
			}
			defer l.log(ctx, c, rec)
			for ch, err := range next(ctx, c) {
				rec.observe(ch, err)
				if !yield(ch, err) {
					return
				}
			}
		}
	}
}

// callRecord is what one call's record is made of, gathered while its
// stream runs.
type callRecord struct {
	name    string
	s       settings
	start   time.Time
	keep    int // output bytes kept for the preview
	size    int
	isError bool
	failure error
	preview []byte
}

// observe accounts for one element of the stream.
func (rec *callRecord) observe(ch tools.Chunk, err error) {
	if err != nil {
		rec.failure = err
		return
	}
	rec.size += len(ch.Text)
	for _, d := range ch.Data {
		rec.size += len(d.Data)
	}
	rec.isError = rec.isError || ch.IsError
	if n := rec.keep - len(rec.preview); n > 0 {
		rec.preview = append(rec.preview, ch.Text[:min(n, len(ch.Text))]...)
	}
}

// log writes rec's record of call c.
func (l *callLogger) log(ctx context.Context, c middleware.Call, rec *callRecord) {
	s := rec.s
	outcome := "success"
	level := s.level
	switch {
	case rec.failure != nil:
		outcome, level = "failure", slog.LevelError
	case rec.isError:
		outcome = "error"
	}
	attrs := []slog.Attr{
		slog.String("tool", rec.name),
		slog.String("call_id", c.ID),
		slog.Int("attempt", int(c.Attempt)),
		slog.Duration("duration", time.Since(rec.start)),
		slog.String("outcome", outcome),
		slog.Int("output_bytes", rec.size),
	}
	if s.inputChars >= 0 {
		attrs = append(attrs, slog.String("input", clip(l.red, string(c.Input), s.inputChars, len(c.Input))))
	}
	if s.previewChars > 0 {
		attrs = append(attrs, slog.String("output_preview", clip(l.red, string(rec.preview), s.previewChars, rec.size)))
	}
	if rec.failure != nil {
		attrs = append(attrs, slog.String("error", l.red.Redact(rec.failure.Error())))
	}
	l.logger.LogAttrs(ctx, level, "tool call", attrs...)
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
