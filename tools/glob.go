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

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/backend"
)

// GlobDefaultMaxResults caps the number of paths Glob returns.
const GlobDefaultMaxResults = 100

// Glob finds files by a doublestar pattern, walking the tree through the
// backend's ListDir so it works on every backend. Its zero value is
// ready to use. Its permission checks live in perm_glob.go.
type Glob struct {
	// MaxResults caps the result (default GlobDefaultMaxResults).
	MaxResults int
}

// GlobInput is Glob's input.
type GlobInput struct {
	Pattern string `json:"pattern"`
	// Path is the directory to search; relative paths are taken from the
	// workspace directory, which is also the default.
	Path string `json:"path,omitempty"`
}

var globSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The glob pattern to match files against, e.g. \"**/*.go\" or \"src/**/*.{ts,tsx}\"."},
    "path": {"type": "string", "description": "The directory to search in (default: the workspace directory)."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)

// Info implements Tool.
func (Glob) Info() Info {
	return Info{
		Name: "Glob",
		Description: "Find files by glob pattern (supports ** and {a,b}). Returns matching file paths, " +
			"most recently modified first, at most 100.",
		InputSchema:     globSchema,
		ReadOnly:        true,
		ConcurrencySafe: true,
	}
}

// Call implements Tool.
func (g Glob) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	var in GlobInput
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("Invalid input for Glob: %v", err)
	}
	if strings.ContainsRune(in.Pattern, 0) || strings.ContainsRune(in.Path, 0) {
		return Errorf("Error: pattern and path must not contain NUL bytes")
	}
	if in.Pattern == "" {
		return Errorf("Error: pattern is required")
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
	type hit struct {
		path string
		info backend.FileInfo
	}
	var hits []hit
	err = walkTree(ctx, env.Backend, base, func(rel string, fi backend.FileInfo) (bool, error) {
		if fi.IsDir {
			return true, nil
		}
		if doublestar.MatchUnvalidated(pattern, rel) {
			hits = append(hits, hit{path.Join(base, rel), fi})
		}
		return true, nil
	})
	if err != nil {
		return backendError(ctx, "Glob", base, err)
	}
	if len(hits) == 0 {
		return Single(Chunk{Text: "No files found matching pattern: " + in.Pattern, Metadata: map[string]any{"count": 0}})
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		if c := b.info.ModTime.Compare(a.info.ModTime); c != 0 {
			return c
		}
		return cmp.Compare(a.path, b.path)
	})
	limit := g.MaxResults
	if limit <= 0 {
		limit = GlobDefaultMaxResults
	}
	paths := make([]string, 0, min(len(hits), limit))
	for _, h := range hits[:min(len(hits), limit)] {
		paths = append(paths, h.path)
	}
	text := strings.Join(paths, "\n")
	if len(hits) > limit {
		text += fmt.Sprintf("\n\n(Results are truncated: showing the %d most recently modified of %d matches. Use a more specific path or pattern.)", limit, len(hits))
	}
	return Single(Chunk{Text: text, Metadata: map[string]any{"count": len(hits), "truncated": len(hits) > limit}})
}

// resolveDir makes a model-supplied directory absolute against the
// workspace directory; empty means the workspace directory.
func resolveDir(env *Env, p string) string {
	switch {
	case p == "":
		p = env.Workdir
	case !path.IsAbs(p):
		p = path.Join(env.Workdir, p)
	}
	if p == "" {
		p = "/"
	}
	return path.Clean(p)
}

// walkTree visits every entry below root depth-first, entries of a
// directory in name order, through the backend's ListDir. visit gets the
// slash-separated path relative to root; returning false for a directory
// skips it. Directories that vanish or cannot be listed are skipped.
func walkTree(ctx context.Context, b backend.Backend, root string, visit func(rel string, fi backend.FileInfo) (bool, error)) error {
	var walk func(dir, rel string) error
	walk = func(dir, rel string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := b.ListDir(ctx, dir)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if rel == "" {
				return err
			}
			return nil // unreadable or removed subdirectory
		}
		for _, e := range entries {
			r := e.Name
			if rel != "" {
				r = rel + "/" + e.Name
			}
			descend, err := visit(r, e)
			if err != nil {
				return err
			}
			if e.IsDir && descend {
				if err := walk(path.Join(dir, e.Name), r); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(root, "")
}
