package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/wardenhq/warden/backend"
)

// Write creates or overwrites a file on the call's backend. Overwriting
// needs a Read of the file in this turn with no change since. Its
// permission checks live in perm_write.go.
type Write struct{}

// WriteInput is Write's input.
type WriteInput struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

var writeSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "pattern": "^/", "description": "The absolute path to the file to write (must be absolute, not relative)."},
    "content": {"type": "string", "description": "The content to write to the file."}
  },
  "required": ["file_path", "content"],
  "additionalProperties": false
}`)

// Info implements Tool.
func (Write) Info() Info {
	return Info{
		Name: "Write",
		Description: "Write a file to the workspace, creating parent directories. file_path must be absolute. " +
			"Overwriting an existing file requires reading it with the Read tool first in this turn. " +
			"Prefer Edit for changes to existing files.",
		InputSchema:   writeSchema,
		StateInjected: true,
	}
}

// Call implements Tool.
func (Write) Call(ctx context.Context, env *Env, input json.RawMessage) Stream {
	var in WriteInput
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("Invalid input for Write: %v", err)
	}
	p, msg := checkFilePath(in.FilePath)
	if msg != "" {
		return Errorf("%s", msg)
	}
	var old string
	exists := false
	fi, err := env.Backend.Stat(ctx, p)
	switch {
	case errors.Is(err, backend.ErrNotExist):
	case err != nil:
		return backendError(ctx, "Write", p, err)
	case fi.IsDir:
		return Errorf("Error: Path is a directory, not a file: %s", in.FilePath)
	default:
		exists = true
		if !readFresh(env, p, fi) {
			return Errorf("Error: File %s exists but has not been read yet. You must read the file first before writing to it.", in.FilePath)
		}
		data, err := env.Backend.ReadFile(ctx, p)
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
