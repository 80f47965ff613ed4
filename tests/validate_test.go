package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/workflows"
)

// TestInvalidCallsNeverAsk: calls that cannot succeed whatever a human
// says (a relative Write path, an Edit missing a field, an Edit of a
// file never read in the turn) become tool errors the model reads at
// once, in default mode where any write would otherwise ask; an Edit of
// a file read earlier in the same step still asks.
func TestInvalidCallsNeverAsk(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 60*time.Second)
	file := filepath.Join(workdir, "notes.txt")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := script(t, fmt.Sprintf(`steps:
  - tool_calls:
      - {id: rel, name: Write, input: {file_path: "notes2.txt", content: "x"}}
      - {id: bad, name: Edit, input: {file_path: %q, old_string: "hello"}}
      - {id: unread, name: Edit, input: {file_path: %q, old_string: "hello", new_string: "bye"}}
  - tool_calls:
      - {id: read, name: Read, input: {file_path: %q}}
      - {id: edit, name: Edit, input: {file_path: %q, old_string: "hello", new_string: "bye"}}
  - text: done
`, file, file, file, file))
	id := "validate-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	// Only the Edit after its Read asks.
	ps := waitPending(t, cl, id, 1)
	if ps[0].CallID != "edit" {
		t.Fatalf("pending = %+v, want only the edit of the file read in the same step", ps)
	}
	if _, err := cl.ApproveListed(ctx, id, ps[0], workflows.Approval{Decision: workflows.DecisionAllow}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"rel": "does not match pattern '^/'", "bad": "missing property 'new_string'", "unread": "must first read it"}
	for _, r := range toolResults(res) {
		if w, ok := want[r.ToolCallID]; ok {
			if !strings.Contains(r.Content, w) {
				t.Errorf("%s: %q, want an error containing %q", r.ToolCallID, r.Content, w)
			}
			delete(want, r.ToolCallID)
		}
	}
	if len(want) != 0 {
		t.Errorf("no results for %v", want)
	}
	if b, _ := os.ReadFile(file); string(b) != "bye\n" {
		t.Errorf("file = %q, want the approved edit", b)
	}
}
