package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/permission"
)

// Edit replaces exact text in a file the model has read in this turn.
// Its permission checks are the path rules on the file it writes.
type Edit struct{}

// EditInput is Edit's input.
type EditInput struct {
	FilePath   string `json:"file_path" jsonschema:"pattern=^/" jsonschema_description:"The absolute path to the file to modify."`
	OldString  string `json:"old_string" jsonschema_description:"The exact text to replace."`
	NewString  string `json:"new_string" jsonschema_description:"The text to replace it with (must differ from old_string)."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"default=false" jsonschema_description:"Replace every occurrence of old_string (default false)."`
}

func (in EditInput) check() string {
	if _, msg := checkFilePath(in.FilePath); msg != "" {
		return msg
	}
	if in.OldString == in.NewString {
		return "Error: old_string and new_string are identical. No changes to make."
	}
	if in.OldString == "" {
		return "Error: old_string must not be empty. To create or overwrite a whole file, use the Write tool."
	}
	return ""
}

// editNotRead is the error of an Edit of a file not read in this turn.
const editNotRead = "Error: To edit a file, you must first read it using the Read tool."

// editSchema is the input schema, derived from the input struct once.
var editSchema = builtinSchema[EditInput]()

// Info implements Tool.
func (Edit) Info() Info {
	return Info{
		Name: "Edit",
		Description: "Replace exact text in a file. You must Read the file in this turn first. " +
			"old_string must match the file exactly (without the line-number prefix Read adds) and be unique, " +
			"unless replace_all is true.",
		InputSchema:   editSchema(),
		StateInjected: true,
	}
}

// CheckInput implements InputChecker: the input's own checks and, when
// the decision has the turn's state, read-before-write (a file never
// read in this turn cannot be edited, whether or not it exists; whether
// a file read earlier changed since only Call can tell).
func (Edit) CheckInput(_ context.Context, env *Env, input json.RawMessage) error {
	in, err := parseInput[EditInput]("Edit", input)
	if err != nil {
		return err
	}
	if env != nil && env.State != nil {
		if _, ok := env.State.Reads[path.Clean(in.FilePath)]; !ok {
			return &InputError{Tool: "Edit", Message: editNotRead}
		}
	}
	return nil
}

// CheckPermissions implements PermissionChecker (spec §1.4).
func (Edit) CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	in, err := decodeInput[EditInput]("Edit", input)
	if err != nil {
		return permission.Decision{}, err
	}
	return paths(env, pc).CheckEdit("Edit", in.FilePath)
}

// MatchRule implements RuleMatcher: a glob on file_path.
func (Edit) MatchRule(_ context.Context, env *Env, content string, input json.RawMessage) (bool, error) {
	in, err := decodeInput[EditInput]("Edit", input)
	if err != nil {
		return false, err
	}
	return matchPath(env, content, absPath(env, in.FilePath))
}

// GenerateSuggestions implements Suggester: the parent directory.
func (Edit) GenerateSuggestions(_ context.Context, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	in, err := decodeInput[EditInput]("Edit", input)
	if err != nil {
		return nil, err
	}
	return fileSuggestion("Edit", env, in.FilePath), nil
}

// Call implements Tool.
func (Edit) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	in, err := parseInput[EditInput]("Edit", input)
	if err != nil {
		return invalid(err)
	}
	p := path.Clean(in.FilePath)
	fi, err := env.Backend.Stat(ctx, p)
	switch {
	case errors.Is(err, backend.ErrNotExist):
		return Errorf("Error: File not found: %s", in.FilePath)
	case err != nil:
		return backendError(ctx, "Edit", p, err)
	case fi.IsDir:
		return Errorf("Error: Path is a directory, not a file: %s", in.FilePath)
	case fi.Size > FileMaxBytes:
		return tooLarge(p, fi.Size)
	}
	if !readFresh(env, p, fi) {
		return Errorf("%s", editNotRead)
	}
	data, err := backend.ReadFileLimit(ctx, env.Backend, p, FileMaxBytes)
	if err != nil {
		return backendError(ctx, "Edit", p, err)
	}
	// Files whose every line ends in CRLF keep CRLF; the match itself is
	// done on LF-normalised text.
	crlf := bytes.Contains(data, []byte("\r\n")) && bytes.Count(data, []byte("\r\n")) == bytes.Count(data, []byte("\n"))
	content := decodeText(data)
	oldS, newS := decodeText([]byte(in.OldString)), decodeText([]byte(in.NewString))
	n := strings.Count(content, oldS)
	switch {
	case n == 0:
		return Errorf("Error: old_string not found in %s", in.FilePath)
	case n > 1 && !in.ReplaceAll:
		return Errorf("Error: old_string appears %d times in %s. Set replace_all=true to replace all occurrences, or make old_string more specific.", n, in.FilePath)
	}
	var updated string
	if in.ReplaceAll {
		updated = strings.ReplaceAll(content, oldS, newS)
	} else {
		updated = strings.Replace(content, oldS, newS, 1)
	}
	out := updated
	if crlf {
		out = strings.ReplaceAll(updated, "\n", "\r\n")
	}
	if err := env.Backend.WriteFile(ctx, p, []byte(out)); err != nil {
		return backendError(ctx, "Edit", p, err)
	}
	return editResult(in, p, content, updated, n)
}

// editResult is Edit's report once the file at p, named in.FilePath by the
// model, has been rewritten from before to after; n is how many times
// old_string occurred.
func editResult(in EditInput, p, before, after string, n int) Stream {
	rel := strings.TrimPrefix(p, "/")
	what := "1 occurrence"
	if in.ReplaceAll {
		what = fmt.Sprintf("all %d occurrences", n)
	}
	occ := 1
	if in.ReplaceAll {
		occ = n
	}
	return Single(Chunk{
		Text: fmt.Sprintf("Successfully replaced %s in %s", what, in.FilePath),
		Metadata: map[string]any{
			"diff":        unifiedDiff("a/"+rel, "b/"+rel, before, after),
			"file_path":   p,
			"occurrences": occ,
		},
	})
}
