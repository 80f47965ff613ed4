package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/activities"
	"github.com/wardenhq/warden/chat"
	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/notify"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// recordRolesScenario records a turn whose approvers have roles, on a
// worker with webhooks (a route by role) and Slack: each waiting call's
// notifications and message route by the roles that cover it (computed
// once per entry, a side effect); kube, whose role covers k1, allows it
// by signal (its check a side effect); bob, without roles, denies k2 by
// Update. It returns the workflow id; save is saveHistory
// (TestRoleChecksNotReplayed passes one that saves nothing).
func recordRolesScenario(t *testing.T, ctx context.Context, save func(*testing.T, string, string)) string {
	t.Helper()
	def := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}}
	kube := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}}
	ds, ks := httptest.NewServer(def), httptest.NewServer(kube)
	t.Cleanup(ds.Close)
	t.Cleanup(ks.Close)
	slack := httptest.NewServer(&slackStandIn{})
	t.Cleanup(slack.Close)
	cl := startWorkerOn(t, "tq-"+t.Name()+"-roles", warden.Options{Workdir: t.TempDir(),
		Notifier: &notify.Sender{URLs: []string{ds.URL}, Secret: hookSecret,
			Routes: []notify.Route{{Match: notify.Match{Role: "k8s"}, Webhooks: []string{ks.URL}}}},
		Chat: &activities.Chat{Service: chat.New("xoxb-record", slack.URL, nil), Channel: "C0RECORD"}})
	s := script(t, `
steps:
  - tool_calls:
      - {id: k1, name: Bash, input: {command: "kubectl get pods"}}
      - {id: k2, name: Bash, input: {command: "touch not-kube"}}
  - text: done
`)
	id := "roles-record-" + recordGeneration + "-" + fmt.Sprint(time.Now().UnixNano())
	approvers := &workflows.Approvers{Users: map[string][]string{"bob": nil, "kube": {"k8s"}},
		Roles: map[string][]string{"k8s": {"Bash(kubectl:*)"}, "web": {"Write"}}}
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Approvers: approvers}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 2)
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "k1", Decision: workflows.DecisionAllow, By: "kube", Hash: hashOf(t, cl, id, "k1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "k2", Decision: workflows.DecisionDeny, Reason: "no", By: "bob", Hash: hashOf(t, cl, id, "k2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	// k1's requested and answered notifications name the role that
	// covers it and went by it; k2's, covered by none, to the default.
	calls := func(h *hookEndpoint) []string {
		_, _, evs, _ := h.snapshot()
		var out []string
		for _, ev := range evs {
			if ev.WorkflowID == id {
				out = append(out, fmt.Sprint(ev.CallID, " ", ev.Type, " ", ev.Roles))
			}
		}
		slices.Sort(out)
		return out
	}
	waitFor(t, ctx, func() bool { return len(calls(kube)) == 2 && len(calls(def)) == 2 })
	if got, want := calls(kube), []string{"k1 approval_answered [k8s]", "k1 approval_requested [k8s]"}; !slices.Equal(got, want) {
		t.Fatalf("kube route got %v, want %v", got, want)
	}
	if got, want := calls(def), []string{"k2 approval_answered []", "k2 approval_requested []"}; !slices.Equal(got, want) {
		t.Fatalf("default webhook got %v, want %v", got, want)
	}
	page, err := cl.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Events {
		if e.Type == workflows.EventRejected {
			t.Fatalf("rejected event %+v: kube's signalled answer was refused", e)
		}
	}
	save(t, id, "roles_turn")
	return id
}

// countingChecker is the roles checker, counting how often it is asked.
type countingChecker struct {
	roles.Checker
	calls *atomic.Int32
}

func (c countingChecker) RulesCover(rules []permission.Rule, tool string, input json.RawMessage, workdir string) bool {
	c.calls.Add(1)
	return c.Checker.RulesCover(rules, tool, input, workdir)
}

func (c countingChecker) RuleWithin(r permission.Rule, rs []permission.Rule) bool {
	c.calls.Add(1)
	return c.Checker.RuleWithin(r, rs)
}

// TestRoleChecksNotReplayed runs the recorded roles scenario and replays
// its history with a roles checker that counts: the roles the
// notifications routed by and the check of kube's signalled answer were
// computed when the turn ran (the routes and the answer show it) and are
// read back from the history on replay, which asks the checker nothing.
func TestRoleChecksNotReplayed(t *testing.T) {
	ctx := ctxT(t, 90*time.Second)
	id := recordRolesScenario(t, ctx, func(*testing.T, string, string) {})
	var evs []*historypb.HistoryEvent
	it := env.c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	var calls atomic.Int32
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(workflows.New(countingChecker{calls: &calls}), workflow.RegisterOptions{Name: workflows.TurnWorkflow})
	if err := r.ReplayWorkflowHistory(quietLog(), &historypb.History{Events: evs}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the replay asked the roles checker %d times, want 0: its outcomes are in the history", n)
	}
}
