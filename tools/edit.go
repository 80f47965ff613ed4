package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/wardenhq/warden/backend"
)

// Edit replaces exact text in a file the model has read in this turn.
// Its permission checks live in perm_edit.go.
type Edit struct{}

// EditInput is Edit's input.
type EditInput struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

var editSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "pattern": "^/", "description": "The absolute path to the file to modify."},
    "old_string": {"type": "string", "description": "The exact text to replace."},
    "new_string": {"type": "string", "description": "The text to replace it with (must differ from old_string)."},
    "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence of old_string (default false)."}
  },
  "required": ["file_path", "old_string", "new_string"],
  "additionalProperties": false
}`)

// Info implements Tool.
func (Edit) Info() Info {
	return Info{
		Name: "Edit",
		Description: "Replace exact text in a file. You must Read the file in this turn first. " +
			"old_string must match the file exactly (without the line-number prefix Read adds) and be unique, " +
			"unless replace_all is true.",
		InputSchema:   editSchema,
		StateInjected: true,
	}
}

// Call implements Tool.
func (Edit) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	var in EditInput
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("Invalid input for Edit: %v", err)
	}
	p, msg := checkFilePath(in.FilePath)
	if msg != "" {
		return Errorf("%s", msg)
	}
	fi, err := env.Backend.Stat(ctx, p)
	switch {
	case errors.Is(err, backend.ErrNotExist):
		return Errorf("Error: File not found: %s", in.FilePath)
	case err != nil:
		return backendError(ctx, "Edit", p, err)
	case fi.IsDir:
		return Errorf("Error: Path is a directory, not a file: %s", in.FilePath)
	}
	if in.OldString == in.NewString {
		return Errorf("Error: old_string and new_string are identical. No changes to make.")
	}
	if in.OldString == "" {
		return Errorf("Error: old_string must not be empty. To create or overwrite a whole file, use the Write tool.")
	}
	if !readFresh(env, p, fi) {
		return Errorf("Error: To edit a file, you must first read it using the Read tool.")
	}
	data, err := env.Backend.ReadFile(ctx, p)
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
			"diff":        unifiedDiff("a/"+rel, "b/"+rel, content, updated),
			"file_path":   p,
			"occurrences": occ,
		},
	})
}
