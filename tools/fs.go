package tools

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

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
func absPath(env *Env, p string) string {
	if p == "" {
		return ""
	}
	if !path.IsAbs(p) && workdir(env) != "" {
		p = path.Join(workdir(env), p)
	}
	return path.Clean(p)
}

// inWorkingDirs reports whether the absolute path p is a working
// directory (the workdir or one of pc.WorkingDirs) or lies inside one.
func inWorkingDirs(env *Env, pc *permission.Context, p string) bool {
	if !path.IsAbs(p) {
		return false
	}
	dirs := []string{workdir(env)}
	if pc != nil {
		dirs = append(dirs, pc.WorkingDirs...)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		d = absPath(env, d)
		if !path.IsAbs(d) {
			continue
		}
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// matchPath matches a glob rule against the absolute path p with
// doublestar semantics ("**" is any depth, "*" stays within one
// segment); a relative rule resolves against the workdir. [quirk] The
// reference uses fnmatch, whose "*" crosses "/", so "src/**" meant
// "src/*".
func matchPath(env *Env, rule, p string) (bool, error) {
	if p == "" || rule == "" {
		return false, nil
	}
	pat := rule
	if !path.IsAbs(pat) && workdir(env) != "" {
		pat = path.Join(workdir(env), pat)
		if strings.HasSuffix(rule, "/") {
			pat += "/"
		}
	}
	ok, err := doublestar.Match(pat, p)
	if err != nil {
		return false, fmt.Errorf("rule %q: %w", rule, err)
	}
	return ok, nil
}

// workingDirs returns the absolute, clean working directories: the
// workdir and pc.WorkingDirs (the turn's and the configuration's
// additional directories).
func workingDirs(env *Env, pc *permission.Context) []string {
	var out []string
	add := func(d string) {
		if d == "" {
			return
		}
		d = absPath(env, d)
		if path.IsAbs(d) && !contains(out, d) {
			out = append(out, d)
		}
	}
	add(workdir(env))
	if pc != nil {
		for _, d := range pc.WorkingDirs {
			add(d)
		}
	}
	return out
}

func insideDirs(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || d == "/" || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

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

// maxDiffCells bounds the LCS table; larger changed regions are shown as
// a whole replacement.
const maxDiffCells = 4_000_000

// unifiedDiff returns a unified diff from a to b, or "" when equal.
func unifiedDiff(fromName, toName, a, b string) string {
	if a == b {
		return ""
	}
	al, bl := diffLines(a), diffLines(b)
	ops := diffOps(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", fromName, toName)
	// Group ops into hunks: runs of changes with up to 2*context equal
	// lines between them.
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-diffContext)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*diffContext {
				end = min(end+diffContext, len(ops))
				break
			}
			end = run
		}
		hunk := ops[start:end]
		aStart, bStart := hunk[0].ai, hunk[0].bi
		aN, bN := 0, 0
		for _, o := range hunk {
			if o.kind != '+' {
				aN++
			}
			if o.kind != '-' {
				bN++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aN), hunkRange(bStart, bN))
		for _, o := range hunk {
			out.WriteByte(o.kind)
			out.WriteString(o.text)
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func diffLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// diffOp is one line of an edit script: ' ' keep, '-' delete, '+' insert;
// ai and bi are the 0-based positions in a and b before the op.
type diffOp struct {
	kind   byte
	text   string
	ai, bi int
}

// diffOps computes a line edit script: common prefix and suffix, then an
// LCS of the middle when it is small enough, else a full replacement.
func diffOps(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []diffOp
	for k := 0; k < pre; k++ {
		ops = append(ops, diffOp{' ', a[k], k, k})
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	ai, bi := pre, pre
	if len(am)*len(bm) <= maxDiffCells && len(am) > 0 && len(bm) > 0 {
		// lcs[i][j] = LCS length of am[i:], bm[j:].
		w := len(bm) + 1
		lcs := make([]int32, (len(am)+1)*w)
		for i := len(am) - 1; i >= 0; i-- {
			for j := len(bm) - 1; j >= 0; j-- {
				if am[i] == bm[j] {
					lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
				} else {
					lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(am) || j < len(bm) {
			switch {
			case i < len(am) && j < len(bm) && am[i] == bm[j]:
				ops = append(ops, diffOp{' ', am[i], ai, bi})
				i, j, ai, bi = i+1, j+1, ai+1, bi+1
			case i < len(am) && (j == len(bm) || lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
				ops = append(ops, diffOp{'-', am[i], ai, bi})
				i, ai = i+1, ai+1
			default:
				ops = append(ops, diffOp{'+', bm[j], ai, bi})
				j, bi = j+1, bi+1
			}
		}
	} else {
		for _, l := range am {
			ops = append(ops, diffOp{'-', l, ai, bi})
			ai++
		}
		for _, l := range bm {
			ops = append(ops, diffOp{'+', l, ai, bi})
			bi++
		}
	}
	for k := 0; k < suf; k++ {
		ops = append(ops, diffOp{' ', a[len(a)-suf+k], ai, bi})
		ai, bi = ai+1, bi+1
	}
	return ops
}
