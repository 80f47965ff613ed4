package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
)

// GlobDefaultMaxResults caps the number of paths Glob returns.
const GlobDefaultMaxResults = 100

// Glob's bounds on its walk, like a call's processes have limits: it
// stops after GlobDefaultMaxEntries entries looked at or GlobTimeout,
// and says so, with the matches found so far (it keeps only the
// MaxResults most recent, so its memory does not grow with the tree).
const (
	GlobDefaultMaxEntries = 100_000
	GlobTimeout           = 30 * time.Second
)

// Glob finds files by a doublestar pattern, walking the tree through the
// backend's ListDir so it works on every backend. Its zero value is
// ready to use. Its permission checks apply the path rules to the
// searched directory and the pattern.
type Glob struct {
	// MaxResults caps the result (default GlobDefaultMaxResults).
	MaxResults int
	// MaxEntries bounds the entries one call looks at (default
	// GlobDefaultMaxEntries); Timeout its time (default GlobTimeout).
	MaxEntries int
	Timeout    time.Duration
}

// GlobInput is Glob's input.
type GlobInput struct {
	Pattern string `json:"pattern" jsonschema_description:"The glob pattern to match files against, e.g. \"**/*.go\" or \"src/**/*.{ts,tsx}\"."`
	// Path is the directory to search; relative paths are taken from the
	// workspace directory, which is also the default.
	Path string `json:"path,omitempty" jsonschema_description:"The directory to search in (default: the workspace directory)."`
}

func (in GlobInput) check() string {
	if strings.ContainsRune(in.Pattern, 0) || strings.ContainsRune(in.Path, 0) {
		return "Error: pattern and path must not contain NUL bytes"
	}
	if in.Pattern == "" {
		return "Error: pattern is required"
	}
	return ""
}

// globSchema is the input schema, derived from the input struct once.
var globSchema = builtinSchema[GlobInput]()

// Info implements Tool.
func (Glob) Info() Info {
	return Info{
		Name: "Glob",
		Description: "Find files by glob pattern (supports ** and {a,b}). Returns matching file paths, " +
			"most recently modified first, at most 100.",
		InputSchema:     globSchema(),
		ReadOnly:        true,
		ConcurrencySafe: true,
	}
}

// CheckInput implements InputChecker.
func (Glob) CheckInput(_ context.Context, _ *Env, input json.RawMessage) error {
	return checkInput[GlobInput]("Glob", input)
}

// CheckPermissions implements PermissionChecker: the path rules on the
// searched directory and on the pattern resolved against it.
func (Glob) CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	in, err := decodeInput[GlobInput]("Glob", input)
	if err != nil {
		return permission.Decision{}, err
	}
	base := in.Path
	if base == "" {
		base = "."
	}
	accs := []permission.Access{paths(env, pc).ReadAccess(base, false)}
	if in.Pattern != "" {
		pat := in.Pattern
		if !path.IsAbs(pat) {
			pat = path.Join(absPath(env, base), pat)
		}
		// Glob lists names, never contents: the pattern is checked as a
		// path (outside the working directories asks), not probed for
		// the sensitive files it could name.
		accs = append(accs, paths(env, pc).ReadAccess(pat, false))
	}
	return paths(env, pc).Check("Glob", accs)
}

// MatchRule implements RuleMatcher: a glob on path (default: the
// workdir), then on pattern resolved against that path.
func (Glob) MatchRule(_ context.Context, env *Env, content string, input json.RawMessage) (bool, error) {
	in, err := decodeInput[GlobInput]("Glob", input)
	if err != nil {
		return false, err
	}
	base := absPath(env, in.Path)
	if base == "" {
		base = absPath(env, ".")
	}
	if in.Path != "" {
		if ok, err := matchPath(env, content, base); ok || err != nil {
			return ok, err
		}
	}
	if in.Pattern == "" {
		return false, nil
	}
	pat := in.Pattern
	if !path.IsAbs(pat) && path.IsAbs(base) {
		pat = path.Join(base, pat)
	}
	return matchPath(env, content, pat)
}

// GenerateSuggestions implements Suggester. A Glob asks only when the
// directory it searches, or its pattern's base, is outside the working
// directories; the path rules then consult Read rules, so the suggestion
// is Read(DIR/**) for that directory: a rule that allows the call and no
// wider. Inside, the tool-level rule.
func (Glob) GenerateSuggestions(_ context.Context, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	in, err := decodeInput[GlobInput]("Glob", input)
	if err != nil {
		return nil, err
	}
	base := absPath(env, in.Path)
	if in.Path == "" {
		base = absPath(env, ".")
	}
	dirs := []string{base}
	if in.Pattern != "" {
		pat := in.Pattern
		if !path.IsAbs(pat) {
			pat = path.Join(base, pat)
		}
		dirs = append(dirs, shell.GlobBase(path.Clean(pat)))
	}
	var pc *permission.Context
	if env != nil {
		pc = env.Permission
	}
	working := workingDirs(env, pc)
	var out []permission.Rule
	for _, d := range dirs {
		if !path.IsAbs(d) || insideDirs(d, working) || d == "/" {
			continue
		}
		r := dirSuggestion("Read", d)[0]
		if !slices.ContainsFunc(out, func(x permission.Rule) bool { return x.Content == r.Content }) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return searchSuggestion("Glob", env, in.Path), nil
	}
	return out, nil
}

// Call implements Tool.
func (g Glob) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	in, err := parseInput[GlobInput]("Glob", input)
	if err != nil {
		return invalid(err)
	}
	base := resolveDir(env, in.Path)
	pattern := in.Pattern
	if path.IsAbs(pattern) {
		// An absolute pattern carries its own base directory.
		var rest string
		base, rest = doublestar.SplitPattern(path.Clean(pattern))
		pattern = rest
	}
	if !doublestar.ValidatePattern(pattern) {
		return Errorf("Error: invalid glob pattern: %s", in.Pattern)
	}
	fi, err := env.Backend.Stat(ctx, base)
	if err != nil && !errors.Is(err, backend.ErrNotExist) {
		return backendError(ctx, "Glob", base, err)
	}
	if err != nil || !fi.IsDir {
		return Errorf("Directory not found: %s", base)
	}
	limit := g.MaxResults
	if limit <= 0 {
		limit = GlobDefaultMaxResults
	}
	b := globBounds{entries: cmp.Or(g.MaxEntries, GlobDefaultMaxEntries), timeout: cmp.Or(g.Timeout, GlobTimeout), keep: limit}
	hits, matched, stopped, err := globHits(ctx, env, base, pattern, b)
	if err != nil {
		return backendError(ctx, "Glob", base, err)
	}
	if len(hits) == 0 {
		text := "No files found matching pattern: " + in.Pattern
		if stopped != "" {
			text += "\n\n(" + stopped + ")"
		}
		return Single(Chunk{Text: text, Metadata: map[string]any{"count": 0, "stopped": stopped != ""}})
	}
	paths := make([]string, 0, len(hits))
	for _, h := range hits {
		paths = append(paths, h.path)
	}
	text := strings.Join(paths, "\n")
	if matched > limit {
		text += fmt.Sprintf("\n\n(Results are truncated: showing the %d most recently modified of %d matches. Use a more specific path or pattern.)", limit, matched)
	}
	if stopped != "" {
		text += "\n\n(" + stopped + ")"
	}
	return Single(Chunk{Text: text, Metadata: map[string]any{"count": matched, "truncated": matched > limit || stopped != "", "stopped": stopped != ""}})
}

// globBounds bound one Glob: the entries it looks at, its time, and the
// matches it keeps.
type globBounds struct {
	entries int
	timeout time.Duration
	keep    int
}

// errGlobStop ends a walk at a bound.
var errGlobStop = errors.New("glob: bound reached")

// globHit is one file Glob matched: its absolute path and what Stat-like
// information the walk reported for it.
type globHit struct {
	path string
	info backend.FileInfo
}

// globHits walks the tree under base and returns the files whose path
// relative to base matches pattern, most recently modified first and by
// path among equal times: at most b.keep of them, of matched in all.
// The walk stops at b's bounds; stopped then says where, for the model.
func globHits(ctx context.Context, env *Env, base, pattern string, b globBounds) (hits []globHit, matched int, stopped string, err error) {
	newer := func(a, b globHit) int {
		if c := b.info.ModTime.Compare(a.info.ModTime); c != 0 {
			return c
		}
		return cmp.Compare(a.path, b.path)
	}
	wctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	seen := 0
	err = walkTree(wctx, env.Backend, base, func(rel string, fi backend.FileInfo) (bool, error) {
		if seen++; seen > b.entries {
			return false, errGlobStop
		}
		if fi.IsDir || !doublestar.MatchUnvalidated(pattern, rel) {
			return true, nil
		}
		matched++
		h := globHit{path.Join(base, rel), fi}
		if len(hits) < b.keep {
			hits = append(hits, h)
			slices.SortFunc(hits, newer)
		} else if newer(h, hits[len(hits)-1]) < 0 {
			// Only the b.keep most recent are kept: memory stays bounded
			// however many files match.
			hits[len(hits)-1] = h
			slices.SortFunc(hits, newer)
		}
		return true, nil
	})
	switch {
	case errors.Is(err, errGlobStop):
		stopped = fmt.Sprintf("Glob stopped after looking at %d entries (its bound); the matches are those found so far. Narrow the path or the pattern", b.entries)
		err = nil
	case err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		stopped = fmt.Sprintf("Glob stopped after %s (its time bound), having looked at %d entries; the matches are those found so far. Narrow the path or the pattern", b.timeout, seen)
		err = nil
	}
	if err != nil {
		return nil, 0, "", err
	}
	return hits, matched, stopped, nil
}
