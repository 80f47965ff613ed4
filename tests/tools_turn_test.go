package tests

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver the embedded server uses

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/devserver"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// TestTaskToolsAndBadInputsInTurn drives the Task tools through the real
// server, and checks that bad inputs and a missing PowerShell become tool
// errors the model reads while the turn goes on.
func TestTaskToolsAndBadInputsInTurn(t *testing.T) {
	cl := startWorker(t, warden.Options{})
	ctx := ctxT(t, 60*time.Second)
	huge := strings.Repeat("x", 200000)
	s := script(t, fmt.Sprintf(`
steps:
  - tool_calls:
      - {name: TaskCreate, input: {subject: "write tests", description: "cover the tools"}}
      - {name: TaskCreate, input: {subject: "ship", description: "release"}}
  - tool_calls:
      - {name: TaskUpdate, input: {task_id: "1", status: in_progress, add_blocks: ["2"]}}
      - {name: TaskGet, input: {task_id: "2"}}
      - {name: TaskList, input: {}}
  - tool_calls:
      - {name: Read, input: {file_path: 42}}
      - {name: Edit, input: {file_path: "/tmp/x"}}
      - {name: Read, input: {file_path: "/tmp/a\u0000b"}}
      - {name: Grep, input: {pattern: %q}}
      - {name: NoSuchTool, input: {}}
      - {name: PowerShell, input: {command: "Get-Date"}}
  - text: done
`, huge+"("))
	id := "tasks-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "done" {
		t.Fatalf("answer = %q", res.Answer)
	}
	rs := toolResults(res)
	if len(rs) != 11 {
		t.Fatalf("%d results: %+v", len(rs), rs)
	}
	want := []struct {
		err  bool
		text string
	}{
		{false, "created successfully: write tests"},
		{false, "created successfully: ship"},
		{false, "Update task (id=1)"},
		{false, "Blocked by: #1"},
		{false, "[in_progress] write tests"},
		{true, "at '/file_path'"},
		{true, "Input validation failed for tool 'Edit'"},
		{true, "NUL"},
		{true, "the limit is 16384"},
		{true, "ToolNotFoundError"},
		{true, "PowerShell"},
	}
	for i, w := range want {
		if rs[i].IsError != w.err || !strings.Contains(rs[i].Content, w.text) {
			t.Errorf("result %d (%s): error=%v %q; want error=%v containing %q", i, rs[i].ToolName, rs[i].IsError, rs[i].Content, w.err, w.text)
		}
	}
	if len(res.State.Tasks) != 2 || res.State.Tasks[0].Status != "in_progress" {
		t.Errorf("task list = %+v", res.State.Tasks)
	}
}

// TestSQLitePragmasInEffect checks on the server's own database file that
// the WAL journal the embedded server asks for is really in effect (a
// misspelt pragma is ignored silently).
func TestSQLitePragmasInEffect(t *testing.T) {
	dir := t.TempDir()
	srv, err := devserver.Start(ctxT(t, 60*time.Second), devserver.Options{DataDir: dir, Namespace: "default", LogLevel: "error"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	db, err := sql.Open("sqlite", filepath.Join(dir, "temporal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
}
