package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/permission"
)

// Write creates or overwrites a file on the call's backend. Overwriting
// needs a Read of the file in this turn with no change since. Its
// permission checks are the path rules on the file it writes.
type Write struct{}

// WriteInput is Write's input.
type WriteInput struct {
	FilePath string `json:"file_path" jsonschema:"pattern=^/" jsonschema_description:"The absolute path to the file to write (must be absolute, not relative)."`
	Content  string `json:"content" jsonschema_description:"The content to write to the file."`
}

func (in WriteInput) check() string {
	_, msg := checkFilePath(in.FilePath)
	return msg
}

// writeSchema is the input schema, derived from the input struct once.
var writeSchema = builtinSchema[WriteInput]()

// Info implements Tool.
func (Write) Info() Info {
	return Info{
		Name: "Write",
		Description: "Write a file to the workspace, creating parent directories. file_path must be absolute. " +
			"Overwriting an existing file requires reading it with the Read tool first in this turn. " +
			"Prefer Edit for changes to existing files.",
		InputSchema:   writeSchema(),
		StateInjected: true,
	}
}

// CheckInput implements InputChecker. Whether the file must have been
// read first depends on whether it exists, which only Call can tell.
func (Write) CheckInput(_ context.Context, _ *Env, input json.RawMessage) error {
	return checkInput[WriteInput]("Write", input)
}

// CheckPermissions implements PermissionChecker (spec §1.4).
func (Write) CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	in, err := decodeInput[WriteInput]("Write", input)
	if err != nil {
		return permission.Decision{}, err
	}
	return paths(env, pc).CheckEdit("Write", in.FilePath)
}

// MatchRule implements RuleMatcher: a glob on file_path.
func (Write) MatchRule(_ context.Context, env *Env, content string, input json.RawMessage) (bool, error) {
	in, err := decodeInput[WriteInput]("Write", input)
	if err != nil {
		return false, err
	}
	return matchPath(env, content, absPath(env, in.FilePath))
}

// GenerateSuggestions implements Suggester: the parent directory.
func (Write) GenerateSuggestions(_ context.Context, env *Env, input json.RawMessage) ([]permission.Rule, error) {
	in, err := decodeInput[WriteInput]("Write", input)
	if err != nil {
		return nil, err
	}
	return fileSuggestion("Write", env, in.FilePath), nil
}

// Call implements Tool.
func (Write) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	in, err := parseInput[WriteInput]("Write", input)
	if err != nil {
		return invalid(err)
	}
	p := path.Clean(in.FilePath)
	var old string
	exists := false
	fi, err := env.Backend.Stat(ctx, p)
	switch {
	case errors.Is(err, backend.ErrNotExist):
	case err != nil:
		return backendError(ctx, "Write", p, err)
	case fi.IsDir:
		return Errorf("Error: Path is a directory, not a file: %s", in.FilePath)
	case fi.Size > FileMaxBytes:
		return tooLarge(p, fi.Size)
	default:
		exists = true
		if !readFresh(env, p, fi) {
			return Errorf("Error: File %s exists but has not been read yet. You must read the file first before writing to it.", in.FilePath)
		}
		data, err := backend.ReadFileLimit(ctx, env.Backend, p, FileMaxBytes)
		if err != nil {
			return backendError(ctx, "Write", p, err)
		}
		old = decodeText(data)
	}
	if err := env.Backend.WriteFile(ctx, p, []byte(in.Content)); err != nil {
		return backendError(ctx, "Write", p, err)
	}
	from := "a/" + strings.TrimPrefix(p, "/")
	if !exists {
		from = "/dev/null"
	}
	diff := unifiedDiff(from, "b/"+strings.TrimPrefix(p, "/"), old, decodeText([]byte(in.Content)))
	n := len(strings.Split(in.Content, "\n"))
	return Single(Chunk{
		Text:     fmt.Sprintf("The file %s has been written successfully (%d lines).", in.FilePath, n),
		Metadata: map[string]any{"diff": diff, "file_path": p, "occurrences": 1},
	})
}
