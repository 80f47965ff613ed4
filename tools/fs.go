package tools

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/permission"
)

// File helpers the file tools share: path handling, the file stamps of
// read-before-write, reading and walking through the backend, and the
// diffs Write and Edit report.
//
// Paths are paths inside the backend and are handled lexically: relative
// paths resolve against the workdir, path.Clean removes "..", and nothing
// is resolved on the host (the backend may be remote). [quirk] The
// reference uses the host cwd and host realpath.

// Path handling.

// workdir returns the call's workspace directory, "" without an env.
func workdir(env *Env) string {
	if env == nil {
		return ""
	}
	return env.Workdir
}

// absPath resolves p against the workdir and cleans it. A relative path
// without a workdir stays relative (and cleaned).
func absPath(env *Env, p string) string { return paths(env, nil).Abs(p) }

// matchPath is permission.Paths.MatchPath in env's workdir.
func matchPath(env *Env, rule, p string) (bool, error) { return paths(env, nil).MatchPath(rule, p) }

// workingDirs is permission.Paths.WorkingDirs of env under pc.
func workingDirs(env *Env, pc *permission.Context) []string { return paths(env, pc).WorkingDirs() }

func insideDirs(p string, dirs []string) bool { return permission.Inside(p, dirs) }

// File stamps and reading.

// decodeText decodes file content: invalid UTF-8 is replaced and CRLF
// and CR line ends become LF.
func decodeText(data []byte) string {
	s := strings.ToValidUTF8(string(data), "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// splitLines splits text into lines without their terminators; a final
// newline does not start another line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// checkFilePath validates a model-supplied file path and returns its
// cleaned form, or the error message the model sees.
func checkFilePath(p string) (string, string) {
	if strings.ContainsRune(p, 0) {
		return "", "Error: file_path must not contain NUL bytes"
	}
	if p == "" {
		return "", "Error: file_path is required"
	}
	if !path.IsAbs(p) {
		return "", "Error: file_path must be an absolute path, got: " + p
	}
	return path.Clean(p), ""
}

// recordRead stores what Read saw of p; a nil State records nothing.
func recordRead(env *Env, p string, fi backend.FileInfo) {
	if env.State == nil {
		return
	}
	if env.State.Reads == nil {
		env.State.Reads = map[string]FileStamp{}
	}
	env.State.Reads[p] = FileStamp{Size: fi.Size, ModTime: fi.ModTime}
}

// readFresh reports whether p was read in this turn and, according to
// the backend, has not changed since: same size and modification time.
func readFresh(env *Env, p string, fi backend.FileInfo) bool {
	if env.State == nil {
		return false
	}
	st, ok := env.State.Reads[p]
	return ok && st.Size == fi.Size && st.ModTime.Equal(fi.ModTime)
}

// backendError turns a backend failure into a stream: a Go error when the
// context is done (infrastructure), a tool error the model reads otherwise.
func backendError(ctx context.Context, tool, p string, err error) Stream {
	if ctx.Err() != nil || errors.Is(err, backend.ErrUnavailable) {
		return Fail(fmt.Errorf("%s %s: %w", strings.ToLower(tool), p, err))
	}
	return Errorf("Error: %s failed for %s: %v", tool, p, err)
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

// Diffs.

// diffContext is the number of unchanged lines around each hunk.
const diffContext = 3

// unifiedDiff returns a unified diff from a to b, or "" when equal. The
// line edits come from go-udiff's Myers search, which bounds its work:
// past about a hundred changed lines it settles for a longer (still
// correct) edit script, so files of any size diff in linear time and
// memory. A last line without its newline is marked as GNU diff does.
func unifiedDiff(fromName, toName, a, b string) string {
	if a == b {
		return ""
	}
	d, err := udiff.ToUnified(fromName, toName, a, udiff.Lines(a, b), diffContext)
	if err != nil {
		// Lines returns edits of a, which ToUnified accepts; should it
		// ever not, show the change as one replacement of the whole.
		d, _ = udiff.ToUnified(fromName, toName, a, []udiff.Edit{{Start: 0, End: len(a), New: b}}, diffContext)
	}
	return d
}
