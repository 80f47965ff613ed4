package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/permission"
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
	// grepMaxColumns replaces longer lines, as rg --max-columns.
	grepMaxColumns = 500
	// grepMaxFileBytes: the Go engine skips larger files.
	grepMaxFileBytes = 64 << 20
)

// vcsDirs are never searched.
var vcsDirs = []string{".git", ".svn", ".hg", ".bzr", ".jj", ".sl"}

// Grep searches file contents with ripgrep semantics. Its zero value
// picks the engine per call by probing the backend for rg; give it a
// ProbeCache (Builtins does) to probe once per backend. Its permission
// checks live in perm_grep.go.
type Grep struct {
	// Engine forces an engine; GrepAuto (the zero value) probes.
	Engine GrepEngine
	// Probes remembers whether each backend has rg; nil probes every call.
	Probes *ProbeCache
	// Timeout bounds one search (default GrepTimeout).
	Timeout time.Duration
}

// GrepInput is Grep's input. Flags use ripgrep's names.
type GrepInput struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"`
	Glob       string `json:"glob,omitempty"`
	Type       string `json:"type,omitempty"`
	OutputMode string `json:"output_mode,omitempty"`
	After      *int   `json:"-A,omitempty"`
	Before     *int   `json:"-B,omitempty"`
	Context    *int   `json:"-C,omitempty"`
	ContextAlt *int   `json:"context,omitempty"`
	LineNums   *bool  `json:"-n,omitempty"`
	LineNumsN  *bool  `json:"n,omitempty"`
	IgnoreCase bool   `json:"-i,omitempty"`
	IgnoreI    bool   `json:"i,omitempty"`
	CaseInsens bool   `json:"case_insensitive,omitempty"`
	Multiline  bool   `json:"multiline,omitempty"`
	HeadLimit  *int   `json:"head_limit,omitempty"`
	Offset     int    `json:"offset,omitempty"`
}

var grepSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The regular expression to search for (ripgrep syntax)."},
    "path": {"type": "string", "description": "File or directory to search (default: the workspace directory)."},
    "glob": {"type": "string", "description": "Glob filter for files, e.g. \"*.js\" or \"*.{ts,tsx}\"; several separated by spaces or commas; prefix ! to exclude."},
    "type": {"type": "string", "description": "File type to search (rg --type), e.g. go, py, js, rust."},
    "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "content shows matching lines, files_with_matches (default) lists files, count shows match counts per file."},
    "-A": {"type": "integer", "minimum": 0, "description": "Lines of context after each match (content mode)."},
    "-B": {"type": "integer", "minimum": 0, "description": "Lines of context before each match (content mode)."},
    "-C": {"type": "integer", "minimum": 0, "description": "Lines of context around each match (content mode)."},
    "context": {"type": "integer", "minimum": 0, "description": "Alias of -C."},
    "-n": {"type": "boolean", "description": "Show line numbers (content mode, default true)."},
    "n": {"type": "boolean", "description": "Alias of -n."},
    "-i": {"type": "boolean", "description": "Case-insensitive search."},
    "i": {"type": "boolean", "description": "Alias of -i."},
    "case_insensitive": {"type": "boolean", "description": "Alias of -i."},
    "multiline": {"type": "boolean", "description": "Let patterns span lines; . matches newlines."},
    "head_limit": {"type": "integer", "minimum": 0, "description": "Return at most this many output lines (default 250; 0 means no limit)."},
    "offset": {"type": "integer", "minimum": 0, "description": "Skip this many output lines first (default 0)."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)

// Info implements Tool.
func (Grep) Info() Info {
	return Info{
		Name: "Grep",
		Description: "Search file contents with a regular expression (ripgrep syntax). " +
			"output_mode files_with_matches (default) lists matching files, content shows matching lines " +
			"(with -A/-B/-C context and -n line numbers), count shows counts per file. " +
			"Filter files with glob or type. Results are paginated with head_limit (default 250) and offset.",
		InputSchema:     grepSchema,
		ReadOnly:        true,
		ConcurrencySafe: true,
	}
}

// grepQuery is a normalised Grep call, shared by both engines.
type grepQuery struct {
	pattern     string
	root        string // absolute, cleaned
	rootIsFile  bool
	globs       []string
	typ         string
	mode        string
	before      int
	after       int
	lineNumbers bool
	ignoreCase  bool
	multiline   bool
}

// Call implements Tool.
func (g Grep) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	var in GrepInput
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("Invalid input for Grep: %v", err)
	}
	q, limit, msg := in.query(env)
	if msg != "" {
		return Errorf("%s", msg)
	}
	fi, err := env.Backend.Stat(ctx, q.root)
	if errors.Is(err, backend.ErrNotExist) {
		return Errorf("Error: Path does not exist: %s", q.root)
	}
	if err != nil {
		return backendError(ctx, "Grep", q.root, err)
	}
	q.rootIsFile = !fi.IsDir

	timeout := g.Timeout
	if timeout <= 0 {
		timeout = GrepTimeout
	}
	engine, err := g.engine(ctx, env.Backend)
	if err != nil {
		return Fail(err)
	}
	var lines []string
	var errMsg string
	if engine == GrepRipgrep {
		lines, errMsg, err = grepRipgrep(ctx, env.Backend, q, timeout)
	} else {
		lines, errMsg, err = grepGo(ctx, env.Backend, q, timeout)
	}
	if err != nil {
		return Fail(err)
	}
	if errMsg != "" {
		return Errorf("%s", errMsg)
	}
	return Single(grepResult(in.Pattern, lines, limit, in.Offset, engine))
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

// query validates the input and normalises it; limit is the effective
// head limit (0: none).
// GrepMaxPattern bounds a Grep pattern's length in bytes.
const GrepMaxPattern = 16 << 10

func (in GrepInput) query(env *Env) (q grepQuery, limit int, msg string) {
	if strings.ContainsRune(in.Pattern, 0) || strings.ContainsRune(in.Path, 0) || strings.ContainsRune(in.Glob, 0) {
		return q, 0, "Error: pattern, path and glob must not contain NUL bytes"
	}
	if in.Pattern == "" {
		return q, 0, "Error: pattern is required"
	}
	// The pattern is passed as one process argument (Linux caps one at
	// 128 KiB); a regular expression this long is a mistake anyway.
	if len(in.Pattern) > GrepMaxPattern {
		return q, 0, fmt.Sprintf("Error: pattern is %d bytes; the limit is %d", len(in.Pattern), GrepMaxPattern)
	}
	q = grepQuery{
		pattern:     in.Pattern,
		root:        resolveDir(env, in.Path),
		typ:         in.Type,
		mode:        in.OutputMode,
		lineNumbers: true,
		ignoreCase:  in.IgnoreCase || in.IgnoreI || in.CaseInsens,
		multiline:   in.Multiline,
	}
	switch q.mode {
	case "":
		q.mode = "files_with_matches"
	case "content", "files_with_matches", "count":
	default:
		return q, 0, fmt.Sprintf("Error: output_mode must be content, files_with_matches or count, got %q", in.OutputMode)
	}
	for _, v := range []*int{in.After, in.Before, in.Context, in.ContextAlt, in.HeadLimit} {
		if v != nil && *v < 0 {
			return q, 0, "Error: -A, -B, -C, context and head_limit must not be negative"
		}
	}
	if in.Offset < 0 {
		return q, 0, "Error: offset must not be negative"
	}
	if in.LineNums != nil {
		q.lineNumbers = *in.LineNums
	} else if in.LineNumsN != nil {
		q.lineNumbers = *in.LineNumsN
	}
	if q.mode == "content" {
		switch {
		case in.ContextAlt != nil:
			q.before, q.after = *in.ContextAlt, *in.ContextAlt
		case in.Context != nil:
			q.before, q.after = *in.Context, *in.Context
		default:
			if in.Before != nil {
				q.before = *in.Before
			}
			if in.After != nil {
				q.after = *in.After
			}
		}
	}
	for _, tok := range strings.Fields(in.Glob) {
		if strings.Contains(tok, "{") && strings.Contains(tok, "}") {
			q.globs = append(q.globs, tok)
			continue
		}
		for _, g := range strings.Split(tok, ",") {
			if g != "" {
				q.globs = append(q.globs, g)
			}
		}
	}
	q.globs = append(q.globs, sensitiveExcludes(q.root)...)
	limit = GrepDefaultHeadLimit
	if in.HeadLimit != nil {
		limit = *in.HeadLimit
	}
	return q, limit, ""
}

// engine decides which engine to run on b.
func (g Grep) engine(ctx context.Context, b backend.Backend) (GrepEngine, error) {
	if g.Engine != GrepAuto {
		return g.Engine, nil
	}
	found, err := g.Probes.Find(ctx, b, "rg", func(ctx context.Context) (string, error) {
		res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"rg", "--version"}, Timeout: 10 * time.Second, MaxOutput: 4096})
		if err != nil {
			if ctx.Err() != nil {
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

func grepTimeoutMessage(timeout time.Duration) string {
	return fmt.Sprintf("Ripgrep search timed out after %d seconds. Try searching a more specific path or pattern.", int(timeout.Seconds()))
}

// grepRipgrep runs rg on the backend. Results are sorted by path so that
// offset pagination is stable across calls.
func grepRipgrep(ctx context.Context, b backend.Backend, q grepQuery, timeout time.Duration) ([]string, string, error) {
	argv := []string{"rg", "--hidden", "--no-require-git", "--no-ignore-parent", "--no-ignore-global", "--no-ignore-exclude"}
	for _, d := range vcsDirs {
		argv = append(argv, "--glob", "!"+d)
	}
	argv = append(argv, "--max-columns", strconv.Itoa(grepMaxColumns), "--sort", "path", "--no-config")
	if q.multiline {
		argv = append(argv, "-U", "--multiline-dotall")
	}
	if q.ignoreCase {
		argv = append(argv, "-i")
	}
	switch q.mode {
	case "files_with_matches":
		argv = append(argv, "-l")
	case "count":
		argv = append(argv, "-c")
	case "content":
		if q.lineNumbers {
			argv = append(argv, "-n")
		}
		if q.before > 0 {
			argv = append(argv, "-B", strconv.Itoa(q.before))
		}
		if q.after > 0 {
			argv = append(argv, "-A", strconv.Itoa(q.after))
		}
	}
	if q.typ != "" {
		argv = append(argv, "--type", q.typ)
	}
	for _, g := range q.globs {
		argv = append(argv, "--glob", g)
	}
	argv = append(argv, "-e", q.pattern, "--", q.root)
	res, err := b.Exec(ctx, backend.ExecRequest{Argv: argv, Timeout: timeout, MaxOutput: 32 << 20})
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", fmt.Errorf("grep: %w", err)
		}
		return nil, fmt.Sprintf("ripgrep error: %v", err), nil
	}
	if res.TimedOut {
		return nil, grepTimeoutMessage(timeout), nil
	}
	out := decode(res.Stdout)
	// rg exits 2 when some file could not be read; results still count.
	if res.ExitCode != 0 && res.ExitCode != 1 && (res.ExitCode != 2 || out == "") {
		return nil, fmt.Sprintf("ripgrep error (code %d): %s", res.ExitCode, strings.TrimSpace(decode(res.Stderr))), nil
	}
	return strings.Split(out, "\n"), "", nil
}

// grepGo is the Go engine: it walks the tree through the backend with
// ripgrep's filtering rules and searches each file with package regexp.
func grepGo(ctx context.Context, b backend.Backend, q grepQuery, timeout time.Duration) ([]string, string, error) {
	expr := "(?m)"
	if q.multiline {
		expr = "(?ms)"
	}
	if q.ignoreCase {
		expr = strings.Replace(expr, "(?", "(?i", 1)
	}
	re, err := regexp.Compile(expr + q.pattern)
	if err != nil {
		return nil, fmt.Sprintf("ripgrep error (code 2): regex parse error: %v", err), nil
	}
	var typeGlobs []string
	if q.typ != "" {
		var ok bool
		if typeGlobs, ok = grepTypes[q.typ]; !ok {
			return nil, fmt.Sprintf("ripgrep error (code 2): rg: unrecognized file type: %s", q.typ), nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	timedOut := func(err error) ([]string, string, error) {
		if errors.Is(err, context.DeadlineExceeded) && context.Cause(ctx) == context.DeadlineExceeded {
			return nil, grepTimeoutMessage(timeout), nil
		}
		return nil, "", fmt.Errorf("grep: %w", err)
	}

	var files []string
	if q.rootIsFile {
		files = []string{q.root}
	} else {
		f := newGrepFilter(q.globs, typeGlobs)
		err := walkFiltered(ctx, b, q.root, f, func(rel string) { files = append(files, path.Join(q.root, rel)) })
		if err != nil {
			if ctx.Err() != nil {
				return timedOut(ctx.Err())
			}
			return nil, fmt.Sprintf("ripgrep error (code 2): %v", err), nil
		}
	}

	// Search files in parallel, keep their order.
	results := make([][]string, len(files))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(8, len(files)) {
		wg.Go(func() {
			for i := range next {
				results[i] = grepFile(ctx, b, files[i], re, q)
			}
		})
	}
	for i := range files {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		return timedOut(ctx.Err())
	}
	var out []string
	for _, r := range results {
		if len(r) == 0 {
			continue
		}
		if q.mode == "content" && (q.before > 0 || q.after > 0) && len(out) > 0 {
			out = append(out, "--")
		}
		out = append(out, r...)
	}
	return out, "", nil
}

// grepFile searches one file and returns its output lines.
func grepFile(ctx context.Context, b backend.Backend, file string, re *regexp.Regexp, q grepQuery) []string {
	data, err := b.ReadFile(ctx, file)
	if err != nil || len(data) > grepMaxFileBytes {
		return nil
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil // binary, as ripgrep skips it
	}
	if !re.Match(data) {
		return nil
	}
	// Line starts; a final newline does not start another line.
	starts := []int{0}
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	lineOf := func(off int) int {
		i, found := slices.BinarySearch(starts, off)
		if found {
			return i
		}
		return i - 1
	}
	lineText := func(i int) []byte {
		end := len(data)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		return bytes.TrimSuffix(data[starts[i]:end], []byte("\n"))
	}
	// matched lines, and for count mode the number of counted matches.
	var matched []int
	count := 0
	if q.multiline {
		lastEnd := -1
		for _, m := range re.FindAllIndex(data, -1) {
			first := lineOf(m[0])
			endOff := m[1]
			if endOff > m[0] {
				endOff--
			}
			last := lineOf(endOff)
			if first > lastEnd {
				count++
			}
			for l := max(first, lastEnd+1); l <= last; l++ {
				matched = append(matched, l)
			}
			lastEnd = max(lastEnd, last)
		}
	} else {
		for i := range starts {
			if re.Match(lineText(i)) {
				matched = append(matched, i)
			}
		}
		count = len(matched)
	}
	if len(matched) == 0 {
		return nil
	}
	prefix := ""
	if !q.rootIsFile {
		prefix = file
	}
	switch q.mode {
	case "files_with_matches":
		return []string{file}
	case "count":
		if prefix == "" {
			return []string{strconv.Itoa(count)}
		}
		return []string{prefix + ":" + strconv.Itoa(count)}
	}
	isMatch := make(map[int]bool, len(matched))
	for _, l := range matched {
		isMatch[l] = true
	}
	show := make([]bool, len(starts))
	for _, m := range matched {
		for l := max(0, m-q.before); l <= min(len(starts)-1, m+q.after); l++ {
			show[l] = true
		}
	}
	var out []string
	printed := -1
	for l, ok := range show {
		if !ok {
			continue
		}
		if printed >= 0 && l > printed+1 && (q.before > 0 || q.after > 0) {
			out = append(out, "--")
		}
		sep := "-"
		if isMatch[l] {
			sep = ":"
		}
		text := string(lineText(l))
		if len(text) > grepMaxColumns {
			if isMatch[l] {
				text = "[Omitted long matching line]"
			} else {
				text = "[Omitted long context line]"
			}
		}
		var b strings.Builder
		if prefix != "" {
			b.WriteString(prefix + sep)
		}
		if q.lineNumbers {
			b.WriteString(strconv.Itoa(l+1) + sep)
		}
		b.WriteString(text)
		out = append(out, b.String())
		printed = l
	}
	return out
}

// grepFilter applies ripgrep's file selection: --glob overrides first,
// then .gitignore/.ignore/.rgignore files found in the tree, then --type.
type grepFilter struct {
	overrides []ignoreRule // from --glob, last match wins
	whitelist bool         // some --glob is positive
	typeGlobs []string
}

// ignoreRule is one gitignore-style pattern.
type ignoreRule struct {
	base    string // directory (relative to the root) the rule applies below
	pattern string // doublestar pattern relative to base
	negate  bool   // ! rule: re-include (ignore files) or exclude (globs)
	dirOnly bool
}

func newGrepFilter(globs, typeGlobs []string) *grepFilter {
	f := &grepFilter{typeGlobs: typeGlobs}
	for _, d := range vcsDirs {
		f.overrides = append(f.overrides, parseIgnoreRule("", "!"+d))
	}
	for _, g := range globs {
		r := parseIgnoreRule("", g)
		if !r.negate {
			f.whitelist = true
		}
		f.overrides = append(f.overrides, r)
	}
	return f
}

// parseIgnoreRule parses one gitignore line relative to base; it returns
// a zero rule for blanks and comments.
func parseIgnoreRule(base, line string) ignoreRule {
	line = strings.TrimRight(line, " \t\r")
	if line == "" || strings.HasPrefix(line, "#") {
		return ignoreRule{}
	}
	r := ignoreRule{base: base}
	if strings.HasPrefix(line, "!") {
		r.negate, line = true, line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if line == "" {
		return ignoreRule{}
	}
	if strings.Contains(line, "/") {
		line = strings.TrimPrefix(line, "/")
	} else {
		line = "**/" + line
	}
	r.pattern = line
	return r
}

// match reports whether the rule matches rel (relative to the root).
func (r ignoreRule) match(rel string, isDir bool) bool {
	if r.pattern == "" || (r.dirOnly && !isDir) {
		return false
	}
	if r.base != "" {
		if !strings.HasPrefix(rel, r.base+"/") {
			return false
		}
		rel = rel[len(r.base)+1:]
	}
	return doublestar.MatchUnvalidated(r.pattern, rel)
}

// walkFiltered walks root and calls found for every file ripgrep would
// search, in ripgrep --sort path order.
func walkFiltered(ctx context.Context, b backend.Backend, root string, f *grepFilter, found func(rel string)) error {
	var walk func(dir, rel string, rules []ignoreRule) error
	walk = func(dir, rel string, rules []ignoreRule) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := b.ListDir(ctx, dir)
		if err != nil {
			if rel == "" || ctx.Err() != nil {
				return err
			}
			return nil
		}
		// Ignore files of this directory, lowest precedence first.
		for _, name := range []string{".gitignore", ".ignore", ".rgignore"} {
			if !slices.ContainsFunc(entries, func(e backend.FileInfo) bool { return e.Name == name && !e.IsDir }) {
				continue
			}
			data, err := b.ReadFile(ctx, path.Join(dir, name))
			if err != nil {
				continue
			}
			rules = slices.Clip(rules)
			for _, line := range strings.Split(string(data), "\n") {
				if r := parseIgnoreRule(rel, line); r.pattern != "" {
					rules = append(rules, r)
				}
			}
		}
		for _, e := range entries {
			r := e.Name
			if rel != "" {
				r = rel + "/" + e.Name
			}
			if !f.include(r, e.IsDir, rules) {
				continue
			}
			if e.IsDir {
				if err := walk(path.Join(dir, e.Name), r, rules); err != nil {
					return err
				}
			} else {
				found(r)
			}
		}
		return nil
	}
	return walk(root, "", nil)
}

// include decides whether an entry is searched (files) or descended
// into (directories).
func (f *grepFilter) include(rel string, isDir bool, rules []ignoreRule) bool {
	for i := len(f.overrides) - 1; i >= 0; i-- {
		if o := f.overrides[i]; o.match(rel, isDir) {
			return !o.negate
		}
	}
	if f.whitelist && !isDir {
		return false
	}
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i].match(rel, isDir) {
			if !rules[i].negate {
				return false
			}
			break
		}
	}
	if isDir || len(f.typeGlobs) == 0 {
		return true
	}
	base := path.Base(rel)
	for _, g := range f.typeGlobs {
		if doublestar.MatchUnvalidated(g, base) {
			return true
		}
	}
	return false
}

// grepTypes is the subset of ripgrep's file types the Go engine knows.
var grepTypes = map[string][]string{
	"c":          {"*.[chH]", "*.[chH].in", "*.cats"},
	"cpp":        {"*.[ChH]", "*.cc", "*.[ch]pp", "*.[ch]xx", "*.hh", "*.inl", "*.[ChH].in", "*.cc.in", "*.[ch]pp.in", "*.[ch]xx.in", "*.hh.in"},
	"cs":         {"*.cs"},
	"css":        {"*.css", "*.scss"},
	"docker":     {"*Dockerfile*"},
	"go":         {"*.go"},
	"h":          {"*.h", "*.hh", "*.hpp"},
	"html":       {"*.htm", "*.html", "*.ejs"},
	"java":       {"*.java", "*.jsp", "*.jspx", "*.properties"},
	"js":         {"*.js", "*.jsx", "*.vue", "*.cjs", "*.mjs"},
	"json":       {"*.json", "composer.lock"},
	"kotlin":     {"*.kt", "*.kts"},
	"lua":        {"*.lua"},
	"make":       {"[Gg][Nn][Uu]makefile", "[Mm]akefile", "[Gg][Nn][Uu]makefile.am", "[Mm]akefile.am", "[Gg][Nn][Uu]makefile.in", "[Mm]akefile.in", "*.mk", "*.mak"},
	"markdown":   {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"md":         {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"php":        {"*.php", "*.php3", "*.php4", "*.php5", "*.phtml"},
	"proto":      {"*.proto"},
	"py":         {"*.py", "*.pyi"},
	"python":     {"*.py", "*.pyi"},
	"rb":         {"Gemfile", "*.gemspec", ".irbrc", "Rakefile", "*.rb"},
	"ruby":       {"Gemfile", "*.gemspec", ".irbrc", "Rakefile", "*.rb"},
	"rust":       {"*.rs"},
	"sh":         {"*.bash", "*.bashrc", ".bash_login", ".bash_logout", ".bash_profile", "*.zsh", ".zshenv", ".zlogin", ".zlogout", ".zprofile", ".zshrc", "*.sh", ".profile", ".kshrc", ".cshrc", "*.csh", ".login", ".logout", "*.ksh", "*.tcsh"},
	"sql":        {"*.sql", "*.psql"},
	"swift":      {"*.swift"},
	"toml":       {"*.toml", "Cargo.lock"},
	"ts":         {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"typescript": {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"txt":        {"*.txt"},
	"xml":        {"*.xml", "*.xml.dist", "*.dtd", "*.xsl", "*.xslt", "*.xsd", "*.xjb", "*.rng", "*.sch", "*.xhtml"},
	"yaml":       {"*.yaml", "*.yml"},
}
