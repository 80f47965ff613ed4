package tools

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"strings"

	"github.com/wardenhq/warden/backend"
)

// MaxPreviewBytes bounds a Preview: a larger diff is cut and says so.
const MaxPreviewBytes = 8 << 10

// Preview returns what a file call would change, as a unified diff
// against the file as it is now: a Write against the existing file (or
// /dev/null), an Edit with its replacement applied. It is what a human
// asked to approve the call should look at, computed on the call's own
// backend. Other tools, calls that would fail, and files that cannot be
// read give "" (the approver then sees the input).
func Preview(ctx context.Context, env *Env, tool string, input json.RawMessage) string {
	var p, old, next string
	switch tool {
	case "Write":
		in, err := decodeInput[WriteInput](tool, input)
		if err != nil || !path.IsAbs(in.FilePath) {
			return ""
		}
		p = path.Clean(in.FilePath)
		data, err := backend.ReadFileLimit(ctx, env.Backend, p, FileMaxBytes)
		switch {
		case errors.Is(err, backend.ErrNotExist):
			return cutPreview(unifiedDiff("/dev/null", "b/"+strings.TrimPrefix(p, "/"), "", decodeText([]byte(in.Content))))
		case err != nil:
			return ""
		}
		old, next = decodeText(data), decodeText([]byte(in.Content))
	case "Edit":
		in, err := decodeInput[EditInput](tool, input)
		if err != nil || !path.IsAbs(in.FilePath) || in.OldString == "" {
			return ""
		}
		p = path.Clean(in.FilePath)
		data, err := backend.ReadFileLimit(ctx, env.Backend, p, FileMaxBytes)
		if err != nil {
			return ""
		}
		old = decodeText(data)
		n := strings.Count(old, in.OldString)
		switch {
		case n == 0 || n > 1 && !in.ReplaceAll:
			return ""
		case in.ReplaceAll:
			next = strings.ReplaceAll(old, in.OldString, in.NewString)
		default:
			next = strings.Replace(old, in.OldString, in.NewString, 1)
		}
	default:
		return ""
	}
	name := strings.TrimPrefix(p, "/")
	return cutPreview(unifiedDiff("a/"+name, "b/"+name, old, next))
}

// cutPreview bounds a diff to MaxPreviewBytes on a line boundary.
func cutPreview(d string) string {
	if len(d) <= MaxPreviewBytes {
		return d
	}
	d = d[:MaxPreviewBytes]
	if i := strings.LastIndexByte(d, '\n'); i > 0 {
		d = d[:i+1]
	}
	return d + "… (diff cut at 8 KiB)\n"
}
