// Package calls holds the values of a tool call as an agent turn's
// workflow handles them: a tool's description, its result, and the
// per-turn tool state. It imports nothing of warden's, so workflow code
// can use these values without linking the tools, their backends or the
// shell parser; package tools aliases them.
package calls

import (
	"encoding/json"
	"maps"
	"path"
	"time"
)

// Info describes a tool to the model and to the engine.
type Info struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	// ReadOnly is the static read-only flag (CheckReadOnly's default).
	ReadOnly bool `json:"read_only"`
	// ConcurrencySafe calls may run in parallel with each other.
	ConcurrencySafe bool `json:"concurrency_safe"`
	// External tools have no Call: their result comes from outside the
	// worker (a client completes them).
	External bool `json:"external"`
	// StateInjected tools read and write the turn's State.
	StateInjected bool `json:"state_injected"`
}

// Entry is a tool as a worker's registry holds it: its description and
// where it comes from. In JSON, Info's fields and "source" sit side by
// side.
type Entry struct {
	Info
	// Source is "builtin", "function", "mcp:SERVER" (the server's config
	// name) or "custom" (a Tool of the embedding program's own type);
	// package tools defines the constants.
	Source string `json:"source"`
}

// Chunk is one piece of a tool's output.
type Chunk struct {
	Text    string `json:"text,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	// Data carries non-text blocks (images, documents).
	Data []DataBlock `json:"data,omitempty"`
	// Metadata is merged into the result's metadata.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// DataBlock is a binary block, base64 in JSON.
type DataBlock struct {
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
}

// ResultState is the final state of a tool call.
type ResultState string

// The result states.
const (
	StateSuccess     ResultState = "success"
	StateError       ResultState = "error"
	StateDenied      ResultState = "denied"
	StateInterrupted ResultState = "interrupted"
)

// Result is the accumulated outcome of one tool call, as the model sees it.
type Result struct {
	CallID   string         `json:"call_id"`
	Name     string         `json:"name"`
	Content  string         `json:"content"`
	IsError  bool           `json:"is_error,omitempty"`
	State    ResultState    `json:"state"`
	Data     []DataBlock    `json:"data,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	// Ref, when set, names the full content in the turn's content store;
	// Content is then a preview and Size the full length in bytes.
	Ref  string `json:"ref,omitempty"`
	Size int    `json:"size,omitempty"`
}

// Append folds a chunk into the result: text concatenates, an error
// sticks once set, data blocks accumulate and metadata merges.
func (r *Result) Append(c Chunk) {
	r.Content += c.Text
	if c.IsError {
		r.IsError = true
		r.State = StateError
	}
	r.Data = append(r.Data, c.Data...)
	if len(c.Metadata) > 0 {
		if r.Metadata == nil {
			r.Metadata = map[string]any{}
		}
		maps.Copy(r.Metadata, c.Metadata)
	}
	if r.State == "" {
		r.State = StateSuccess
	}
}

// State is the per-turn tool state the workflow carries: what was read
// (for read-before-write) and the task list. It is a plain value that
// serialises to JSON, so it survives continue-as-new and crosses hosts.
type State struct {
	// Reads maps an absolute path to its size and modification time at the
	// last Read, as reported by the backend.
	Reads map[string]FileStamp `json:"reads,omitempty"`
	// Tasks is the agent's task list, in creation order.
	Tasks []Task `json:"tasks,omitempty"`
}

// FileStamp identifies one version of a file.
type FileStamp struct {
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
}

// TaskStatus is the lifecycle state of a task.
type TaskStatus string

// The task statuses.
const (
	TaskPending    TaskStatus = "pending"
	TaskInProgress TaskStatus = "in_progress"
	TaskCompleted  TaskStatus = "completed"
	// TaskDeleted is only an input to TaskUpdate: it removes the task, so
	// no stored task has it.
	TaskDeleted TaskStatus = "deleted"
)

// Task is one entry of the agent's task list.
type Task struct {
	ID          string         `json:"id"`
	Subject     string         `json:"subject"`
	Description string         `json:"description,omitempty"`
	Status      TaskStatus     `json:"status"`
	Owner       string         `json:"owner,omitempty"`
	Blocks      []string       `json:"blocks,omitempty"`
	BlockedBy   []string       `json:"blocked_by,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	// CreatedAt is when TaskCreate made the task (worker clock).
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// Anticipate returns s as a call of the tool named tool with input will
// leave it, as far as the input checks that read the state can tell: a
// Read records its file (with an unknown stamp, which only the check
// that the file was read at all looks past). The calls of one model step
// are decided together before any of them runs; deciding each with the
// state anticipated from the calls before it keeps a Read followed by an
// Edit of the same file in one step from being rejected. s is not
// changed.
func (s State) Anticipate(tool string, input json.RawMessage) State {
	if tool != "Read" {
		return s
	}
	var in readInput
	if err := json.Unmarshal(input, &in); err != nil || !path.IsAbs(in.FilePath) {
		return s
	}
	p := path.Clean(in.FilePath)
	if _, ok := s.Reads[p]; ok {
		return s
	}
	s.Reads = maps.Clone(s.Reads)
	if s.Reads == nil {
		s.Reads = map[string]FileStamp{}
	}
	s.Reads[p] = FileStamp{Size: -1}
	return s
}

// readInput is the part of the Read tool's input (tools.ReadInput)
// Anticipate decodes; it must decode exactly as tools.ReadInput does
// (tools' TestAnticipateDecodesAsReadInput checks the two agree).
type readInput struct {
	FilePath string `json:"file_path"`
	Offset   int    `json:"offset,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	Pages    string `json:"pages,omitempty"`
}
