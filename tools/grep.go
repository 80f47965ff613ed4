package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools/internal/grep"
)

// GrepEngine selects how Grep searches.
type GrepEngine string

// The grep engines. GrepAuto uses ripgrep when the backend has it and the
// Go implementation otherwise; both produce the same output.
const (
	GrepAuto    GrepEngine = ""
	GrepRipgrep GrepEngine = "rg"
	GrepGo      GrepEngine = "go"
)

// Grep limits.
const (
	// GrepDefaultHeadLimit is the number of output lines returned when
	// head_limit is absent.
	GrepDefaultHeadLimit = 250
	// GrepTimeout bounds one search.
	GrepTimeout = 30 * time.Second
	// GrepMaxPattern bounds a Grep pattern's length in bytes.
	GrepMaxPattern = 16 << 10
)

// Grep searches file contents with ripgrep semantics. Its zero value
// picks the engine per call by probing the backend for rg; give it a
// ProbeCache (Builtins does) to probe once per backend. Its permission
// checks apply the path rules to the searched file or directory.
type Grep struct {
	// Engine forces an engine; GrepAuto (the zero value) probes.
	Engine GrepEngine
	// Probes remembers whether each backend has rg; nil probes every call.
	Probes *ProbeCache
	// Timeout bounds one search (default GrepTimeout).
	Timeout time.Duration
	// MaxEntries bounds the entries the Go engine's walk looks at
	// (default grep.DefaultMaxEntries, as Glob's).
	MaxEntries int
}

// GrepInput is Grep's input. Flags use ripgrep's names.
type GrepInput struct {
	Pattern    string `json:"pattern" jsonschema_description:"The regular expression to search for (ripgrep syntax)."`
	Path       string `json:"path,omitempty" jsonschema_description:"File or directory to search (default: the workspace directory)."`
	Glob       string `json:"glob,omitempty" jsonschema_description:"Glob filter for files, e.g. \"*.js\" or \"*.{ts,tsx}\"; several separated by spaces or commas; prefix ! to exclude."`
	Type       string `json:"type,omitempty" jsonschema_description:"File type to search (rg --type), e.g. go, py, js, rust."`
	OutputMode string `json:"output_mode,omitempty" jsonschema:"enum=content,enum=files_with_matches,enum=count" jsonschema_description:"content shows matching lines, files_with_matches (default) lists files, count shows match counts per file."`
	After      *int   `json:"-A,omitempty" jsonschema:"minimum=0" jsonschema_description:"Lines of context after each match (content mode)."`
	Before     *int   `json:"-B,omitempty" jsonschema:"minimum=0" jsonschema_description:"Lines of context before each match (content mode)."`
	Context    *int   `json:"-C,omitempty" jsonschema:"minimum=0" jsonschema_description:"Lines of context around each match (content mode)."`
	ContextAlt *int   `json:"context,omitempty" jsonschema:"minimum=0" jsonschema_description:"Alias of -C."`
	LineNums   *bool  `json:"-n,omitempty" jsonschema_description:"Show line numbers (content mode, default true)."`
	LineNumsN  *bool  `json:"n,omitempty" jsonschema_description:"Alias of -n."`
	IgnoreCase bool   `json:"-i,omitempty" jsonschema_description:"Case-insensitive search."`
	IgnoreI    bool   `json:"i,omitempty" jsonschema_description:"Alias of -i."`
	CaseInsens bool   `json:"case_insensitive,omitempty" jsonschema_description:"Alias of -i."`
	Multiline  bool   `json:"multiline,omitempty" jsonschema_description:"Let patterns span lines; . matches newlines."`
	HeadLimit  *int   `json:"head_limit,omitempty" jsonschema:"minimum=0" jsonschema_description:"Return at most this many output lines (default 250; 0 means no limit)."`
	Offset     int    `json:"offset,omitempty" jsonschema:"minimum=0" jsonschema_description:"Skip this many output lines first (default 0)."`
}

func (in GrepInput) check() string {
	if strings.ContainsRune(in.Pattern, 0) || strings.ContainsRune(in.Path, 0) || strings.ContainsRune(in.Glob, 0) {
		return "Error: pattern, path and glob must not contain NUL bytes"
	}
	if in.Pattern == "" {
		return "Error: pattern is required"
	}
	// The pattern is passed as one process argument (Linux caps one at
	// 128 KiB); a regular expression this long is a mistake anyway.
	if len(in.Pattern) > GrepMaxPattern {
		return fmt.Sprintf("Error: pattern is %d bytes; the limit is %d", len(in.Pattern), GrepMaxPattern)
	}
	switch in.OutputMode {
	case "", "content", "files_with_matches", "count":
	default:
		return fmt.Sprintf("Error: output_mode must be content, files_with_matches or count, got %q", in.OutputMode)
	}
	for _, v := range []*int{in.After, in.Before, in.Context, in.ContextAlt, in.HeadLimit} {
		if v != nil && *v < 0 {
			return "Error: -A, -B, -C, context and head_limit must not be negative"
		}
	}
	if in.Offset < 0 {
		return "Error: offset must not be negative"
	}
	return ""
}

// grepSchema is the input schema, derived from the input struct once.
var grepSchema = builtinSchema[GrepInput]()

// Info implements Tool.
func (Grep) Info() Info {
	return Info{
		Name: "Grep",
		Description: "Search file contents with a regular expression (ripgrep syntax). " +
			"output_mode files_with_matches (default) lists matching files, content shows matching lines " +
			"(with -A/-B/-C context and -n line numbers), count shows counts per file. " +
			"Filter files with glob or type. Results are paginated with head_limit (default 250) and offset.",
		InputSchema:     grepSchema(),
		ReadOnly:        true,
		ConcurrencySafe: true,
	}
}

// CheckInput implements InputChecker.
func (Grep) CheckInput(_ context.Context, _ *Env, input json.RawMessage) error {
	return checkInput[GrepInput]("Grep", input)
}

// CheckPermissions implements PermissionChecker: the path rules on the
// searched file or directory.
func (Grep) CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	in, err := decodeInput[GrepInput]("Grep", input)
	if err != nil {
		return permission.Decision{}, err
	}
	p := in.Path
	if p == "" {
		p = "."
	}
	acc := paths(env, pc).ReadAccess(p, false)
	acc.Recursive = true // Grep searches everything below a directory
	return paths(env, pc).Check("Grep", []permission.Access{acc})
}

// MatchRule implements RuleMatcher: a glob on path (default: the
// workdir).
func (Grep) MatchRule(_ context.Context, env *Env, content string, input json.RawMessage) (bool, error) {
	in, err := decodeInput[GrepInput]("Grep", input)
	if err != nil {
		return false, err
	}
	p := in.Path
	if p == "" {
		p = "."
	}
	return matchPath(env, content, absPath(env, p))
}

// GenerateSuggestions implements Suggester: the searched directory.
func (Grep) GenerateSuggestions(_ context.Context, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	in, err := decodeInput[GrepInput]("Grep", input)
	if err != nil {
		return nil, err
	}
	return searchSuggestion("Grep", env, in.Path), nil
}

// Call implements Tool.
func (g Grep) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	in, err := parseInput[GrepInput]("Grep", input)
	if err != nil {
		return invalid(err)
	}
	q, limit := in.query(env)
	q.MaxEntries = g.MaxEntries
	fi, err := env.Backend.Stat(ctx, q.Root)
	if errors.Is(err, backend.ErrNotExist) {
		return Errorf("Error: Path does not exist: %s", q.Root)
	}
	if err != nil {
		return backendError(ctx, "Grep", q.Root, err)
	}
	q.RootIsFile = !fi.IsDir

	timeout := g.Timeout
	if timeout <= 0 {
		timeout = GrepTimeout
	}
	engine, err := g.engine(ctx, env.Backend)
	if err != nil {
		return Fail(err)
	}
	var lines, skipped []string
	var errMsg string
	if engine == GrepRipgrep {
		lines, errMsg, err = grep.Ripgrep(ctx, env.Backend, q, timeout)
	} else {
		lines, skipped, errMsg, err = grep.Go(ctx, env.Backend, q, timeout)
	}
	if err != nil {
		return Fail(err)
	}
	if errMsg != "" {
		return Errorf("%s", errMsg)
	}
	c := grepResult(in.Pattern, lines, limit, in.Offset, engine)
	if len(skipped) > 0 {
		c.Text += skippedNote(skipped)
		c.Metadata["skipped"] = skipped
	}
	return Single(c)
}

// skippedNote tells the model which files the Go engine did not search
// (FIFOs, devices, sockets, files over its size limit): at most ten by
// name.
func skippedNote(skipped []string) string {
	var stopped string
	skipped = slices.DeleteFunc(slices.Clone(skipped), func(s string) bool {
		if rest, ok := strings.CutPrefix(s, grep.Stopped); ok {
			stopped = "\n\n[Grep " + rest + "]"
			return true
		}
		return false
	})
	if len(skipped) == 0 {
		return stopped
	}
	shown := skipped[:min(10, len(skipped))]
	note := fmt.Sprintf("\n\n[Not searched: %d file(s) that are not regular files or are too large: %s", len(skipped), strings.Join(shown, ", "))
	if len(skipped) > len(shown) {
		note += ", …"
	}
	return note + "]" + stopped
}

// sensitiveExcludes are the globs that keep a search of a directory out of
// sensitive files (private keys, credentials, .env files: the default
// sensitive paths that can sit anywhere in a tree). They come last, so
// they win over the caller's globs. A search whose path itself is
// sensitive gets none: the permission check asked a human for it.
func sensitiveExcludes(root string) []string {
	var out []string
	for _, p := range permission.DefaultSensitivePaths() {
		if doublestar.MatchUnvalidated(p, root) {
			return nil
		}
		if strings.HasPrefix(p, "**/") {
			out = append(out, "!"+p)
		}
	}
	return out
}

// query normalises a checked input; limit is the effective head limit
// (0: none).
func (in GrepInput) query(env *Env) (q grep.Query, limit int) {
	q = grep.Query{
		Pattern:     in.Pattern,
		Root:        resolveDir(env, in.Path),
		Type:        in.Type,
		Mode:        in.OutputMode,
		LineNumbers: true,
		IgnoreCase:  in.IgnoreCase || in.IgnoreI || in.CaseInsens,
		Multiline:   in.Multiline,
	}
	if q.Mode == "" {
		q.Mode = "files_with_matches"
	}
	if in.LineNums != nil {
		q.LineNumbers = *in.LineNums
	} else if in.LineNumsN != nil {
		q.LineNumbers = *in.LineNumsN
	}
	if q.Mode == "content" {
		switch {
		case in.ContextAlt != nil:
			q.Before, q.After = *in.ContextAlt, *in.ContextAlt
		case in.Context != nil:
			q.Before, q.After = *in.Context, *in.Context
		default:
			if in.Before != nil {
				q.Before = *in.Before
			}
			if in.After != nil {
				q.After = *in.After
			}
		}
	}
	for _, tok := range strings.Fields(in.Glob) {
		if strings.Contains(tok, "{") && strings.Contains(tok, "}") {
			q.Globs = append(q.Globs, tok)
			continue
		}
		for _, g := range strings.Split(tok, ",") {
			if g != "" {
				q.Globs = append(q.Globs, g)
			}
		}
	}
	q.Globs = append(q.Globs, sensitiveExcludes(q.Root)...)
	limit = GrepDefaultHeadLimit
	if in.HeadLimit != nil {
		limit = *in.HeadLimit
	}
	return q, limit
}

// engine decides which engine to run on b.
func (g Grep) engine(ctx context.Context, b backend.Backend) (GrepEngine, error) {
	if g.Engine != GrepAuto {
		return g.Engine, nil
	}
	found, err := g.Probes.Find(ctx, b, "rg", func(ctx context.Context) (string, error) {
		res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"rg", "--version"}, Timeout: 10 * time.Second, MaxOutput: 4096})
		if err != nil {
			// Not an answer to remember: the call fails and is retried.
			if ctx.Err() != nil || errors.Is(err, backend.ErrUnavailable) {
				return "", err
			}
			return "", nil
		}
		if res.ExitCode == 0 && bytes.HasPrefix(res.Stdout, []byte("ripgrep")) {
			return "rg", nil
		}
		return "", nil
	})
	if err != nil {
		return "", err
	}
	if found == "rg" {
		return GrepRipgrep, nil
	}
	return GrepGo, nil
}

// grepResult formats the engine's output lines: pagination and the
// messages both engines share.
func grepResult(pattern string, raw []string, limit, offset int, engine GrepEngine) Chunk {
	items := make([]string, 0, len(raw))
	for _, l := range raw {
		l = strings.TrimRight(l, "\r")
		if l != "" {
			items = append(items, l)
		}
	}
	meta := map[string]any{"engine": string(engine), "total": len(items)}
	if len(items) == 0 {
		return Chunk{Text: "No matches found for pattern: " + pattern, Metadata: meta}
	}
	page := items[min(offset, len(items)):]
	truncated := false
	if limit > 0 && len(page) > limit {
		page, truncated = page[:limit], true
	}
	text := strings.Join(page, "\n")
	if truncated {
		text += fmt.Sprintf("\n\n[Showing results with pagination = limit: %d", limit)
		if offset > 0 {
			text += fmt.Sprintf(", offset: %d", offset)
		}
		text += "]"
	}
	return Chunk{Text: text, Metadata: meta}
}
