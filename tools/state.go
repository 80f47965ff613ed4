package tools

import "github.com/wardenhq/warden/calls"

// State is the per-turn tool state the workflow carries (calls.State).
type State = calls.State

// FileStamp identifies one version of a file (calls.FileStamp).
type FileStamp = calls.FileStamp

// TaskStatus is the lifecycle state of a task (calls.TaskStatus).
type TaskStatus = calls.TaskStatus

// The task statuses.
const (
	TaskPending    = calls.TaskPending
	TaskInProgress = calls.TaskInProgress
	TaskCompleted  = calls.TaskCompleted
	// TaskDeleted is only an input to TaskUpdate: it removes the task, so
	// no stored task has it.
	TaskDeleted = calls.TaskDeleted
)

// Task is one entry of the agent's task list (calls.Task).
type Task = calls.Task
