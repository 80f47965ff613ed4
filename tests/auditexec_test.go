package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// TestAuditExecutionOutcomes: a call whose tool activity fails (an
// infrastructure error, one attempt) and one whose activity runs past its
// start-to-close timeout are each a tool error the model reads, the turn
// goes on to its answer, and the audit records each call's execution as
// it ended: failed, timed_out, with the activity's message, after the
// record that says it ran. Control: a call of the same tool that
// succeeds ends with no such record.
func TestAuditExecutionOutcomes(t *testing.T) {
	flaky, err := tools.Func("flaky", "A tool whose backend is down.", func(_ context.Context, in struct {
		Fail bool `json:"fail"`
	}) (string, error) {
		if in.Fail {
			return "", tools.Retryable(errors.New("backend down"))
		}
		return "fine", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	hang, err := tools.Func("hang", "A tool that does not return in time.", func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Minute):
			return "late", nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	once := config.Retry{MaxAttempts: 1}
	cl := startWorker(t, warden.Options{Tools: []tools.Tool{flaky, hang}, ToolSettings: map[string]config.ToolSettings{
		"flaky": {Retry: once}, "hang": {Retry: once, Timeout: 2 * time.Second}}})
	ctx := ctxT(t, 2*time.Minute)
	s := script(t, `
steps:
  - tool_calls:
      - {id: f1, name: flaky, input: {fail: true}}
      - {id: f2, name: flaky, input: {fail: false}}
      - {id: h1, name: hang, input: {}}
  - text: done
`)
	id := "audit-exec-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: policy(t, permission.Policy{Allow: []string{"flaky", "hang"}})}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil || res.Answer != "done" {
		t.Fatalf("the turn: %+v, %v", res, err)
	}
	recs, err := audit.Workflow(ctx, env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	logRecords(t, recs)
	for call, want := range map[string]string{"f1": "failed", "h1": "timed_out"} {
		var ended []audit.Record
		for _, r := range recs {
			if r.CallID == call && r.Kind == audit.KindExecution {
				ended = append(ended, r)
			}
		}
		if len(ended) != 2 || ended[0].Decision == want || ended[1].Decision != want || ended[1].Reason == "" {
			t.Errorf("%s: execution records %+v, want the run and then %s with the activity's message", call, ended, want)
		}
	}
	if !strings.Contains(findRecordLast(t, recs, "f1").Reason, "backend down") {
		t.Errorf("f1: the failure's record does not carry the tool's error: %+v", findRecordLast(t, recs, "f1"))
	}
	for _, r := range recs {
		if r.CallID == "f2" && r.Kind == audit.KindExecution && (r.Decision == "failed" || r.Decision == "timed_out") {
			t.Errorf("control f2 (succeeded): %+v", r)
		}
	}
}

// findRecordLast returns the last execution record of a call.
func findRecordLast(t *testing.T, rs []audit.Record, call string) audit.Record {
	t.Helper()
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].CallID == call && rs[i].Kind == audit.KindExecution {
			return rs[i]
		}
	}
	t.Fatalf("no execution record of %s", call)
	return audit.Record{}
}
