package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wardenhq/warden/permission"
)

// The task tools keep the agent's task list in the turn's State. They
// always run (permission ALLOW) and may run concurrently with each other
// because the workflow serialises state updates per activity.

// TaskCreate adds a task to the task list.
type TaskCreate struct{}

// TaskGet shows one task.
type TaskGet struct{}

// TaskList lists all tasks.
type TaskList struct{}

// TaskUpdate changes or deletes a task.
type TaskUpdate struct{}

// TaskCreateInput is TaskCreate's input.
type TaskCreateInput struct {
	Subject     string         `json:"subject" jsonschema_description:"A brief title for the task, in imperative form."`
	Description string         `json:"description" jsonschema_description:"What needs to be done, in detail."`
	Metadata    map[string]any `json:"metadata,omitempty" jsonschema_description:"Arbitrary metadata to attach to the task."`
}

func (in TaskCreateInput) check() string {
	if strings.TrimSpace(in.Subject) == "" {
		return "CreateTaskError: subject must not be empty"
	}
	return ""
}

// TaskGetInput is TaskGet's input.
type TaskGetInput struct {
	TaskID string `json:"task_id" jsonschema_description:"The id of the task."`
}

// TaskListInput is TaskList's input: it takes none.
type TaskListInput struct{}

// TaskUpdateInput is TaskUpdate's input. Nil fields are left unchanged.
type TaskUpdateInput struct {
	TaskID       string         `json:"task_id" jsonschema_description:"The id of the task to update."`
	Subject      string         `json:"subject,omitempty" jsonschema_description:"New subject."`
	Description  *string        `json:"description,omitempty" jsonschema_description:"New description."`
	Status       TaskStatus     `json:"status,omitempty" jsonschema:"enum=pending,enum=in_progress,enum=completed,enum=deleted" jsonschema_description:"New status; deleted removes the task."`
	AddBlocks    []string       `json:"add_blocks,omitempty" jsonschema_description:"Ids of tasks this task blocks."`
	AddBlockedBy []string       `json:"add_blocked_by,omitempty" jsonschema_description:"Ids of tasks that block this task."`
	Owner        *string        `json:"owner,omitempty" jsonschema_description:"New owner."`
	Metadata     map[string]any `json:"metadata,omitempty" jsonschema_description:"Metadata to merge; a null value deletes the key."`
}

func (in TaskUpdateInput) check() string {
	switch in.Status {
	case "", TaskPending, TaskInProgress, TaskCompleted, TaskDeleted:
		return ""
	}
	return fmt.Sprintf("Error: invalid status %q: want pending, in_progress, completed or deleted", in.Status)
}

func taskInfo(name, desc string, schema json.RawMessage) Info {
	return Info{Name: name, Description: desc, InputSchema: schema, ConcurrencySafe: true, StateInjected: true}
}

func allowTask() (permission.Decision, error) {
	return permission.Decision{Behavior: permission.Allow, Message: "Task tools are always permitted."}, nil
}

const noState = "Error: the task list is not available in this call (no turn state)."

// The input schemas, derived from the input structs once.
var (
	taskCreateSchema = builtinSchema[TaskCreateInput]()
	taskGetSchema    = builtinSchema[TaskGetInput]()
	taskListSchema   = builtinSchema[TaskListInput]()
	taskUpdateSchema = builtinSchema[TaskUpdateInput]()
)

// Info implements Tool.
func (TaskCreate) Info() Info {
	return taskInfo("TaskCreate", "Create a task in the task list to track work. New tasks start as pending.", taskCreateSchema())
}

// CheckPermissions implements PermissionChecker: always allowed.
func (TaskCreate) CheckPermissions(context.Context, *Env, json.RawMessage, *permission.Context) (permission.Decision, error) {
	return allowTask()
}

// Call implements Tool.
func (TaskCreate) Call(_ context.Context, env *Env, input json.RawMessage) Stream {
	if env.State == nil {
		return Errorf("CreateTaskError: %s", noState)
	}
	in, err := parseInput[TaskCreateInput]("TaskCreate", input)
	if err != nil {
		return invalid(err)
	}
	next := 1
	for _, t := range env.State.Tasks {
		if n, err := strconv.Atoi(t.ID); err == nil && n >= next {
			next = n + 1
		}
	}
	t := Task{
		ID: strconv.Itoa(next), Subject: in.Subject, Description: in.Description,
		Status: TaskPending, Metadata: in.Metadata, CreatedAt: time.Now().UTC(),
	}
	env.State.Tasks = append(env.State.Tasks, t)
	return Single(Chunk{Text: fmt.Sprintf("Task (id=%s) created successfully: %s", t.ID, t.Subject),
		Metadata: map[string]any{"task_id": t.ID}})
}

// Info implements Tool.
func (TaskGet) Info() Info {
	return taskInfo("TaskGet", "Show one task with its status, description, owner and dependencies.", taskGetSchema())
}

// CheckPermissions implements PermissionChecker: always allowed.
func (TaskGet) CheckPermissions(context.Context, *Env, json.RawMessage, *permission.Context) (permission.Decision, error) {
	return allowTask()
}

// Call implements Tool.
func (TaskGet) Call(_ context.Context, env *Env, input json.RawMessage) Stream {
	in, err := parseInput[TaskGetInput]("TaskGet", input)
	if err != nil {
		return invalid(err)
	}
	if env.State == nil {
		return Errorf("%s", noState)
	}
	i := findTask(env.State, in.TaskID)
	if i < 0 {
		return Errorf("Task not found")
	}
	t := env.State.Tasks[i]
	var b strings.Builder
	fmt.Fprintf(&b, "Task (id=%s): %s\nStatus: %s\nDescription: %s", t.ID, t.Subject, t.Status, t.Description)
	if t.Owner != "" {
		fmt.Fprintf(&b, "\nOwner: %s", t.Owner)
	}
	if len(t.BlockedBy) > 0 {
		fmt.Fprintf(&b, "\nBlocked by: %s", hashIDs(t.BlockedBy))
	}
	if len(t.Blocks) > 0 {
		fmt.Fprintf(&b, "\nBlocks: %s", hashIDs(t.Blocks))
	}
	if len(t.Metadata) > 0 {
		m, _ := json.Marshal(t.Metadata)
		fmt.Fprintf(&b, "\nMetadata: %s", m)
	}
	return Single(Chunk{Text: b.String()})
}

// Info implements Tool.
func (TaskList) Info() Info {
	return taskInfo("TaskList", "List all tasks with their status, owner and blockers.", taskListSchema())
}

// CheckPermissions implements PermissionChecker: always allowed.
func (TaskList) CheckPermissions(context.Context, *Env, json.RawMessage, *permission.Context) (permission.Decision, error) {
	return allowTask()
}

// Call implements Tool.
func (TaskList) Call(_ context.Context, env *Env, _ json.RawMessage) Stream {
	if env.State == nil {
		return Errorf("%s", noState)
	}
	if len(env.State.Tasks) == 0 {
		return Single(Chunk{Text: "No tasks available."})
	}
	lines := make([]string, 0, len(env.State.Tasks))
	for _, t := range env.State.Tasks {
		l := fmt.Sprintf("%s [%s] %s", t.ID, t.Status, t.Subject)
		if t.Owner != "" {
			l += fmt.Sprintf(" (%s)", t.Owner)
		}
		if len(t.BlockedBy) > 0 {
			l += fmt.Sprintf(" [blocked by %s]", strings.Join(t.BlockedBy, ", "))
		}
		lines = append(lines, l)
	}
	return Single(Chunk{Text: strings.Join(lines, "\n")})
}

// Info implements Tool.
func (TaskUpdate) Info() Info {
	return taskInfo("TaskUpdate",
		"Update a task: subject, description, status (pending, in_progress, completed, or deleted to remove it), "+
			"owner, metadata, and dependencies (add_blocks, add_blocked_by).", taskUpdateSchema())
}

// CheckPermissions implements PermissionChecker: always allowed.
func (TaskUpdate) CheckPermissions(context.Context, *Env, json.RawMessage, *permission.Context) (permission.Decision, error) {
	return allowTask()
}

// Call implements Tool.
func (TaskUpdate) Call(_ context.Context, env *Env, input json.RawMessage) Stream {
	in, err := parseInput[TaskUpdateInput]("TaskUpdate", input)
	if err != nil {
		return invalid(err)
	}
	if env.State == nil {
		return Errorf("%s", noState)
	}
	s := env.State
	i := findTask(s, in.TaskID)
	if i < 0 {
		return Errorf("TaskNotFoundError: The task (id=%s) does not exist.", in.TaskID)
	}
	var updated []string
	if in.Subject != "" {
		s.Tasks[i].Subject = in.Subject
		updated = append(updated, "subject")
	}
	if in.Description != nil {
		s.Tasks[i].Description = *in.Description
		updated = append(updated, "description")
	}
	if addRelations(s, i, in.AddBlocks, true) {
		updated = append(updated, "blocks")
	}
	if addRelations(s, i, in.AddBlockedBy, false) {
		updated = append(updated, "blocked_by")
	}
	if in.Status == TaskDeleted {
		id := deleteTask(s, i)
		return Single(Chunk{Text: fmt.Sprintf("Task (id=%s) has been deleted.", id)})
	}
	if in.Status != "" {
		s.Tasks[i].Status = in.Status
		updated = append(updated, "status")
	}
	if in.Owner != nil {
		s.Tasks[i].Owner = *in.Owner
		updated = append(updated, "owner")
	}
	if in.Metadata != nil {
		s.Tasks[i].Metadata = mergeMetadata(s.Tasks[i].Metadata, in.Metadata)
		updated = append(updated, "metadata")
	}
	t := s.Tasks[i]
	return Single(Chunk{Text: taskUpdateText(t, updated), Metadata: map[string]any{"task_id": t.ID, "updated_fields": updated}})
}

// deleteTask removes task i from s, drops every blocks and blocked-by
// reference to it from the other tasks, and returns its id.
func deleteTask(s *State, i int) string {
	id := s.Tasks[i].ID
	s.Tasks = slices.Delete(s.Tasks, i, i+1)
	for k := range s.Tasks {
		s.Tasks[k].Blocks = slices.DeleteFunc(s.Tasks[k].Blocks, func(x string) bool { return x == id })
		s.Tasks[k].BlockedBy = slices.DeleteFunc(s.Tasks[k].BlockedBy, func(x string) bool { return x == id })
	}
	return id
}

// mergeMetadata returns a copy of old with patch applied in key order: a nil
// value deletes its key, any other value sets it.
func mergeMetadata(old, patch map[string]any) map[string]any {
	m := maps.Clone(old)
	if m == nil {
		m = map[string]any{}
	}
	keys := slices.Collect(maps.Keys(patch))
	sort.Strings(keys)
	for _, k := range keys {
		if v := patch[k]; v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

// taskUpdateText is the text TaskUpdate reports for task t after changing the
// named fields.
func taskUpdateText(t Task, updated []string) string {
	var text string
	if len(updated) == 0 {
		text = fmt.Sprintf("No updates were made to task (id=%s).", t.ID)
	} else {
		text = fmt.Sprintf("Update task (id=%s) %s.", t.ID, strings.Join(updated, ", "))
	}
	if t.Status == TaskCompleted {
		text += "\n\nTask completed. Call TaskList now to find your next available task or to see if your work unblocked others."
	}
	return text
}

func findTask(s *State, id string) int {
	return slices.IndexFunc(s.Tasks, func(t Task) bool { return t.ID == id })
}

// addRelations links task i with each existing, not yet linked id:
// blocks=true means task i blocks them; both sides are updated. It
// reports whether anything changed.
func addRelations(s *State, i int, ids []string, blocks bool) bool {
	changed := false
	for _, id := range ids {
		j := findTask(s, id)
		if j < 0 || j == i {
			continue
		}
		from, to := &s.Tasks[i], &s.Tasks[j]
		if !blocks {
			from, to = to, from
		}
		if slices.Contains(from.Blocks, to.ID) {
			continue
		}
		from.Blocks = append(from.Blocks, to.ID)
		if !slices.Contains(to.BlockedBy, from.ID) {
			to.BlockedBy = append(to.BlockedBy, from.ID)
		}
		changed = true
	}
	return changed
}

func hashIDs(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "#" + id
	}
	return strings.Join(out, ", ")
}
