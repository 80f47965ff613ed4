package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/ledongthuc/pdf"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/permission"
)

// Read limits.
const (
	// ReadDefaultLimit is the number of lines Read returns by default.
	ReadDefaultLimit = 2000
	// ReadDefaultMaxLineChars cuts longer lines and marks them "[truncated]".
	ReadDefaultMaxLineChars = 2000
	// ReadDefaultMaxOutputBytes caps the text one Read returns.
	ReadDefaultMaxOutputBytes = 256 << 10
	// ReadMaxPDFPages is the most PDF pages one Read returns.
	ReadMaxPDFPages = 20
	// ReadPDFPagesRequiredAbove is the page count above which Read needs
	// the pages argument for a PDF.
	ReadPDFPagesRequiredAbove = 10
	// FileMaxBytes is the largest file Read, Edit and Write read (and an
	// approval's preview diffs): a larger one is refused before a byte of
	// it is read, so no file can exhaust the worker's memory.
	FileMaxBytes = 32 << 20
)

// Read reads a text file, an image or a PDF from the call's backend and
// records what it read in the turn's State for read-before-write. Its
// zero value uses the default limits. Its permission checks apply the
// path rules to the file it reads.
type Read struct {
	// MaxLineChars cuts longer lines (default ReadDefaultMaxLineChars).
	MaxLineChars int
	// MaxOutputBytes caps the text of one result (default
	// ReadDefaultMaxOutputBytes).
	MaxOutputBytes int
}

// ReadInput is Read's input.
type ReadInput struct {
	FilePath string `json:"file_path" jsonschema:"pattern=^/" jsonschema_description:"The absolute path to the file to read."`
	// Offset is the first line to return, 1-based (default 1).
	Offset int `json:"offset,omitempty" jsonschema:"minimum=1" jsonschema_description:"The line number to start reading from (1-based). Only provide if the file is too large to read at once."`
	// Limit is the number of lines to return (default 2000).
	Limit int `json:"limit,omitempty" jsonschema:"minimum=1,maximum=2000" jsonschema_description:"The number of lines to read (default 2000)."`
	// Pages selects PDF pages, e.g. "3" or "1-5".
	Pages string `json:"pages,omitempty" jsonschema_description:"Page range for PDF files, e.g. \"1-5\" or \"3\". Required for PDFs with more than 10 pages; at most 20 pages per call."`
}

func (in ReadInput) check() string {
	if _, msg := checkFilePath(in.FilePath); msg != "" {
		return msg
	}
	if in.Offset < 0 || in.Limit < 0 {
		return "Error: offset and limit must not be negative"
	}
	return ""
}

// imageType returns the media type of the image extensions Read returns
// as data blocks.
func imageType(ext string) (string, bool) {
	switch ext {
	case ".png":
		return "image/png", true
	case ".jpg", ".jpeg":
		return "image/jpeg", true
	case ".gif":
		return "image/gif", true
	case ".webp":
		return "image/webp", true
	}
	return "", false
}

// unsupportedImage reports the image extensions Read recognises but
// cannot hand to the model.
func unsupportedImage(ext string) bool {
	switch ext {
	case ".bmp", ".tiff", ".tif", ".ico":
		return true
	}
	return false
}

// readSchema is the input schema, derived from the input struct once.
var readSchema = builtinSchema[ReadInput]()

// Info implements Tool.
func (Read) Info() Info {
	return Info{
		Name: "Read",
		Description: "Read a file from the workspace. file_path must be absolute. " +
			"Text is returned with line numbers (cat -n style); by default up to 2000 lines from the start, " +
			"use offset and limit to page through long files. Lines longer than 2000 characters are truncated. " +
			"Images (png, jpg, gif, webp) are returned as images; PDFs as text per page (use pages for long PDFs). " +
			"You must Read a file before you Write over it or Edit it.",
		InputSchema:     readSchema(),
		ReadOnly:        true,
		ConcurrencySafe: true,
		StateInjected:   true,
	}
}

// CheckInput implements InputChecker.
func (Read) CheckInput(_ context.Context, _ *Env, input json.RawMessage) error {
	return checkInput[ReadInput]("Read", input)
}

// CheckPermissions implements PermissionChecker: the path rules on the
// file read (outside the working directories or sensitive: ask).
func (Read) CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	in, err := decodeInput[ReadInput]("Read", input)
	if err != nil {
		return permission.Decision{}, err
	}
	return paths(env, pc).Check("Read", []permission.Access{paths(env, pc).ReadAccess(in.FilePath, false)})
}

// MatchRule implements RuleMatcher: a glob on file_path.
func (Read) MatchRule(_ context.Context, env *Env, content string, input json.RawMessage) (bool, error) {
	in, err := decodeInput[ReadInput]("Read", input)
	if err != nil {
		return false, err
	}
	return matchPath(env, content, absPath(env, in.FilePath))
}

// GenerateSuggestions implements Suggester: the parent directory.
func (Read) GenerateSuggestions(_ context.Context, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	in, err := decodeInput[ReadInput]("Read", input)
	if err != nil {
		return nil, err
	}
	return fileSuggestion("Read", env, in.FilePath), nil
}

// Call implements Tool.
func (r Read) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	in, err := parseInput[ReadInput]("Read", input)
	if err != nil {
		return invalid(err)
	}
	p := path.Clean(in.FilePath)
	fi, err := env.Backend.Stat(ctx, p)
	switch {
	case errors.Is(err, backend.ErrNotExist):
		return Errorf("Error: File does not exist: %s", in.FilePath)
	case err != nil:
		return backendError(ctx, "Read", p, err)
	case fi.IsDir:
		return Errorf("Error: Path is a directory, not a file: %s", in.FilePath)
	case fi.Size > FileMaxBytes:
		return tooLarge(p, fi.Size)
	}
	ext := strings.ToLower(path.Ext(p))
	if unsupportedImage(ext) {
		return Errorf("Error: Unsupported image format %s: only png, jpg, gif and webp images can be read: %s", ext, p)
	}
	data, err := backend.ReadFileLimit(ctx, env.Backend, p, FileMaxBytes)
	switch {
	case errors.Is(err, backend.ErrNotExist):
		return Errorf("Error: File does not exist: %s", in.FilePath)
	case errors.Is(err, backend.ErrTooLarge):
		return tooLarge(p, -1)
	case errors.Is(err, backend.ErrNotRegular):
		return Errorf("Error: %s is not a regular file (a FIFO, socket or device); Read reads regular files only", p)
	case err != nil:
		return backendError(ctx, "Read", p, err)
	}
	// The stamp is taken before reading: if the file changed in between,
	// the next Write or Edit sees a different stamp and asks for a re-read.
	recordRead(env, p, fi)

	if mt, ok := imageType(ext); ok {
		return Single(Chunk{
			Text:     fmt.Sprintf("Image %s (%s, %d bytes)", p, mt, len(data)),
			Data:     []DataBlock{{MediaType: mt, Data: data}},
			Metadata: map[string]any{"file_path": p},
		})
	}
	if ext == ".pdf" {
		return r.readPDF(p, data, in.Pages)
	}
	return Single(r.readText(p, data, in.Offset, in.Limit))
}

// tooLarge is the tool error of a file over FileMaxBytes (size -1: it
// grew past it while read).
func tooLarge(p string, size int64) Stream {
	what := "is larger than"
	if size >= 0 {
		what = fmt.Sprintf("is %d bytes, more than", size)
	}
	return Errorf("Error: File %s %s the %d MiB the file tools read. Use Bash to read part of it (head, tail, sed -n '100,200p'), or Grep to search it.", p, what, FileMaxBytes>>20)
}

// readText formats lines offset..offset+limit of a text file.
func (r Read) readText(p string, data []byte, offset, limit int) Chunk {
	maxLine := r.MaxLineChars
	if maxLine <= 0 {
		maxLine = ReadDefaultMaxLineChars
	}
	maxOut := r.MaxOutputBytes
	if maxOut <= 0 {
		maxOut = ReadDefaultMaxOutputBytes
	}
	if offset <= 0 {
		offset = 1
	}
	if limit <= 0 {
		limit = ReadDefaultLimit
	}
	lines := splitLines(decodeText(data))
	meta := map[string]any{"file_path": p, "total_lines": len(lines)}
	if len(lines) == 0 {
		return Chunk{Text: fmt.Sprintf("<system-reminder>The file %s exists but is empty.</system-reminder>", p), Metadata: meta}
	}
	start := offset - 1
	if start >= len(lines) {
		return Chunk{Text: "", Metadata: meta}
	}
	end := min(start+limit, len(lines))
	var b strings.Builder
	last := start
	for i := start; i < end; i++ {
		line := lines[i]
		if n := len([]rune(line)); n > maxLine {
			line = string([]rune(line)[:maxLine]) + "[truncated]"
		}
		entry := fmt.Sprintf("%6d\t%s", i+1, line)
		if b.Len() > 0 && b.Len()+1+len(entry) > maxOut {
			break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(entry)
		last = i + 1
	}
	if last < end {
		fmt.Fprintf(&b, "\n\n[Output truncated at %d bytes: showing lines %d-%d of %d. Use offset=%d to read more.]",
			maxOut, start+1, last, len(lines), last+1)
		meta["truncated"] = true
	}
	return Chunk{Text: b.String(), Metadata: meta}
}

// readPDF extracts the text of the selected pages.
func (Read) readPDF(p string, data []byte, pages string) (s Stream) {
	defer func() {
		if v := recover(); v != nil {
			s = Errorf("Error: cannot read PDF %s: %v", p, v)
		}
	}()
	rd, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return Errorf("Error: cannot read PDF %s: %v", p, err)
	}
	n := rd.NumPage()
	first, last := 1, n
	if pages == "" {
		if n > ReadPDFPagesRequiredAbove {
			return Errorf("Error: PDF %s has %d pages; give a page range with pages (e.g. \"1-%d\"), at most %d pages per call.",
				p, n, ReadMaxPDFPages, ReadMaxPDFPages)
		}
	} else {
		first, last, err = parsePages(pages)
		if err != nil {
			return Errorf("Error: invalid pages %q: %v", pages, err)
		}
		if first > n {
			return Errorf("Error: page %d is out of range: PDF %s has %d pages", first, p, n)
		}
		last = min(last, n)
		if last-first+1 > ReadMaxPDFPages {
			return Errorf("Error: at most %d pages can be read per call; got pages %q", ReadMaxPDFPages, pages)
		}
	}
	var b strings.Builder
	for i := first; i <= last; i++ {
		text, err := rd.Page(i).GetPlainText(nil)
		if err != nil {
			text = fmt.Sprintf("[cannot extract text: %v]", err)
		}
		if i > first {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "--- Page %d/%d ---\n%s", i, n, strings.Trim(text, "\n"))
	}
	return Single(Chunk{Text: b.String(), Metadata: map[string]any{"file_path": p, "total_pages": n}})
}

// parsePages parses "3" or "1-5" into an inclusive 1-based range.
func parsePages(s string) (first, last int, err error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(s), "-")
	first, err = strconv.Atoi(strings.TrimSpace(a))
	if err != nil {
		return 0, 0, fmt.Errorf("want a page number or a range like 1-5: %w", err)
	}
	last = first
	if isRange {
		if last, err = strconv.Atoi(strings.TrimSpace(b)); err != nil {
			return 0, 0, fmt.Errorf("want a page number or a range like 1-5: %w", err)
		}
	}
	if first < 1 || last < first {
		return 0, 0, errors.New("pages start at 1 and a range must not be reversed")
	}
	return first, last, nil
}
