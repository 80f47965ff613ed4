package tools

import "time"

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
