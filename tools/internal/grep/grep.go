// Package grep is the Grep tool's search: ripgrep run on the backend,
// and a Go engine with ripgrep's semantics (its file selection with
// --glob overrides, .gitignore/.ignore/.rgignore files and --type, its
// output formats) for backends without rg. Both walk and read through
// the backend, so they work on every backend.
package grep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/wardenhq/warden/backend"
)

const (
	// maxColumns replaces longer lines, as rg --max-columns.
	maxColumns = 500
	// maxFileBytes: the Go engine skips larger files (and says so).
	maxFileBytes = 64 << 20
	// maxInFlightBytes bounds what one Go search holds of the files it
	// is searching at once: its workers wait for each other's files to
	// be done rather than load more.
	maxInFlightBytes = 128 << 20
	// maxOutputBytes bounds the output lines one Go search collects, as
	// Ripgrep's output is capped: past it, no more lines or files.
	maxOutputBytes = 32 << 20
	// DefaultMaxEntries bounds the entries one Go search's walk looks
	// at (as Glob's; Query.MaxEntries): past it, the files found so far
	// are searched and the result says the search stopped.
	DefaultMaxEntries = 100_000
)

// Stopped starts the entry of Go's skipped list that says the walk
// stopped at its bound of entries (the rest of the tree was not searched).
const Stopped = "stopped: "

// vcsDirs are never searched.
func vcsDirs() []string { return []string{".git", ".svn", ".hg", ".bzr", ".jj", ".sl"} }

// Query is a normalised search, the same for both engines.
type Query struct {
	Pattern string
	// Root is the absolute, cleaned file or directory searched.
	Root string
	// RootIsFile: Root is a file (its lines are printed without a path).
	RootIsFile bool
	// Globs are rg --glob filters, "!" excluding; the last match wins.
	Globs []string
	// Type is an rg --type name.
	Type string
	// Mode is content, files_with_matches or count.
	Mode          string
	Before, After int
	LineNumbers   bool
	IgnoreCase    bool
	Multiline     bool
	// MaxEntries bounds the entries the Go engine's walk looks at
	// (0: DefaultMaxEntries).
	MaxEntries int

	// output is what the Go engine may still collect, in bytes
	// (maxOutputBytes at the start of a search).
	output *atomic.Int64
}

// decode turns process output into text: invalid UTF-8 is replaced and
// CRLF becomes LF.
func decode(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(s, "\r\n", "\n")
}

// TimeoutMessage is the tool error of a search that timed out.
func TimeoutMessage(timeout time.Duration) string {
	return fmt.Sprintf("Ripgrep search timed out after %d seconds. Try searching a more specific path or pattern.", int(timeout.Seconds()))
}

// Ripgrep runs rg on the backend. It returns the output lines, or the
// tool error the model reads, or an infrastructure error. Results are
// sorted by path so that offset pagination is stable across calls.
func Ripgrep(ctx context.Context, b backend.Backend, q Query, timeout time.Duration) ([]string, string, error) {
	argv := []string{"rg", "--hidden", "--no-require-git", "--no-ignore-parent", "--no-ignore-global", "--no-ignore-exclude"}
	for _, d := range vcsDirs() {
		argv = append(argv, "--glob", "!"+d)
	}
	// The same files as the Go engine: none over maxFileBytes (a 200 GB
	// sparse file would keep rg reading zeros until the timeout).
	argv = append(argv, "--max-columns", strconv.Itoa(maxColumns), "--max-filesize", strconv.Itoa(maxFileBytes),
		"--sort", "path", "--no-config")
	if q.Multiline {
		argv = append(argv, "-U", "--multiline-dotall")
	}
	if q.IgnoreCase {
		argv = append(argv, "-i")
	}
	switch q.Mode {
	case "files_with_matches":
		argv = append(argv, "-l")
	case "count":
		argv = append(argv, "-c")
	case "content":
		if q.LineNumbers {
			argv = append(argv, "-n")
		}
		if q.Before > 0 {
			argv = append(argv, "-B", strconv.Itoa(q.Before))
		}
		if q.After > 0 {
			argv = append(argv, "-A", strconv.Itoa(q.After))
		}
	}
	if q.Type != "" {
		argv = append(argv, "--type", q.Type)
	}
	for _, g := range q.Globs {
		argv = append(argv, "--glob", g)
	}
	argv = append(argv, "-e", q.Pattern, "--", q.Root)
	res, err := b.Exec(ctx, backend.ExecRequest{Argv: argv, Timeout: timeout, MaxOutput: 32 << 20})
	if err != nil {
		// A workspace that went away is the infrastructure's failure: the
		// activity retries it on a new one.
		if ctx.Err() != nil || errors.Is(err, backend.ErrUnavailable) {
			return nil, "", fmt.Errorf("grep: %w", err)
		}
		return nil, fmt.Sprintf("ripgrep error: %v", err), nil
	}
	if res.TimedOut {
		return nil, TimeoutMessage(timeout), nil
	}
	out := decode(res.Stdout)
	// rg exits 2 when some file could not be read; results still count.
	if res.ExitCode != 0 && res.ExitCode != 1 && (res.ExitCode != 2 || out == "") {
		return nil, fmt.Sprintf("ripgrep error (code %d): %s", res.ExitCode, strings.TrimSpace(decode(res.Stderr))), nil
	}
	return strings.Split(out, "\n"), "", nil
}

// Go is the Go engine, returning what Ripgrep returns and the files it
// skipped without reading them (each with the reason: not a regular
// file, or over maxFileBytes): it walks the tree through the backend
// with ripgrep's filtering rules and searches each file with package
// regexp, holding at most maxFileBytes of one file and maxInFlightBytes
// of all at once.
func Go(ctx context.Context, b backend.Backend, q Query, timeout time.Duration) (lines, skipped []string, msg string, err error) {
	lines, skipped, msg, err = goSearch(ctx, b, q, timeout)
	if msg != "" || err != nil {
		return nil, nil, msg, err
	}
	return lines, skipped, "", nil
}

func goSearch(ctx context.Context, b backend.Backend, q Query, timeout time.Duration) ([]string, []string, string, error) {
	re, msg := compile(q)
	if msg != "" {
		return nil, nil, msg, nil
	}
	var typeGlobs []string
	if q.Type != "" {
		var ok bool
		if typeGlobs, ok = types()[q.Type]; !ok {
			return nil, nil, fmt.Sprintf("ripgrep error (code 2): rg: unrecognized file type: %s", q.Type), nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	files, err := listFiles(ctx, b, q, typeGlobs)
	var stopped []string
	if errors.Is(err, errEntries) {
		stopped = []string{fmt.Sprintf("%sthe search stopped after looking at %d entries (its bound) and searched the %d files found so far; narrow the path or the glob", Stopped, q.maxEntries(), len(files))}
		err = nil
	}
	if err != nil {
		if ctx.Err() != nil {
			l, m, err := timedOut(ctx, timeout)
			return l, nil, m, err
		}
		return nil, nil, fmt.Sprintf("ripgrep error (code 2): %v", err), nil
	}
	results, skipped := searchAll(ctx, b, files, re, q)
	if ctx.Err() != nil {
		l, m, err := timedOut(ctx, timeout)
		return l, nil, m, err
	}
	return joinResults(results, q), append(skipped, stopped...), "", nil
}

// maxEntries is q's bound of entries.
func (q Query) maxEntries() int {
	if q.MaxEntries > 0 {
		return q.MaxEntries
	}
	return DefaultMaxEntries
}

// errEntries ends a walk at its bound of entries.
var errEntries = errors.New("grep: the walk reached its bound of entries")

// compile compiles q's pattern as ripgrep reads it, or returns the tool
// error rg reports for it.
func compile(q Query) (*regexp.Regexp, string) {
	expr := "(?m)"
	if q.Multiline {
		expr = "(?ms)"
	}
	if q.IgnoreCase {
		expr = strings.Replace(expr, "(?", "(?i", 1)
	}
	if _, err := regexp.Compile(expr + q.Pattern); err != nil {
		return nil, fmt.Sprintf("ripgrep error (code 2): regex parse error: %v", err)
	}
	pattern, err := goPattern(q.Pattern, q.Multiline)
	if err != nil {
		return nil, fmt.Sprintf("ripgrep error (code 2): %v", err)
	}
	re, err := regexp.Compile(expr + pattern)
	if err != nil {
		return nil, fmt.Sprintf("ripgrep error (code 2): regex parse error: %v", err)
	}
	return re, ""
}

// timedOut is Go's answer once ctx is done: the timeout message if the
// search's own deadline passed, else the caller's cancellation.
func timedOut(ctx context.Context, timeout time.Duration) ([]string, string, error) {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) && context.Cause(ctx) == context.DeadlineExceeded {
		return nil, TimeoutMessage(timeout), nil
	}
	return nil, "", fmt.Errorf("grep: %w", err)
}

// file is one file to search and its size as listed (-1: unknown).
type file struct {
	path string
	size int64
}

// listFiles returns the files q searches: its root file, or the files
// under its root that the filters select, in walk order.
func listFiles(ctx context.Context, b backend.Backend, q Query, typeGlobs []string) ([]file, error) {
	if q.RootIsFile {
		return []file{{q.Root, -1}}, nil
	}
	var files []file
	f := newFilter(q.Globs, typeGlobs)
	err := walkFiltered(ctx, b, q.Root, f, q.maxEntries(), func(rel string, size int64) { files = append(files, file{path.Join(q.Root, rel), size}) })
	return files, err
}

// searchAll searches files in parallel and returns each one's output
// lines in files' order, and the files skipped unread (with why). It
// stops handing out files once ctx is done.
func searchAll(ctx context.Context, b backend.Backend, files []file, re *regexp.Regexp, q Query) ([][]string, []string) {
	results := make([][]string, len(files))
	skips := make([]string, len(files))
	budget := semaphore.NewWeighted(maxInFlightBytes)
	var output atomic.Int64
	output.Store(maxOutputBytes)
	q.output = &output
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(8, len(files)) {
		wg.Go(func() {
			for i := range next {
				results[i], skips[i] = searchFile(ctx, b, budget, files[i], re, q)
			}
		})
	}
	for i := range files {
		if ctx.Err() != nil || output.Load() <= 0 {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	var skipped []string
	for _, s := range skips {
		if s != "" {
			skipped = append(skipped, s)
		}
	}
	return results, skipped
}

// joinResults concatenates the files' output lines, with "--" between
// files when context lines are shown.
func joinResults(results [][]string, q Query) []string {
	var out []string
	for _, r := range results {
		if len(r) == 0 {
			continue
		}
		if q.Mode == "content" && (q.Before > 0 || q.After > 0) && len(out) > 0 {
			out = append(out, "--")
		}
		out = append(out, r...)
	}
	return out
}

// searchFile searches one file and returns its output lines, or why it
// skipped the file unread. The file's bytes are held under budget (its
// listed size, the most a search reads when unknown or grown since).
func searchFile(ctx context.Context, b backend.Backend, budget *semaphore.Weighted, f file, re *regexp.Regexp, q Query) ([]string, string) {
	file := f.path
	if f.size > maxFileBytes {
		return nil, fmt.Sprintf("%s (%d bytes, over the %d MiB a search reads)", file, f.size, maxFileBytes>>20)
	}
	weight := int64(maxFileBytes)
	if f.size >= 0 {
		weight = max(f.size, 4096)
	}
	if err := budget.Acquire(ctx, weight); err != nil {
		return nil, ""
	}
	defer budget.Release(weight)
	data, skip := readSearchable(ctx, b, file, min(weight, maxFileBytes), re)
	if data == nil {
		return nil, skip
	}
	ls := splitLines(data)
	var matched []int
	var count int
	if q.Multiline {
		matched, count = ls.multilineMatches(re)
	} else {
		matched = ls.lineMatches(re)
		count = len(matched)
	}
	if len(matched) == 0 {
		return nil, ""
	}
	prefix := ""
	if !q.RootIsFile {
		prefix = file
	}
	switch q.Mode {
	case "files_with_matches":
		return []string{file}, ""
	case "count":
		if prefix == "" {
			return []string{strconv.Itoa(count)}, ""
		}
		return []string{prefix + ":" + strconv.Itoa(count)}, ""
	}
	return ls.content(matched, prefix, q), ""
}

// readSearchable reads a file that ripgrep would search and in which re
// matches, or returns nil: unreadable, empty (no lines, not one empty
// line: ripgrep finds no match for ^$ in it), binary or without a
// match, or, with the reason it was skipped, not a regular file (never
// opened in a way that blocks) or too large (never read past the limit).
func readSearchable(ctx context.Context, b backend.Backend, file string, limit int64, re *regexp.Regexp) ([]byte, string) {
	data, err := backend.ReadFileLimit(ctx, b, file, limit)
	switch {
	case errors.Is(err, backend.ErrNotRegular):
		return nil, file + " (not a regular file)"
	case errors.Is(err, backend.ErrTooLarge) && limit < maxFileBytes:
		return nil, file + " (grew past its listed size while it was searched)"
	case errors.Is(err, backend.ErrTooLarge):
		return nil, fmt.Sprintf("%s (over the %d MiB a search reads)", file, maxFileBytes>>20)
	case err != nil || len(data) == 0:
		return nil, ""
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, "" // binary, as ripgrep skips it
	}
	if !re.Match(data) {
		return nil, ""
	}
	return data, ""
}

// lines is a file's text and where its lines start.
type lines struct {
	data   []byte
	starts []int
}

// splitLines finds data's line starts; a final newline does not start
// another line.
func splitLines(data []byte) lines {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return lines{data: data, starts: starts}
}

// of is the line holding byte offset off.
func (ls lines) of(off int) int {
	i, found := slices.BinarySearch(ls.starts, off)
	if found {
		return i
	}
	return i - 1
}

// text is line i without its newline.
func (ls lines) text(i int) []byte {
	end := len(ls.data)
	if i+1 < len(ls.starts) {
		end = ls.starts[i+1]
	}
	return bytes.TrimSuffix(ls.data[ls.starts[i]:end], []byte("\n"))
}

// lineMatches returns the lines re matches, each searched on its own.
func (ls lines) lineMatches(re *regexp.Regexp) []int {
	var matched []int
	for i := range ls.starts {
		if re.Match(ls.text(i)) {
			matched = append(matched, i)
		}
	}
	return matched
}

// multilineMatches returns the lines re's matches in the whole text
// span, and the number of matches ripgrep counts: a match starting on a
// line that an earlier match ended on is not counted again.
func (ls lines) multilineMatches(re *regexp.Regexp) ([]int, int) {
	data := ls.data
	var matched []int
	count, lastEnd := 0, -1
	for _, m := range re.FindAllIndex(data, -1) {
		if m[0] == len(data) && data[len(data)-1] == '\n' {
			// After the final line terminator there is no line:
			// ripgrep finds no empty match there.
			continue
		}
		first := ls.of(m[0])
		endOff := m[1]
		if endOff > m[0] {
			endOff--
		}
		last := ls.of(endOff)
		if first > lastEnd {
			count++
		}
		for l := max(first, lastEnd+1); l <= last; l++ {
			matched = append(matched, l)
		}
		lastEnd = max(lastEnd, last)
	}
	return matched, count
}

// content returns content mode's output: the matched lines and their
// context, "--" between groups that are not adjacent when context is
// shown.
func (ls lines) content(matched []int, prefix string, q Query) []string {
	isMatch := make(map[int]bool, len(matched))
	for _, l := range matched {
		isMatch[l] = true
	}
	show := make([]bool, len(ls.starts))
	for _, m := range matched {
		for l := max(0, m-q.Before); l <= min(len(ls.starts)-1, m+q.After); l++ {
			show[l] = true
		}
	}
	var out []string
	printed := -1
	for l, ok := range show {
		if !ok {
			continue
		}
		if printed >= 0 && l > printed+1 && (q.Before > 0 || q.After > 0) {
			out = append(out, "--")
		}
		line := ls.format(l, isMatch[l], prefix, q.LineNumbers)
		if q.output != nil && q.output.Add(-int64(len(line)+1)) < 0 {
			break // the search's output is full
		}
		out = append(out, line)
		printed = l
	}
	return out
}

// format is one output line of content mode: the path and line number
// (when shown) followed by ":" on a matching line or "-" on a context
// line, then the text, or a placeholder for a line over maxColumns.
func (ls lines) format(l int, match bool, prefix string, lineNumbers bool) string {
	sep := "-"
	if match {
		sep = ":"
	}
	text := string(ls.text(l))
	if len(text) > maxColumns {
		if match {
			text = "[Omitted long matching line]"
		} else {
			text = "[Omitted long context line]"
		}
	}
	var b strings.Builder
	if prefix != "" {
		b.WriteString(prefix + sep)
	}
	if lineNumbers {
		b.WriteString(strconv.Itoa(l+1) + sep)
	}
	b.WriteString(text)
	return b.String()
}
