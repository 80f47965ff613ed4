package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// TestPrepareMarkersRecordToolFlags: the Prepare markers of a new turn
// record the verdict with only the tool's flags the workflow reads, not
// its description and schema, and the turn still acts on them: an
// AskUser question waits for its answer (external), two Reads run.
func TestPrepareMarkersRecordToolFlags(t *testing.T) {
	workdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(workdir, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 60*time.Second)
	s := script(t, fmt.Sprintf(`
steps:
  - tool_calls:
      - {id: r1, name: Read, input: {file_path: %[1]q}}
      - {id: r2, name: Read, input: {file_path: %[1]q}}
  - tool_calls:
      - id: q1
        name: AskUser
        input:
          questions:
            - question: "Which environment?"
              header: "Env"
              options: [{label: staging, description: "safe"}, {label: prod, description: "careful"}]
  - text: done
`, filepath.Join(workdir, "a.txt")))
	id := "prepare-flags-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	if ps[0].CallID != "q1" || ps[0].Kind != workflows.PendingExternal {
		t.Fatalf("pending = %+v, want q1 waiting for an external result", ps)
	}
	if _, err := cl.AnswerAskUser(ctx, id, "q1", tools.AskUserAnswer{Answers: []tools.AskUserQuestionAnswer{{Question: "Which environment?", Selected: []string{"staging"}}}}, "carol"); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rs := toolResults(res); len(rs) != 3 || rs[0].IsError || rs[1].IsError || !strings.Contains(rs[2].Content, "staging") {
		t.Fatalf("tool results = %+v", rs)
	}
	flags := map[string]workflows.ToolFlags{}
	for _, e := range history(t, id) {
		m := e.GetMarkerRecordedEventAttributes()
		if m.GetMarkerName() != "LocalActivity" || m.GetDetails()["result"] == nil {
			continue
		}
		var d struct{ ActivityType string }
		if err := json.Unmarshal(m.GetDetails()["data"].GetPayloads()[0].GetData(), &d); err != nil {
			t.Fatal(err)
		}
		if d.ActivityType != workflows.ActivityPrepare {
			continue
		}
		raw := m.GetDetails()["result"].GetPayloads()[0].GetData()
		var p map[string]json.RawMessage
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		if _, ok := p["tool"]; ok {
			t.Errorf("Prepare marker records the tool's Info: %s", raw)
		}
		var prep workflows.Prepared
		if err := json.Unmarshal(raw, &prep); err != nil || prep.Flags == nil {
			t.Fatalf("Prepare marker without flags (%v): %s", err, raw)
		}
		flags[prep.Decision.Message] = *prep.Flags
		t.Logf("Prepare result, %d bytes: %s", len(raw), raw)
	}
	var external, safe int
	for _, f := range flags {
		if f.External {
			external++
		}
		if f.ConcurrencySafe {
			safe++
		}
	}
	if len(flags) < 2 || external != 1 || safe < 1 {
		t.Fatalf("flags by verdict = %+v, want AskUser's external and Read's concurrency-safe", flags)
	}
}
