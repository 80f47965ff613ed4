package tools

import (
	"encoding/json"
	"maps"
	"path"
	"time"
)

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
	in, err := decodeInput[ReadInput](tool, input)
	if err != nil || !path.IsAbs(in.FilePath) {
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
