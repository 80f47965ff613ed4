package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/activities"
	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// This file tests the agent-turn workflow on the SDK's test environment
// (no server, time skipping). The four activities are registered under
// the names the workflow uses and mocked by name with env.OnActivity; the
// mocks delegate to the per-test functions of a harness.

// Placeholders registered under the activity names: the test environment
// needs a registered function (of the mocks' exact signature) to mock an
// activity by name, and to resolve a local activity called by name.
func modelPlaceholder(context.Context, workflows.ModelInput) (model.Response, error) {
	return model.Response{}, errors.New("model activity not mocked")
}

func preparePlaceholder(context.Context, workflows.PrepareInput) (workflows.Prepared, error) {
	return workflows.Prepared{}, errors.New("prepare activity not mocked")
}

func toolPlaceholder(context.Context, workflows.ToolInput) (workflows.ToolOutput, error) {
	return workflows.ToolOutput{}, errors.New("tool activity not mocked")
}

func notifyPlaceholder(context.Context, workflows.NotifyInput) error {
	return errors.New("notify activity not mocked")
}

func chatPostPlaceholder(context.Context, workflows.ChatInput) ([]workflows.ChatRef, error) {
	return nil, errors.New("chat post activity not mocked")
}

func chatUpdatePlaceholder(context.Context, workflows.ChatInput) error {
	return errors.New("chat update activity not mocked")
}

func modelStepPlaceholder(context.Context, workflows.ModelStepInput) (workflows.ModelStepOutput, error) {
	return workflows.ModelStepOutput{}, errors.New("model step activity not mocked")
}

// testTurn is the workflow id of the test environment's turns.
const testTurn = "default-test-workflow-id"

// recordingModel is the scripted model recording each request it gets
// (the whole conversation, loaded from the content store).
type recordingModel struct{ h *harness }

func (r recordingModel) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	r.h.mu.Lock()
	r.h.models = append(r.h.models, workflows.ModelInput{Provider: "scripted", Request: req})
	r.h.mu.Unlock()
	return model.Scripted{}.Generate(ctx, req)
}

// harness is one test environment with recorded activity calls. The
// activity mocks run on their own goroutines, so the records are guarded.
type harness struct {
	t   testing.TB
	env *testsuite.TestWorkflowEnvironment

	// prepare and tool answer the Prepare and Tool activities; set them
	// before running the workflow. The model is the scripted model.
	prepare func(workflows.PrepareInput) workflows.Prepared
	tool    func(context.Context, workflows.ToolInput) (workflows.ToolOutput, error)

	// content is the store the model step keeps the conversation in;
	// prices price its model calls.
	content *content.Log
	prices  map[string]model.Price

	mu       sync.Mutex
	models   []workflows.ModelInput
	prepares []workflows.PrepareInput
	toolsIn  []workflows.ToolInput
	notifies []workflows.NotifyInput
	// notifyErr, when set, is the Notify activity's error on an attempt
	// (nil: delivered).
	notifyErr func(in workflows.NotifyInput, attempt int32) error
	// log records tool starts and ends ("start call_1_1", "end call_1_1").
	log []string
	// chatPosts and chatUpdates record the chat activities' inputs;
	// chatRefs is what a post answers (nil: the worker has no chat).
	chatPosts, chatUpdates []workflows.ChatInput
	chatRefs               []workflows.ChatRef
}

func newHarness(t testing.TB, mws ...workflows.AgentMiddleware) *harness {
	t.Helper()
	return newHarnessWith(t, roles.Checker{}, mws...)
}

// newHarnessWith is newHarness with the turn's roles checker rc.
func newHarnessWith(t testing.TB, rc workflows.RoleChecker, mws ...workflows.AgentMiddleware) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	h := &harness{t: t, env: env, tool: echoTool}
	store, err := content.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	h.content = &content.Log{Store: store}
	env.RegisterWorkflowWithOptions(workflows.New(rc, mws...), workflow.RegisterOptions{Name: workflows.TurnWorkflow})
	env.RegisterActivityWithOptions(modelPlaceholder, activity.RegisterOptions{Name: workflows.ActivityModel})
	env.RegisterActivityWithOptions(preparePlaceholder, activity.RegisterOptions{Name: workflows.ActivityPrepare})
	env.RegisterActivityWithOptions(toolPlaceholder, activity.RegisterOptions{Name: workflows.ActivityTool})
	env.RegisterActivityWithOptions(notifyPlaceholder, activity.RegisterOptions{Name: workflows.ActivityNotify})
	env.RegisterActivityWithOptions(modelStepPlaceholder, activity.RegisterOptions{Name: workflows.ActivityModelStep})
	env.RegisterActivityWithOptions(chatPostPlaceholder, activity.RegisterOptions{Name: workflows.ActivityChatPost})
	env.RegisterActivityWithOptions(chatUpdatePlaceholder, activity.RegisterOptions{Name: workflows.ActivityChatUpdate})
	env.OnActivity(workflows.ActivityChatPost, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.ChatInput) ([]workflows.ChatRef, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.chatPosts = append(h.chatPosts, in)
			return h.chatRefs, nil
		})
	env.OnActivity(workflows.ActivityChatUpdate, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.ChatInput) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.chatUpdates = append(h.chatUpdates, in)
			return nil
		})
	env.OnActivity(workflows.ActivityModelStep, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in workflows.ModelStepInput) (workflows.ModelStepOutput, error) {
			// The model step is the real activity on a real store (h.content,
			// which a test may share between runs), with the scripted model
			// recording what it is asked.
			acts := &activities.Activities{Tools: reg, Models: map[string]model.Model{"scripted": recordingModel{h}}, Content: h.content, Prices: h.prices}
			out, err := acts.ModelStep(ctx, in)
			h.mu.Lock()
			if n := len(h.models); n > 0 {
				h.models[n-1].Tools, h.models[n-1].Model = in.Tools, in.Model
			}
			h.mu.Unlock()
			return out, err
		})

	env.OnActivity(workflows.ActivityModel, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in workflows.ModelInput) (model.Response, error) {
			h.mu.Lock()
			h.models = append(h.models, in)
			h.mu.Unlock()
			return model.Scripted{}.Generate(ctx, in.Request)
		})
	env.OnActivity(workflows.ActivityPrepare, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.PrepareInput) (workflows.Prepared, error) {
			h.mu.Lock()
			h.prepares = append(h.prepares, in)
			h.mu.Unlock()
			if h.prepare == nil {
				return workflows.Prepared{}, errors.New("no prepare configured")
			}
			return h.prepare(in), nil
		})
	env.OnActivity(workflows.ActivityTool, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in workflows.ToolInput) (workflows.ToolOutput, error) {
			h.record("start " + in.Call.ID)
			h.mu.Lock()
			h.toolsIn = append(h.toolsIn, in)
			h.mu.Unlock()
			out, err := h.tool(ctx, in)
			h.record("end " + in.Call.ID)
			return out, err
		})
	env.OnActivity(workflows.ActivityNotify, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in workflows.NotifyInput) error {
			h.mu.Lock()
			h.notifies = append(h.notifies, in)
			fail := h.notifyErr
			h.mu.Unlock()
			if fail != nil {
				return fail(in, activity.GetInfo(ctx).Attempt)
			}
			return nil
		})
	return h
}

func (h *harness) record(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, s)
}

// run executes the turn and returns its result; the turn must succeed.
func (h *harness) run(in workflows.TurnInput) workflows.TurnResult {
	h.t.Helper()
	h.env.ExecuteWorkflow(workflows.TurnWorkflow, in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("workflow did not complete")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		h.t.Fatalf("workflow failed: %v", err)
	}
	var res workflows.TurnResult
	if err := h.env.GetWorkflowResult(&res); err != nil {
		h.t.Fatalf("result: %v", err)
	}
	return h.whole(res)
}

// whole puts the stored conversation back into a result, so tests read
// every message (the result carries the head and what follows it).
func (h *harness) whole(res workflows.TurnResult) workflows.TurnResult {
	h.t.Helper()
	if res.Conversation == "" {
		return res
	}
	ctx := context.Background()
	msgs, err := h.content.Load(ctx, testTurn, res.Conversation)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, m := range res.Messages {
		r, err := h.content.Resolve(ctx, testTurn, m)
		if err != nil {
			h.t.Fatal(err)
		}
		msgs = append(msgs, r)
	}
	res.Messages = msgs
	return res
}

func (h *harness) toolLog() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.log)
}

func (h *harness) modelCalls() []workflows.ModelInput {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.models)
}

func (h *harness) prepareCalls() []workflows.PrepareInput {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.prepares)
}

func (h *harness) toolCalls() []workflows.ToolInput {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.toolsIn)
}

func (h *harness) notifyCalls() []workflows.NotifyInput {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.notifies)
}

// chatCalls returns the chat activities' inputs so far.
func (h *harness) chatCalls() (posts, updates []workflows.ChatInput) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.chatPosts), slices.Clone(h.chatUpdates)
}

// pending queries QueryPending; call it from a delayed callback or after
// the run.
func (h *harness) pending() []workflows.Pending {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(workflows.QueryPending)
	if err != nil {
		h.t.Fatalf("query pending: %v", err)
	}
	var out []workflows.Pending
	if err := v.Get(&out); err != nil {
		h.t.Fatalf("decode pending: %v", err)
	}
	return out
}

// hash returns the listed hash of an open call ("" when none is open):
// what a client sends back with its answer.
func (h *harness) hash(callID string) string {
	h.t.Helper()
	for _, p := range h.pending() {
		if p.CallID == callID {
			return p.Hash
		}
	}
	return ""
}

func (h *harness) summary() workflows.Summary {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(workflows.QueryState)
	if err != nil {
		h.t.Fatalf("query state: %v", err)
	}
	var out workflows.Summary
	if err := v.Get(&out); err != nil {
		h.t.Fatalf("decode state: %v", err)
	}
	return out
}

func (h *harness) events() []workflows.Event {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(workflows.QueryEvents, 0)
	if err != nil {
		h.t.Fatalf("query events: %v", err)
	}
	var page workflows.EventsPage
	if err := v.Get(&page); err != nil {
		h.t.Fatalf("decode events: %v", err)
	}
	return page.Events
}

// updateOutcome is what a testsuite update callback saw.
type updateOutcome struct {
	accepted  bool
	rejected  error
	completed bool
	result    any
	err       error
}

// update sends an Update synchronously (from a delayed callback) and
// returns what its callbacks saw.
func (h *harness) update(id string, a workflows.Approval) *updateOutcome {
	o := &updateOutcome{}
	h.env.UpdateWorkflow(workflows.UpdateApprove, id, &testsuite.TestUpdateCallback{
		OnAccept:   func() { o.accepted = true },
		OnReject:   func(err error) { o.rejected = err },
		OnComplete: func(r any, err error) { o.completed, o.result, o.err = true, r, err },
	}, a)
	return o
}

// Tool infos of the fake tools.
var (
	readInfo = tools.Info{Name: "Read", ReadOnly: true, ConcurrencySafe: true}
	bashInfo = tools.Info{Name: "Bash"}
	taskInfo = tools.Info{Name: "TaskUpdate", ConcurrencySafe: true, StateInjected: true}
	askInfo  = tools.Info{Name: "AskUser", External: true}
)

func infoFor(name string) tools.Info {
	switch name {
	case "Read":
		return readInfo
	case "Bash":
		return bashInfo
	case "TaskUpdate":
		return taskInfo
	case "AskUser":
		return askInfo
	}
	return tools.Info{Name: name}
}

func allowed(name string) workflows.Prepared {
	info := infoFor(name)
	return workflows.Prepared{
		Decision: permission.Decision{Behavior: permission.Allow, Reason: "Rule: " + name},
		Tool:     info, ReadOnly: info.ReadOnly, Policy: workflows.CallPolicy{MaxAttempts: 1},
	}
}

func asked(name, msg string, suggestions ...permission.Rule) workflows.Prepared {
	p := allowed(name)
	p.Decision = permission.Decision{Behavior: permission.Ask, Message: msg, Reason: "Mode: default", Suggestions: suggestions}
	return p
}

// allowAll allows every call.
func allowAll(in workflows.PrepareInput) workflows.Prepared { return allowed(in.Call.Name) }

// askAll asks about every call.
func askAll(in workflows.PrepareInput) workflows.Prepared {
	return asked(in.Call.Name, "Permission required for "+in.Call.Name)
}

// echoTool answers "<tool> ran <input>".
func echoTool(_ context.Context, in workflows.ToolInput) (workflows.ToolOutput, error) {
	return workflows.ToolOutput{State: in.State, Result: tools.Result{
		Content: in.Call.Name + " ran " + string(in.Call.Input), State: tools.StateSuccess}}, nil
}

func call(name string, input map[string]any) model.ScriptedCall {
	return model.ScriptedCall{Name: name, Input: input}
}

func step(text string, calls ...model.ScriptedCall) model.Step {
	return model.Step{Text: text, ToolCalls: calls}
}

func turnInput(steps ...model.Step) workflows.TurnInput {
	return workflows.TurnInput{
		Prompt: "do the work",
		Model:  workflows.ModelConfig{Provider: "scripted", Script: &model.Script{Steps: steps}},
	}
}

// toolMessages returns the tool messages of a conversation.
func toolMessages(msgs []model.Message) []model.Message {
	var out []model.Message
	for _, m := range msgs {
		if m.Role == model.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

func toolMessage(t *testing.T, msgs []model.Message, callID string) model.Message {
	t.Helper()
	for _, m := range toolMessages(msgs) {
		if m.ToolCallID == callID {
			return m
		}
	}
	t.Fatalf("no tool message for %s in %+v", callID, msgs)
	return model.Message{}
}

func eventsOfType(evs []workflows.Event, typ string) []workflows.Event {
	var out []workflows.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func TestTurnLoop(t *testing.T) {
	h := newHarness(t)
	h.prepare = allowAll
	stamp := tools.FileStamp{Size: 3, ModTime: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	h.tool = func(ctx context.Context, in workflows.ToolInput) (workflows.ToolOutput, error) {
		out, err := echoTool(ctx, in)
		if in.Call.Name == "Read" {
			var args struct{ Path string }
			_ = json.Unmarshal(in.Call.Input, &args)
			out.State = tools.State{Reads: map[string]tools.FileStamp{args.Path: stamp}}
		}
		return out, err
	}
	in := turnInput(
		step("Looking.", call("Read", map[string]any{"path": "/a"}), call("Read", map[string]any{"path": "/b"})),
		step("", call("Bash", map[string]any{"command": "ls"})),
		step("All done."),
	)
	res := h.run(in)

	if res.Answer != "All done." || res.Iterations != 3 || res.ToolCalls != 3 || res.Stopped != "" {
		t.Fatalf("result = answer %q, iterations %d, tool calls %d, stopped %q; want All done., 3, 3, \"\"",
			res.Answer, res.Iterations, res.ToolCalls, res.Stopped)
	}
	type msg struct {
		role    model.Role
		content string
		callID  string
		calls   int
	}
	var got []msg
	for _, m := range res.Messages {
		got = append(got, msg{m.Role, m.Content, m.ToolCallID, len(m.ToolCalls)})
	}
	want := []msg{
		{model.RoleUser, "do the work", "", 0},
		{model.RoleAssistant, "Looking.", "", 2},
		{model.RoleTool, `Read ran {"path":"/a"}`, "call_1_1", 0},
		{model.RoleTool, `Read ran {"path":"/b"}`, "call_1_2", 0},
		{model.RoleAssistant, "", "", 1},
		{model.RoleTool, `Bash ran {"command":"ls"}`, "call_2_1", 0},
		{model.RoleAssistant, "All done.", "", 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("messages:\n got %+v\nwant %+v", got, want)
	}

	models := h.modelCalls()
	if len(models) != 3 {
		t.Fatalf("model called %d times, want 3", len(models))
	}
	// The second model call sees both read results, in call order.
	if n := len(models[1].Request.Messages); n != 4 {
		t.Fatalf("second model call saw %d messages, want 4", n)
	}
	if m := models[1].Request.Messages[3]; m.ToolCallID != "call_1_2" || m.Role != model.RoleTool {
		t.Fatalf("second model call's last message = %+v, want the call_1_2 result", m)
	}
	if models[0].Provider != "scripted" || models[0].Request.Script == nil {
		t.Fatalf("model input = %+v, want the scripted provider and the script", models[0])
	}

	// Reads of the parallel batch merge into the turn state; the later
	// call gets it.
	wantReads := map[string]tools.FileStamp{"/a": stamp, "/b": stamp}
	if !reflect.DeepEqual(res.State.Reads, wantReads) {
		t.Fatalf("state reads = %v, want %v", res.State.Reads, wantReads)
	}
	calls := h.toolCalls()
	if len(calls) != 3 {
		t.Fatalf("tool activity called %d times, want 3", len(calls))
	}
	// A call gets only what it needs of the state: Bash names no file, so
	// none of the turn's reads travel with it (they stay in the turn).
	bash := calls[2]
	if bash.Call.ID != "call_2_1" || len(bash.State.Reads) != 0 {
		t.Fatalf("Bash tool input = %+v, want call_2_1 without the turn's reads", bash)
	}
	if want := "default-test-workflow-id/call_2_1"; bash.Key != want {
		t.Fatalf("idempotency key = %q, want %q", bash.Key, want)
	}
	if n := len(h.prepareCalls()); n != 3 {
		t.Fatalf("prepare called %d times, want 3", n)
	}
	s := h.summary()
	if !s.Done || s.Iterations != 3 || s.ToolCalls != 3 || len(s.Pending) != 0 {
		t.Fatalf("state query = %+v, want done after 3 iterations and 3 calls", s)
	}
}

func TestTurnMaxIterations(t *testing.T) {
	h := newHarness(t)
	h.prepare = allowAll
	var steps []model.Step
	for i := range 5 {
		steps = append(steps, step("", call("Bash", map[string]any{"command": fmt.Sprint("echo ", i)})))
	}
	in := turnInput(steps...)
	in.MaxIterations = 2
	res := h.run(in)
	if res.Stopped != "max_iterations" || res.Answer != "" || res.Iterations != 2 || res.ToolCalls != 2 {
		t.Fatalf("result = stopped %q, answer %q, iterations %d, tool calls %d; want max_iterations, \"\", 2, 2",
			res.Stopped, res.Answer, res.Iterations, res.ToolCalls)
	}
	if n := len(h.modelCalls()); n != 2 {
		t.Fatalf("model called %d times, want 2", n)
	}
	last := res.Messages[len(res.Messages)-1]
	if last.Role != model.RoleTool || last.ToolCallID != "call_2_1" {
		t.Fatalf("last message = %+v, want the call_2_1 result", last)
	}
}

// barrier is released once n parties arrived; wait reports whether that
// happened within the bound (false: the calls did not overlap).
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	all     chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, all: make(chan struct{})} }

func (b *barrier) wait() bool {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

func TestTurnBatching(t *testing.T) {
	h := newHarness(t)
	h.prepare = allowAll
	// call_1_1 and call_1_2 (Read) are concurrency-safe: both must be
	// running at once, and call_1_1 finishes last. The Bash and
	// TaskUpdate (state-injected) calls run one at a time, in order.
	bar := newBarrier(2)
	secondDone := make(chan struct{})
	var mu sync.Mutex
	overlapped := map[string]bool{}
	firstWaited := false
	h.tool = func(ctx context.Context, in workflows.ToolInput) (workflows.ToolOutput, error) {
		switch in.Call.ID {
		case "call_1_1", "call_1_2":
			ok := bar.wait()
			mu.Lock()
			overlapped[in.Call.ID] = ok
			mu.Unlock()
			if in.Call.ID == "call_1_2" {
				close(secondDone)
				break
			}
			// call_1_1 finishes after call_1_2.
			select {
			case <-secondDone:
				mu.Lock()
				firstWaited = true
				mu.Unlock()
			case <-time.After(5 * time.Second):
			}
		}
		return echoTool(ctx, in)
	}
	in := turnInput(
		step("",
			call("Read", map[string]any{"path": "/a"}),
			call("Read", map[string]any{"path": "/b"}),
			call("Bash", map[string]any{"command": "one"}),
			call("Bash", map[string]any{"command": "two"}),
			call("TaskUpdate", map[string]any{"id": "1"}),
			call("TaskUpdate", map[string]any{"id": "2"}),
		),
		step("done"),
	)
	res := h.run(in)
	mu.Lock()
	if !overlapped["call_1_1"] || !overlapped["call_1_2"] || !firstWaited {
		t.Fatalf("concurrency-safe calls did not run at the same time: %v, call_1_1 outlived call_1_2: %v (log %v)",
			overlapped, firstWaited, h.toolLog())
	}
	mu.Unlock()
	log := h.toolLog()
	if head := sorted(slices.Clone(log[:4])); !slices.Equal(head, []string{"end call_1_1", "end call_1_2", "start call_1_1", "start call_1_2"}) ||
		!strings.HasPrefix(log[0], "start") || !strings.HasPrefix(log[1], "start") {
		t.Fatalf("log %v: want both reads started, then both ended, before anything else", log)
	}
	wantTail := []string{
		"start call_1_3", "end call_1_3", "start call_1_4", "end call_1_4",
		"start call_1_5", "end call_1_5", "start call_1_6", "end call_1_6"}
	if !slices.Equal(log[4:], wantTail) {
		t.Fatalf("log after the reads:\n got %v\nwant %v", log[4:], wantTail)
	}
	var ids []string
	for _, m := range toolMessages(res.Messages) {
		ids = append(ids, m.ToolCallID)
	}
	if want := []string{"call_1_1", "call_1_2", "call_1_3", "call_1_4", "call_1_5", "call_1_6"}; !slices.Equal(ids, want) {
		t.Fatalf("results in order %v, want call order %v", ids, want)
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }

func TestTurnDenyInvalidAndFailures(t *testing.T) {
	h := newHarness(t)
	h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
		var args struct{ Command, Path string }
		_ = json.Unmarshal(in.Call.Input, &args)
		switch {
		case in.Call.Name == "Nope":
			return workflows.Prepared{Invalid: "ToolNotFoundError: The tool named 'Nope' doesn't exist."}
		case args.Command == "rm -rf /":
			p := allowed("Bash")
			p.Decision = permission.Decision{Behavior: permission.Deny, Message: "Bash(rm:*) is denied", Reason: "Rule: Bash(rm:*)"}
			return p
		case args.Command == "flaky":
			p := allowed("Bash")
			p.Policy.MaxAttempts = 3
			return p
		}
		return allowed(in.Call.Name)
	}
	var mu sync.Mutex
	attempts := map[string]int{}
	bar := newBarrier(2)
	h.tool = func(ctx context.Context, in workflows.ToolInput) (workflows.ToolOutput, error) {
		mu.Lock()
		attempts[in.Call.ID]++
		mu.Unlock()
		var args struct{ Command, Path string }
		_ = json.Unmarshal(in.Call.Input, &args)
		switch {
		case args.Path == "/a" || args.Path == "/b":
			// The denied call between the reads does not split their batch.
			if !bar.wait() {
				return workflows.ToolOutput{}, errors.New("reads did not run in parallel")
			}
		case args.Path == "/broken":
			return workflows.ToolOutput{}, errors.New("disk unreadable")
		case args.Command == "deploy" || args.Command == "flaky":
			return workflows.ToolOutput{}, errors.New("connection reset")
		}
		return echoTool(ctx, in)
	}
	in := turnInput(
		step("",
			call("Read", map[string]any{"path": "/a"}),
			call("Bash", map[string]any{"command": "rm -rf /"}),
			call("Read", map[string]any{"path": "/b"}),
			call("Nope", nil),
			call("Bash", map[string]any{"command": "deploy"}),
			call("Read", map[string]any{"path": "/broken"}),
			call("Bash", map[string]any{"command": "flaky"}),
		),
		step("ok"),
	)
	res := h.run(in)
	note := "\nThe call was not retried because it may have had side effects; check its effects before trying again."
	cases := []struct {
		id      string
		content string
		isError bool
	}{
		{"call_1_1", `Read ran {"path":"/a"}`, false},
		{"call_1_2", "Permission denied: Bash(rm:*) is denied", true},
		{"call_1_3", `Read ran {"path":"/b"}`, false},
		{"call_1_4", "ToolNotFoundError: The tool named 'Nope' doesn't exist.", true},
		{"call_1_5", "Tool failed: connection reset" + note, true},
		{"call_1_6", "Tool failed: disk unreadable", true},
		{"call_1_7", "Tool failed: connection reset", true},
	}
	for _, c := range cases {
		m := toolMessage(t, res.Messages, c.id)
		if m.Content != c.content || m.IsError != c.isError {
			t.Errorf("%s: content %q, error %v; want %q, %v", c.id, m.Content, m.IsError, c.content, c.isError)
		}
	}
	// The model reads the denial in its next call.
	models := h.modelCalls()
	if len(models) != 2 {
		t.Fatalf("model called %d times, want 2", len(models))
	}
	if m := toolMessage(t, models[1].Request.Messages, "call_1_2"); m.Content != "Permission denied: Bash(rm:*) is denied" {
		t.Fatalf("model saw %q for the denied call", m.Content)
	}
	mu.Lock()
	defer mu.Unlock()
	wantAttempts := map[string]int{"call_1_1": 1, "call_1_3": 1, "call_1_5": 1, "call_1_6": 1, "call_1_7": 3}
	if !reflect.DeepEqual(attempts, wantAttempts) {
		t.Fatalf("tool attempts = %v, want %v (denied and invalid calls never run; MaxAttempts honoured)", attempts, wantAttempts)
	}
	// Invalid calls get no decision event; the denied one does.
	var decided []string
	for _, e := range eventsOfType(h.events(), workflows.EventDecision) {
		decided = append(decided, e.CallID)
	}
	if slices.Contains(decided, "call_1_4") || !slices.Contains(decided, "call_1_2") {
		t.Fatalf("decision events for %v: want call_1_2, not call_1_4", decided)
	}
}

func TestTurnApproveByUpdate(t *testing.T) {
	h := newHarness(t)
	h.prepare = askAll
	in := turnInput(step("", call("Bash", map[string]any{"command": "make"})), step("built"))
	input := json.RawMessage(`{"command":"make"}`)
	hash := workflows.CallHash("Bash", input, "call_1_1", 0)
	start := h.env.Now()
	bad := map[string]workflows.Approval{
		"unknown":  {CallID: "call_9_9", Decision: workflows.DecisionAllow},
		"badhash":  {CallID: "call_1_1", Decision: workflows.DecisionAllow, Hash: "0123456789abcdef"},
		"nohash":   {CallID: "call_1_1", Decision: workflows.DecisionAllow, By: "alice"},
		"decision": {CallID: "call_1_1", Decision: "maybe", Hash: hash},
		"always":   {CallID: "call_1_1", Decision: workflows.DecisionAlwaysAllow, Hash: hash},
	}
	var (
		before    []workflows.Pending
		toolsThen []string
		summary   workflows.Summary
		rejects   = map[string]*updateOutcome{}
		ok        *updateOutcome
	)
	// Update callbacks run after the delayed callback returns, so the
	// rejections are sent first and checked after the run.
	h.env.RegisterDelayedCallback(func() {
		before = h.pending()
		for _, id := range []string{"unknown", "badhash", "nohash", "decision", "always"} {
			rejects[id] = h.update(id, bad[id])
		}
	}, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		summary = h.summary()
		toolsThen = h.toolLog()
		ok = h.update("good", workflows.Approval{CallID: "call_1_1", Decision: workflows.DecisionAllow, Hash: hash, By: "alice"})
	}, 2*time.Minute)
	res := h.run(in)

	want := workflows.Pending{
		Kind: workflows.PendingApproval, CallID: "call_1_1", Tool: "Bash", Input: input,
		Message: "Permission required for Bash", Reason: "Mode: default",
		RequestedAt: start, Deadline: start.Add(workflows.DefaultApprovalTimeout), Hash: hash,
		Prompt: in.Prompt, // the approver sees what the turn was asked
	}
	if len(before) != 1 || !reflect.DeepEqual(normPending(before[0]), normPending(want)) {
		t.Fatalf("pending before approval:\n got %+v\nwant %+v", before, want)
	}
	if len(toolsThen) != 0 {
		t.Fatalf("tool ran before approval: %v", toolsThen)
	}
	if summary.Done || len(summary.Pending) != 1 || summary.Iterations != 1 || summary.ToolCalls != 1 {
		t.Fatalf("state while waiting (after the rejected updates) = %+v", summary)
	}
	for id, msg := range map[string]string{
		"unknown":  `no pending call "call_9_9"`,
		"badhash":  "stale hash for call call_1_1: the call or the policy changed since it was listed; list the pending calls again",
		"nohash":   "answer to call call_1_1 carries no hash: list the pending calls again",
		"decision": `unknown decision "maybe" (want allow, always_allow or deny)`,
		"always":   "always_allow needs a rule: the call has no suggested rules",
	} {
		o := rejects[id]
		if o.accepted || o.completed || o.rejected == nil || !strings.Contains(o.rejected.Error(), msg) {
			t.Errorf("update %s: %+v, want rejected with %q", id, o, msg)
		}
	}
	if ok == nil || !ok.accepted || ok.rejected != nil || !ok.completed || ok.err != nil {
		t.Fatalf("valid update: %+v", ok)
	}
	if ack, _ := ok.result.(workflows.Ack); ack != (workflows.Ack{CallID: "call_1_1", Status: "allow"}) {
		t.Fatalf("ack = %#v", ok.result)
	}
	if res.Answer != "built" {
		t.Fatalf("answer = %q", res.Answer)
	}
	if m := toolMessage(t, res.Messages, "call_1_1"); m.Content != `Bash ran {"command":"make"}` || m.IsError {
		t.Fatalf("approved call's result = %+v", m)
	}
	if n := len(h.toolCalls()); n != 1 {
		t.Fatalf("tool ran %d times, want 1", n)
	}
	answered := eventsOfType(h.events(), workflows.EventAnswered)
	if len(answered) != 1 || answered[0].Text != "allow by alice" {
		t.Fatalf("answered events = %+v", answered)
	}
	if p := h.pending(); len(p) != 0 {
		t.Fatalf("pending after the turn = %+v", p)
	}
}

// normPending makes times comparable with reflect.DeepEqual.
func normPending(p workflows.Pending) workflows.Pending {
	p.RequestedAt, p.Deadline = p.RequestedAt.UTC(), p.Deadline.UTC()
	return p
}

func TestTurnDenyBySignal(t *testing.T) {
	h := newHarness(t)
	h.prepare = askAll
	in := turnInput(step("", call("Bash", map[string]any{"command": "rm build"})), step("fine"))
	h.env.RegisterDelayedCallback(func() {
		// An unknown call id is rejected and recorded, not applied.
		h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{CallID: "call_7_7", Decision: workflows.DecisionAllow})
	}, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		if p := h.pending(); len(p) != 1 {
			t.Errorf("pending after a rejected signal = %+v, want the call still waiting", p)
		}
		h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{
			CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionDeny, Reason: "not on Fridays", By: "bob"})
	}, 2*time.Minute)
	res := h.run(in)
	m := toolMessage(t, res.Messages, "call_1_1")
	if want := "The user denied this Bash call by bob: not on Fridays"; m.Content != want || !m.IsError {
		t.Fatalf("denied result = %+v, want %q", m, want)
	}
	if n := len(h.toolCalls()); n != 0 {
		t.Fatalf("tool ran %d times after a deny", n)
	}
	rejected := eventsOfType(h.events(), workflows.EventRejected)
	if len(rejected) != 1 || rejected[0].CallID != "call_7_7" || rejected[0].Text != `no pending call "call_7_7"` {
		t.Fatalf("rejected events = %+v", rejected)
	}
}

func TestTurnAlwaysAllowRechecks(t *testing.T) {
	h := newHarness(t)
	npm := permission.Rule{Tool: "Bash", Content: "npm run:*", Behavior: permission.Allow}
	h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
		var args struct{ Command string }
		_ = json.Unmarshal(in.Call.Input, &args)
		if strings.HasPrefix(args.Command, "npm run ") {
			for _, r := range in.Permission.Allow {
				if r.Tool == "Bash" && r.Content == "npm run:*" {
					p := allowed("Bash")
					p.Decision.Reason = "Rule: Bash(npm run:*)"
					return p
				}
			}
			return asked("Bash", "Permission required for Bash", npm)
		}
		return asked("Bash", "Permission required for Bash")
	}
	in := turnInput(
		step("",
			call("Bash", map[string]any{"command": "npm run a"}),
			call("Bash", map[string]any{"command": "npm run b"}),
			call("Bash", map[string]any{"command": "make"})),
		step("all ran"),
	)
	var (
		before []workflows.Pending
		o, o2  *updateOutcome
		state  workflows.Summary
	)
	h.env.RegisterDelayedCallback(func() {
		before = h.pending()
		o = h.update("always", workflows.Approval{CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionAlwaysAllow})
	}, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		state = h.summary()
		o2 = h.update("make", workflows.Approval{CallID: "call_1_3", Hash: h.hash("call_1_3"), Decision: workflows.DecisionAllow})
	}, 2*time.Minute)
	res := h.run(in)
	if len(before) != 3 || !slices.Equal(before[0].Suggestions, []string{"Bash(npm run:*)"}) {
		t.Fatalf("pending before = %+v", before)
	}
	if !o.accepted || !o.completed || o.err != nil || !o2.accepted {
		t.Fatalf("updates: %+v, %+v", o, o2)
	}
	session := permission.Rule{Tool: "Bash", Content: "npm run:*", Behavior: permission.Allow, Source: "session"}
	if !slices.Contains(state.Permission.Allow, session) {
		t.Fatalf("state query permission = %+v, want the session rule", state.Permission)
	}
	// The re-check resolved call_1_2; call_1_3 (not covered) still waits.
	if len(state.Pending) != 1 || state.Pending[0].CallID != "call_1_3" {
		t.Fatalf("state query pending = %+v, want only call_1_3", state.Pending)
	}
	if !slices.Contains(res.Permission.Allow, session) {
		t.Fatalf("result permission = %+v, want the session rule", res.Permission)
	}
	preps := h.prepareCalls()
	var rechecked []string
	for _, p := range preps[3:] {
		rechecked = append(rechecked, p.Call.ID)
		if !slices.Contains(p.Permission.Allow, session) {
			t.Fatalf("re-check of %s without the session rule: %+v", p.Call.ID, p.Permission)
		}
	}
	// The re-checks run as concurrent local activities: any order.
	if len(preps) != 5 || !slices.Equal(sorted(rechecked), []string{"call_1_2", "call_1_3"}) {
		t.Fatalf("prepare calls: %d, re-checked %v; want 3 then a re-check of call_1_2 and call_1_3", len(preps), rechecked)
	}
	for _, id := range []string{"call_1_1", "call_1_2", "call_1_3"} {
		if m := toolMessage(t, res.Messages, id); m.IsError || !strings.HasPrefix(m.Content, "Bash ran") {
			t.Fatalf("%s result = %+v, want it ran", id, m)
		}
	}
	var answered []string
	for _, e := range eventsOfType(h.events(), workflows.EventAnswered) {
		answered = append(answered, e.CallID+": "+e.Text)
	}
	want := []string{"call_1_1: always_allow", "call_1_2: allowed by added rule: Rule: Bash(npm run:*)", "call_1_3: allow"}
	if !slices.Equal(answered, want) {
		t.Fatalf("answered events = %v, want %v", answered, want)
	}
}

func TestTurnApprovalDeadlines(t *testing.T) {
	type check struct {
		at   time.Duration
		name string
		fn   func(h *harness)
	}
	cases := []struct {
		name       string
		escalation workflows.Escalation
		notify     bool
		// answerAt, when set, allows the call by Update at that time.
		answerAt    time.Duration
		wantContent string
		wantEvent   string
		wantNotify  []string
		wantElapsed time.Duration
		checks      []check
	}{
		{
			name: "deny", escalation: workflows.EscalateDeny,
			wantContent: "The user denied this Bash call by deadline: approval timed out",
			wantEvent:   "deadline passed: denied", wantElapsed: time.Hour,
		},
		{
			name: "default is deny", escalation: "",
			wantContent: "The user denied this Bash call by deadline: approval timed out",
			wantEvent:   "deadline passed: denied", wantElapsed: time.Hour,
		},
		{
			name: "deny with webhooks", escalation: workflows.EscalateDeny, notify: true,
			wantContent: "The user denied this Bash call by deadline: approval timed out",
			wantEvent:   "deadline passed: denied", wantElapsed: time.Hour,
			wantNotify: []string{"approval_answered", "approval_escalated", "approval_requested"},
		},
		{
			name: "allow with webhooks", escalation: workflows.EscalateAllow, notify: true,
			wantContent: `Bash ran {"command":"deploy"}`,
			wantEvent:   "deadline passed: allowed", wantElapsed: time.Hour,
			wantNotify: []string{"approval_answered", "approval_escalated", "approval_requested"},
		},
		{
			name: "allow", escalation: workflows.EscalateAllow,
			wantContent: `Bash ran {"command":"deploy"}`,
			wantEvent:   "deadline passed: allowed", wantElapsed: time.Hour,
		},
		{
			name: "notify", escalation: workflows.EscalateNotify, notify: true, answerAt: 2 * time.Hour,
			wantContent: `Bash ran {"command":"deploy"}`,
			wantEvent:   "deadline passed: escalated, still waiting",
			wantNotify:  []string{"approval_answered", "approval_escalated", "approval_requested"},
			wantElapsed: 2 * time.Hour,
			checks: []check{{at: 90 * time.Minute, name: "still waiting after the deadline", fn: func(h *harness) {
				p := h.pending()
				if len(p) != 1 || !p[0].Escalated || !p[0].Deadline.IsZero() {
					h.t.Errorf("pending at 90m = %+v, want one escalated entry without deadline", p)
				}
				if n := len(h.toolCalls()); n != 0 {
					h.t.Errorf("tool ran before the answer")
				}
			}}},
		},
		{
			name: "notify without webhooks", escalation: workflows.EscalateNotify, answerAt: 2 * time.Hour,
			wantContent: `Bash ran {"command":"deploy"}`,
			wantEvent:   "deadline passed: escalated, still waiting",
			wantElapsed: 2 * time.Hour,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
				p := askAll(in)
				p.Policy.Escalation, p.Policy.Notify = c.escalation, c.notify
				return p
			}
			in := turnInput(step("", call("Bash", map[string]any{"command": "deploy"})), step("over"))
			in.ApprovalTimeout = time.Hour
			start := h.env.Now()
			h.env.RegisterDelayedCallback(func() {
				p := h.pending()
				if len(p) != 1 || !p[0].Deadline.Equal(start.Add(time.Hour)) || p[0].Escalation != c.escalation {
					t.Errorf("pending at 30m = %+v, want a deadline at start+1h", p)
				}
			}, 30*time.Minute)
			for _, ch := range c.checks {
				h.env.RegisterDelayedCallback(func() { ch.fn(h) }, ch.at)
			}
			var late *updateOutcome
			if c.answerAt > 0 {
				h.env.RegisterDelayedCallback(func() {
					late = h.update("late", workflows.Approval{CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionAllow})
				}, c.answerAt)
			}
			wall := time.Now()
			res := h.run(in)
			if el := time.Since(wall); el > 10*time.Second {
				t.Fatalf("took %v of wall time: the timer was not skipped", el)
			}
			if c.answerAt > 0 && (late == nil || !late.accepted || late.err != nil) {
				t.Fatalf("late approval: %+v", late)
			}
			if got := h.env.Now().Sub(start); got < c.wantElapsed || got > c.wantElapsed+time.Minute {
				t.Fatalf("turn ended %v after start, want about %v", got, c.wantElapsed)
			}
			if m := toolMessage(t, res.Messages, "call_1_1"); m.Content != c.wantContent {
				t.Fatalf("result = %q, want %q", m.Content, c.wantContent)
			}
			esc := eventsOfType(h.events(), workflows.EventEscalated)
			if len(esc) != 1 || esc[0].Text != c.wantEvent || esc[0].CallID != "call_1_1" {
				t.Fatalf("escalated events = %+v, want one %q", esc, c.wantEvent)
			}
			var types []string
			for _, n := range h.notifyCalls() {
				types = append(types, n.Type)
				if n.Pending.CallID != "call_1_1" || n.WorkflowID != "default-test-workflow-id" {
					t.Errorf("notify input = %+v", n)
				}
			}
			// The escalation's and the answer's notifications run side by
			// side: compared sorted.
			slices.Sort(types)
			if !slices.Equal(types, c.wantNotify) {
				t.Fatalf("notifications = %v, want %v", types, c.wantNotify)
			}
		})
	}
}

// recorder is a middleware that logs its hooks into a shared log.
type recorder struct {
	workflows.BaseAgentMiddleware
	name string
	log  *[]string
	// hooks, when set, run after logging.
	beforeAgent func(workflow.Context, *workflows.AgentContext) error
	beforeModel func(workflow.Context, *workflows.AgentState) error
	afterModel  func(workflow.Context, *workflows.AgentState) error
	afterAgent  func(workflow.Context, *workflows.AgentState) error
}

func (r *recorder) BeforeAgent(ctx workflow.Context, ac *workflows.AgentContext) error {
	*r.log = append(*r.log, r.name+".BeforeAgent")
	if r.beforeAgent != nil {
		return r.beforeAgent(ctx, ac)
	}
	return nil
}

func (r *recorder) BeforeModelRewriteState(ctx workflow.Context, st *workflows.AgentState) error {
	*r.log = append(*r.log, r.name+".BeforeModel")
	if r.beforeModel != nil {
		return r.beforeModel(ctx, st)
	}
	return nil
}

func (r *recorder) AfterModelRewriteState(ctx workflow.Context, st *workflows.AgentState) error {
	*r.log = append(*r.log, r.name+".AfterModel")
	if r.afterModel != nil {
		return r.afterModel(ctx, st)
	}
	return nil
}

func (r *recorder) AfterAgent(ctx workflow.Context, st *workflows.AgentState) error {
	*r.log = append(*r.log, r.name+".AfterAgent")
	if r.afterAgent != nil {
		return r.afterAgent(ctx, st)
	}
	return nil
}

func TestTurnMiddlewareOrder(t *testing.T) {
	var log []string
	var seen []int
	a := &recorder{name: "A", log: &log,
		beforeAgent: func(ctx workflow.Context, ac *workflows.AgentContext) error {
			ac.Instruction = "be brief"
			ac.Tools = []string{"Bash", "Read"}
			return workflows.SetRunLocalValue(ctx, "models", 0)
		},
	}
	b := &recorder{name: "B", log: &log,
		beforeModel: func(ctx workflow.Context, st *workflows.AgentState) error {
			var n int
			if _, err := workflows.GetRunLocalValue(ctx, "models", &n); err != nil {
				return err
			}
			st.Tools = []string{"Bash"}
			return workflows.SetRunLocalValue(ctx, "models", n+1)
		},
		afterModel: func(ctx workflow.Context, st *workflows.AgentState) error {
			return workflows.SendEvent(ctx, "", fmt.Sprintf("model said %q", st.Messages[len(st.Messages)-1].Content))
		},
		afterAgent: func(ctx workflow.Context, st *workflows.AgentState) error {
			var n int
			ok, err := workflows.GetRunLocalValue(ctx, "models", &n)
			if !ok || err != nil {
				return fmt.Errorf("run-local value missing: %v", err)
			}
			seen = append(seen, n)
			return nil
		},
	}
	h := newHarness(t, a, b)
	h.prepare = allowAll
	res := h.run(turnInput(step("working", call("Bash", map[string]any{"command": "ls"})), step("done")))
	want := []string{
		"A.BeforeAgent", "B.BeforeAgent",
		"A.BeforeModel", "B.BeforeModel", "B.AfterModel", "A.AfterModel",
		"A.BeforeModel", "B.BeforeModel", "B.AfterModel", "A.AfterModel",
		"A.AfterAgent", "B.AfterAgent",
	}
	if !slices.Equal(log, want) {
		t.Fatalf("hook order:\n got %v\nwant %v", log, want)
	}
	if !slices.Equal(seen, []int{2}) {
		t.Fatalf("run-local value seen by AfterAgent = %v, want [2]", seen)
	}
	if res.Answer != "done" {
		t.Fatalf("answer = %q", res.Answer)
	}
	for i, m := range h.modelCalls() {
		if m.Request.Instruction != "be brief" || !slices.Equal(m.Tools, []string{"Bash"}) {
			t.Fatalf("model call %d: instruction %q, tools %v; want the middlewares' changes", i, m.Request.Instruction, m.Tools)
		}
	}
	var custom []string
	for _, e := range eventsOfType(h.events(), workflows.EventCustom) {
		custom = append(custom, e.Text)
	}
	if want := []string{`model said "working"`, `model said "done"`}; !slices.Equal(custom, want) {
		t.Fatalf("custom events = %v, want %v", custom, want)
	}
}

func TestTurnMiddlewareAfterAgentFailFast(t *testing.T) {
	var log []string
	a := &recorder{name: "A", log: &log, afterAgent: func(workflow.Context, *workflows.AgentState) error {
		return errors.New("answer rejected by policy")
	}}
	b := &recorder{name: "B", log: &log}
	h := newHarness(t, a, b)
	h.prepare = allowAll
	h.env.ExecuteWorkflow(workflows.TurnWorkflow, turnInput(step("final")))
	err := h.env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), "after agent: answer rejected by policy") {
		t.Fatalf("workflow error = %v, want the AfterAgent error", err)
	}
	want := []string{"A.BeforeAgent", "B.BeforeAgent", "A.BeforeModel", "B.BeforeModel", "B.AfterModel", "A.AfterModel", "A.AfterAgent"}
	if !slices.Equal(log, want) {
		t.Fatalf("hooks:\n got %v\nwant %v (B.AfterAgent must not run)", log, want)
	}
}

func TestTurnMiddlewareNotOnMaxIterations(t *testing.T) {
	var log []string
	h := newHarness(t, &recorder{name: "A", log: &log})
	h.prepare = allowAll
	in := turnInput(step("", call("Bash", map[string]any{"command": "a"})), step("", call("Bash", map[string]any{"command": "b"})))
	in.MaxIterations = 1
	if res := h.run(in); res.Stopped != "max_iterations" {
		t.Fatalf("stopped = %q", res.Stopped)
	}
	if slices.Contains(log, "A.AfterAgent") {
		t.Fatalf("AfterAgent ran on the iteration bound: %v", log)
	}
}

func TestTurnReturnDirectly(t *testing.T) {
	cases := []struct {
		name        string
		fail        bool
		wantAnswer  string
		wantIters   int
		wantAfterAg bool
	}{
		{name: "result ends the turn", wantAnswer: `Submit ran {"report":"42"}`, wantIters: 1, wantAfterAg: true},
		{name: "an error result does not", fail: true, wantAnswer: "model continues", wantIters: 2, wantAfterAg: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log []string
			h := newHarness(t, &recorder{name: "A", log: &log})
			h.prepare = allowAll
			h.tool = func(ctx context.Context, in workflows.ToolInput) (workflows.ToolOutput, error) {
				out, err := echoTool(ctx, in)
				if c.fail {
					out.Result.IsError, out.Result.State, out.Result.Content = true, tools.StateError, "bad report"
				}
				return out, err
			}
			in := turnInput(
				step("", call("Bash", map[string]any{"command": "prep"}), call("Submit", map[string]any{"report": "42"})),
				step("model continues"),
			)
			in.ReturnDirectly = []string{"Submit"}
			res := h.run(in)
			if res.Answer != c.wantAnswer || res.Iterations != c.wantIters {
				t.Fatalf("answer %q after %d iterations, want %q after %d", res.Answer, res.Iterations, c.wantAnswer, c.wantIters)
			}
			if n := len(h.modelCalls()); n != c.wantIters {
				t.Fatalf("model called %d times, want %d", n, c.wantIters)
			}
			// Every call of the step ran and is in the conversation.
			if n := len(toolMessages(res.Messages)); n != 2 {
				t.Fatalf("%d tool messages, want 2", n)
			}
			if got := slices.Contains(log, "A.AfterAgent"); got != c.wantAfterAg {
				t.Fatalf("AfterAgent ran = %v, want %v", got, c.wantAfterAg)
			}
		})
	}
}

// atNextTask sets the history length a delayed callback's turn sees from
// the next workflow task on: the one of the signal or update the callback
// sends next, not the task of the callback's own timer, which runs first.
func atNextTask(h *harness, length int) {
	h.env.RegisterDelayedCallback(func() { h.env.SetCurrentHistoryLength(length) }, 0)
}

func TestTurnContinueAsNew(t *testing.T) {
	h := newHarness(t)
	h.prepare = askAll
	in := turnInput(
		step("", call("Bash", map[string]any{"command": "a"}), call("Bash", map[string]any{"command": "b"})),
		step("both done"),
	)
	in.ContinueAsNewAfter = 100
	in.RunLocal = map[string]json.RawMessage{"k": json.RawMessage(`"v"`)}
	var first, second *updateOutcome
	h.env.RegisterDelayedCallback(func() {
		// The answer's workflow task finds the history past the bound:
		// the turn takes the answer and continues as new.
		atNextTask(h, 150)
		first = h.update("a", workflows.Approval{CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionAllow, By: "alice"})
	}, time.Minute)
	h.env.ExecuteWorkflow(workflows.TurnWorkflow, in)
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	if first == nil || !first.accepted || !first.completed {
		t.Fatalf("approval before continue-as-new: %+v", first)
	}
	if can.WorkflowType == nil || can.WorkflowType.Name != workflows.TurnWorkflow {
		t.Fatalf("continued as %+v, want %s", can.WorkflowType, workflows.TurnWorkflow)
	}
	var next workflows.TurnInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatalf("decode continue-as-new input: %v", err)
	}
	if len(h.toolCalls()) != 0 {
		t.Fatalf("tools ran before continuing as new: %v", h.toolLog())
	}
	r := next.Resume
	if r == nil || r.Step == nil {
		t.Fatalf("next input has no resume step: %+v", next)
	}
	// The conversation so far is stored: the next run gets its head only.
	carried, err := h.content.Load(context.Background(), testTurn, next.Resume.Conversation)
	if err != nil {
		t.Fatal(err)
	}
	if next.Prompt != "" || len(next.Messages) != 0 || len(carried) != 2 || carried[0].Content != "do the work" ||
		len(carried[1].ToolCalls) != 2 || string(next.RunLocal["k"]) != `"v"` {
		t.Fatalf("next input = prompt %q, messages %+v, stored %+v, run-local %v", next.Prompt, next.Messages, carried, next.RunLocal)
	}
	if r.Iterations != 1 || r.ToolCalls != 2 || len(r.Step.Slots) != 2 || len(r.Step.Pending) != 2 {
		t.Fatalf("resume = %+v, step %+v", r, r.Step)
	}
	if len(r.Step.Answers) != 1 || r.Step.Answers[0].CallID != "call_1_1" || r.Step.Answers[0].Approval == nil ||
		r.Step.Answers[0].Approval.Decision != workflows.DecisionAllow {
		t.Fatalf("carried answers = %+v, want call_1_1 allowed", r.Step.Answers)
	}
	if r.Seq == 0 || len(r.Events) != r.Seq {
		t.Fatalf("carried %d events with seq %d", len(r.Events), r.Seq)
	}

	// The next run restores the pending call and finishes after approval.
	h2 := newHarness(t)
	h2.content = h.content
	h2.prepare = askAll
	var waiting []workflows.Pending
	h2.env.RegisterDelayedCallback(func() {
		waiting = h2.pending()
		second = h2.update("b", workflows.Approval{CallID: "call_1_2", Hash: h2.hash("call_1_2"), Decision: workflows.DecisionAllow})
	}, time.Minute)
	res := h2.run(next)
	if second == nil || !second.accepted || !second.completed {
		t.Fatalf("approval in the next run: %+v", second)
	}
	if len(waiting) != 1 || waiting[0].CallID != "call_1_2" || waiting[0].Hash != r.Step.Pending[1].Hash {
		t.Fatalf("pending in the next run = %+v, want call_1_2 with its hash", waiting)
	}
	if res.Answer != "both done" || res.Iterations != 2 || res.ToolCalls != 2 {
		t.Fatalf("result = answer %q, iterations %d, tool calls %d", res.Answer, res.Iterations, res.ToolCalls)
	}
	for _, id := range []string{"call_1_1", "call_1_2"} {
		if m := toolMessage(t, res.Messages, id); m.IsError {
			t.Fatalf("%s = %+v", id, m)
		}
	}
	if n := len(h2.prepareCalls()); n != 0 {
		t.Fatalf("the next run re-prepared %d calls, want 0 (verdicts are carried)", n)
	}
	if n := len(h2.modelCalls()); n != 1 {
		t.Fatalf("the next run called the model %d times, want 1", n)
	}
	evs := h2.events()
	if len(evs) == 0 || evs[0].Seq != 1 || evs[len(evs)-1].Type != workflows.EventFinal {
		t.Fatalf("events of the next run start at %+v", evs)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq != evs[i-1].Seq+1 {
			t.Fatalf("event seq jumps from %d to %d", evs[i-1].Seq, evs[i].Seq)
		}
	}
}

// TestTurnContinueAsNewKeepsSignal documents a bug (this test fails): an
// approval signal delivered in the same workflow task as the wake-up
// that continues the turn as new (here an Update; a deadline timer does
// the same) is lost. The signal goroutine's blocked Selector takes the
// value out of the channel when it is delivered, so drainSignals'
// ReceiveAsync in endOrContinue finds nothing, and the root coroutine
// builds the continue-as-new input before the signal goroutine runs.
// The same pair without continue-as-new applies both answers (the
// goroutine runs later in the task). A fix: in endOrContinue, yield to
// the other coroutines before draining (e.g. block on a channel fed by
// a workflow.Go started there), or read signals only in the main loop.
func TestTurnContinueAsNewKeepsSignal(t *testing.T) {
	h := newHarness(t)
	h.prepare = askAll
	in := turnInput(
		step("", call("Bash", map[string]any{"command": "a"}), call("Bash", map[string]any{"command": "b"})),
		step("end"),
	)
	in.ContinueAsNewAfter = 100
	var up *updateOutcome
	h.env.RegisterDelayedCallback(func() {
		// The signal is buffered without a workflow task of its own: the
		// update's task sees both, and the history past the bound.
		atNextTask(h, 150)
		h.env.SignalWorkflowSkippingWorkflowTask(workflows.SignalApprove, workflows.Approval{CallID: "call_1_2", Hash: h.hash("call_1_2"), Decision: workflows.DecisionDeny, Reason: "no"})
		up = h.update("a", workflows.Approval{CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionAllow})
	}, time.Minute)
	h.env.ExecuteWorkflow(workflows.TurnWorkflow, in)
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	if up == nil || !up.accepted || !up.completed {
		t.Fatalf("update: %+v", up)
	}
	var next workflows.TurnInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	got := map[string]workflows.Decision{}
	for _, a := range next.Resume.Step.Answers {
		got[a.CallID] = a.Approval.Decision
	}
	if want := map[string]workflows.Decision{"call_1_1": workflows.DecisionAllow, "call_1_2": workflows.DecisionDeny}; !reflect.DeepEqual(got, want) {
		t.Fatalf("carried answers = %v, want %v", got, want)
	}
	h2 := newHarness(t)
	h2.content = h.content
	res := h2.run(next)
	if m := toolMessage(t, res.Messages, "call_1_2"); m.Content != "The user denied this Bash call: no" {
		t.Fatalf("call_1_2 = %q", m.Content)
	}
	if m := toolMessage(t, res.Messages, "call_1_1"); m.Content != `Bash ran {"command":"a"}` {
		t.Fatalf("call_1_1 = %q", m.Content)
	}
}

// TestTurnToolFailureMessage documents a bug (this test
// fails): the "Tool failed: ..." result the model reads is the innermost
// error of the failure chain, formatted with Error(). For an
// ApplicationError that adds the SDK's "(type: X, retryable: B)" suffix
// whenever the root error has a Go type other than errors.New's, and
// the innermost error drops the context the activity wrapped around it:
// activities.Tool returns fmt.Errorf("tool %s: %w", ...) around e.g. an
// *fs.PathError, and the model reads "Tool failed: no such file or
// directory (type: Errno, retryable: true)" — no path, SDK noise, and
// "retryable: true" for a call that ran at most once. A fix: use the
// outermost ApplicationError's Message() (the activity's full message).
func TestTurnToolFailureMessage(t *testing.T) {
	h := newHarness(t)
	h.prepare = allowAll
	h.tool = func(_ context.Context, in workflows.ToolInput) (workflows.ToolOutput, error) {
		if in.Call.Name == "Read" {
			return workflows.ToolOutput{}, temporal.NewNonRetryableApplicationError("disk unreadable", "IOError", nil)
		}
		// What activities.Activities.Tool returns for an infrastructure fault.
		return workflows.ToolOutput{}, fmt.Errorf("tool %s: %w", in.Call.Name,
			&fs.PathError{Op: "open", Path: "/work/.env", Err: syscall.ENOENT})
	}
	res := h.run(turnInput(step("",
		call("Bash", map[string]any{"command": "deploy"}),
		call("Read", map[string]any{"path": "/broken"})), step("ok")))
	note := "\nThe call was not retried because it may have had side effects; check its effects before trying again."
	for id, want := range map[string]string{
		"call_1_1": "Tool failed: tool Bash: open /work/.env: no such file or directory" + note,
		"call_1_2": "Tool failed: disk unreadable",
	} {
		if m := toolMessage(t, res.Messages, id); m.Content != want {
			t.Errorf("%s: the model reads %q, want %q", id, m.Content, want)
		}
	}
}

// TestTurnApprovalTimeoutFromPolicy: without a turn-wide bound, the
// call's policy bounds the wait; a negative policy timeout waits without
// a deadline.
func TestTurnApprovalTimeoutFromPolicy(t *testing.T) {
	for _, c := range []struct {
		name   string
		policy time.Duration
		want   time.Duration // 0: no deadline
	}{
		{"policy bound", 30 * time.Minute, 30 * time.Minute},
		{"negative is unbounded", -1, 0},
		{"default", 0, workflows.DefaultApprovalTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
				p := askAll(in)
				p.Policy.ApprovalTimeout = c.policy
				return p
			}
			start := h.env.Now()
			var p []workflows.Pending
			h.env.RegisterDelayedCallback(func() {
				p = h.pending()
				h.update("ok", workflows.Approval{CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionAllow})
			}, time.Minute)
			h.run(turnInput(step("", call("Bash", map[string]any{"command": "x"})), step("end")))
			wantDeadline := time.Time{}
			if c.want > 0 {
				wantDeadline = start.Add(c.want)
			}
			if len(p) != 1 || !p[0].Deadline.Equal(wantDeadline) {
				t.Fatalf("pending = %+v, want deadline %v", p, wantDeadline)
			}
		})
	}
}

// TestTurnEditedInputIsANewCall: the approver edits a read-only call
// (fast path, 3 attempts) into a side-effecting one. The edit is decided
// again, and runs with its own verdict: a regular activity, one attempt,
// and the side-effect note on failure. An edit the policy denies is
// refused without running.
func TestTurnEditedInputIsANewCall(t *testing.T) {
	h := newHarness(t)
	h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
		var args struct{ Command string }
		_ = json.Unmarshal(in.Call.Input, &args)
		p := asked("Bash", "Permission required for Bash")
		switch args.Command {
		case "ls /etc", "ls /var":
			p.ReadOnly = true
			p.Policy = workflows.CallPolicy{MaxAttempts: 3, Local: true, LocalTimeout: time.Second}
		case "rm -rf /":
			p.Decision = permission.Decision{Behavior: permission.Deny, Message: "Bash(rm:*) is denied", Reason: "Rule: Bash(rm:*)"}
		}
		return p
	}
	var mu sync.Mutex
	attempts := map[string]int{}
	h.tool = func(ctx context.Context, in workflows.ToolInput) (workflows.ToolOutput, error) {
		mu.Lock()
		attempts[in.Call.ID]++
		mu.Unlock()
		return workflows.ToolOutput{}, errors.New("connection reset")
	}
	in := turnInput(step("",
		call("Bash", map[string]any{"command": "ls /etc"}),
		call("Bash", map[string]any{"command": "ls /var"})), step("ok"))
	var o1, o2 *updateOutcome
	h.env.RegisterDelayedCallback(func() {
		o1 = h.update("edit", workflows.Approval{CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionAllow,
			Input: json.RawMessage(`{"command":"deploy --prod"}`), By: "alice"})
		o2 = h.update("denied", workflows.Approval{CallID: "call_1_2", Hash: h.hash("call_1_2"), Decision: workflows.DecisionAllow,
			Input: json.RawMessage(`{"command":"rm -rf /"}`), By: "alice"})
	}, time.Minute)
	res := h.run(in)
	if !o1.accepted || !o2.accepted {
		t.Fatalf("updates: %+v %+v", o1, o2)
	}
	if n := attempts["call_1_1"]; n != 1 {
		t.Fatalf("the edited side-effecting call ran %d times, want once (its own policy, not the read-only original's)", n)
	}
	if n := attempts["call_1_2"]; n != 0 {
		t.Fatalf("the denied edit ran %d times", n)
	}
	m := toolMessage(t, res.Messages, "call_1_1")
	if !strings.Contains(m.Content, "not retried because it may have had side effects") {
		t.Errorf("edited call's result = %q, want the side-effect note", m.Content)
	}
	if m := toolMessage(t, res.Messages, "call_1_2"); m.Content != "Permission denied: Bash(rm:*) is denied" {
		t.Errorf("denied edit's result = %q", m.Content)
	}
	for _, ti := range h.toolCalls() {
		if ti.Call.ID == "call_1_1" && string(ti.Call.Input) != `{"command":"deploy --prod"}` {
			t.Errorf("edited call ran with %s", ti.Call.Input)
		}
	}
}

// TestTurnStateTooLargeToContinue: a turn whose state no longer fits a
// run's input ends with the reason instead of stalling on the server's
// payload limit.
func TestTurnStateTooLargeToContinue(t *testing.T) {
	h := newHarness(t)
	// Encoding 25,000 read stamps under -race on a busy machine can take
	// longer than the default 1 s deadlock detector allows.
	h.env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	h.prepare = askAll
	in := turnInput(step("", call("Bash", map[string]any{"command": "a"})), step("done"))
	in.ContinueAsNewAfter = 100
	in.State.Reads = map[string]tools.FileStamp{}
	for i := range 25000 {
		in.State.Reads[fmt.Sprintf("/work/some/rather/long/directory/name/file-%06d.go", i)] = tools.FileStamp{Size: int64(i)}
	}
	h.env.RegisterDelayedCallback(func() {
		h.env.SetCurrentHistoryLength(150)
		h.update("a", workflows.Approval{CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionAllow, By: "alice"})
	}, time.Minute)
	h.env.ExecuteWorkflow(workflows.TurnWorkflow, in)
	err := h.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if err == nil || errors.As(err, &can) || !strings.Contains(err.Error(), "cannot continue as new") || !strings.Contains(err.Error(), workflows.ErrTypeStateTooLarge) {
		t.Fatalf("workflow error = %v, want a StateTooLarge failure", err)
	}
}

// TestTurnWaitFloodContinuesAsNew: a waiting turn flooded with 500
// rejected answers (stale hashes, results for a call that waits for an
// approval), each costing about five events of history, continues as new
// as soon as its history passes the bound, while it still waits, not at
// its deadline 48 hours later. The next run carries the pending entry,
// with its hash, and takes the real answer.
func TestTurnWaitFloodContinuesAsNew(t *testing.T) {
	h := newHarness(t)
	h.prepare = askAll
	in := turnInput(step("", call("Bash", map[string]any{"command": "deploy"})), step("deployed"))
	in.ContinueAsNewAfter = 100
	in.ApprovalTimeout = 48 * time.Hour
	start := h.env.Now()
	var listed []workflows.Pending
	var canAt time.Time
	h.env.RegisterDelayedCallback(func() { listed = h.pending() }, 30*time.Second)
	for i := range 500 {
		h.env.RegisterDelayedCallback(func() {
			// The history as the answers before this one left it.
			h.env.SetCurrentHistoryLength(20 + 5*i)
			canAt = h.env.Now()
			if i%2 == 0 {
				h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{CallID: "call_1_1", Hash: "stale", Decision: workflows.DecisionAllow})
			} else {
				h.env.SignalWorkflow(workflows.SignalExternalResult, workflows.ExternalResult{CallID: "call_1_1", Hash: "stale", Content: "bogus"})
			}
		}, time.Minute+time.Duration(i)*time.Second)
	}
	h.env.ExecuteWorkflow(workflows.TurnWorkflow, in)
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	// The 16 answers of the first 16 seconds bring the history to the
	// bound (20 + 16×5 = 100 events): the turn continues as new at the
	// next workflow task.
	if got, want := h.env.Now().Sub(start), time.Minute+16*time.Second; got != want || !canAt.Equal(start.Add(want)) {
		t.Fatalf("continued as new %v after the start, want %v (the answer that passed the bound)", got, want)
	}
	if n := len(h.toolCalls()); n != 0 {
		t.Fatalf("%d tools ran before the answer", n)
	}
	var next workflows.TurnInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	st := next.Resume.Step
	if len(listed) != 1 || st == nil || len(st.Pending) != 1 || len(st.Answers) != 0 || st.Pending[0].Hash != listed[0].Hash {
		t.Fatalf("carried step = %+v, want the waiting call (listed %+v) without an answer", st, listed)
	}
	if rej := eventsOfType(next.Resume.Events, workflows.EventRejected); len(rej) != 16 {
		t.Fatalf("%d rejected answers recorded before continuing, want 16", len(rej))
	}

	// The next run waits for the same call and takes the real answer.
	h2 := newHarness(t)
	h2.content = h.content
	h2.prepare = askAll
	var up *updateOutcome
	var waiting []workflows.Pending
	h2.env.RegisterDelayedCallback(func() {
		waiting = h2.pending()
		up = h2.update("real", workflows.Approval{CallID: "call_1_1", Hash: listed[0].Hash, Decision: workflows.DecisionAllow, By: "alice"})
	}, time.Minute)
	res := h2.run(next)
	if len(waiting) != 1 || waiting[0].CallID != "call_1_1" {
		t.Fatalf("pending in the next run = %+v", waiting)
	}
	if up == nil || !up.accepted || up.err != nil {
		t.Fatalf("answer in the next run: %+v", up)
	}
	if m := toolMessage(t, res.Messages, "call_1_1"); m.Content != `Bash ran {"command":"deploy"}` || res.Answer != "deployed" {
		t.Fatalf("result = %q, answer %q", m.Content, res.Answer)
	}
	if n := len(h2.toolCalls()); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
}

// TestTurnNotificationCarriedAcrossContinueAsNew: a notification still
// in flight when a waiting turn continues as new (its receiver keeps
// failing) is waited for at most the grace period, then carried: the
// next run sends it again, and it is delivered there.
func TestTurnNotificationCarriedAcrossContinueAsNew(t *testing.T) {
	h := newHarness(t)
	h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
		p := askAll(in)
		p.Policy.Notify = true
		return p
	}
	h.notifyErr = func(workflows.NotifyInput, int32) error { return errors.New("receiver down") }
	in := turnInput(step("", call("Bash", map[string]any{"command": "deploy"})), step("deployed"))
	in.ContinueAsNewAfter = 100
	start := h.env.Now()
	h.env.RegisterDelayedCallback(func() {
		atNextTask(h, 150)
		h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{CallID: "call_1_1", Hash: "stale", Decision: workflows.DecisionAllow})
	}, time.Minute)
	h.env.ExecuteWorkflow(workflows.TurnWorkflow, in)
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	if got, want := h.env.Now().Sub(start), time.Minute+30*time.Second; got != want {
		t.Fatalf("continued as new %v after the start, want %v (the bound passed at 1m, then the notification's grace)", got, want)
	}
	sent := h.notifyCalls()
	if len(sent) < 2 || sent[0].Type != workflows.NotifyApprovalRequested {
		t.Fatalf("notification attempts in the first run = %+v, want retries of approval_requested", sent)
	}
	var next workflows.TurnInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if n := next.Resume.Notifying; len(n) != 1 || !reflect.DeepEqual(n[0], sent[0]) {
		t.Fatalf("carried notifications = %+v, want %+v", n, sent[0])
	}

	h2 := newHarness(t)
	h2.content = h.content
	h2.env.RegisterDelayedCallback(func() {
		h2.update("real", workflows.Approval{CallID: "call_1_1", Hash: h2.hash("call_1_1"), Decision: workflows.DecisionAllow})
	}, time.Minute)
	if res := h2.run(next); res.Answer != "deployed" {
		t.Fatalf("answer = %q", res.Answer)
	}
	// The next run sends the carried one again, then the answer's.
	if got := h2.notifyCalls(); len(got) != 2 || !reflect.DeepEqual(got[0], sent[0]) || got[1].Type != workflows.NotifyApprovalAnswered {
		t.Fatalf("notifications sent by the next run = %+v, want the carried one once, then approval_answered", got)
	}
}

// TestTurnEndWaitsForNotification: a turn whose last step follows an
// escalation ends only once the escalation's notification, failing twice
// at its receiver, is delivered by its third attempt (1 s and 2 s of
// backoff), not while it is in flight.
func TestTurnEndWaitsForNotification(t *testing.T) {
	h := newHarness(t)
	h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
		p := askAll(in)
		p.Policy.Notify = true
		return p
	}
	var delivered time.Time
	h.notifyErr = func(in workflows.NotifyInput, attempt int32) error {
		if in.Type == workflows.NotifyApprovalEscalated && attempt < 3 {
			return errors.New("try later")
		}
		if in.Type == workflows.NotifyApprovalEscalated {
			delivered = h.env.Now()
		}
		return nil
	}
	in := turnInput(step("", call("Bash", map[string]any{"command": "deploy"})), step("over"))
	in.ApprovalTimeout = time.Hour
	start := h.env.Now()
	res := h.run(in)
	if m := toolMessage(t, res.Messages, "call_1_1"); m.Content != "The user denied this Bash call by deadline: approval timed out" {
		t.Fatalf("result = %q", m.Content)
	}
	var esc int
	for _, n := range h.notifyCalls() {
		if n.Type == workflows.NotifyApprovalEscalated {
			esc++
		}
	}
	if esc != 3 || delivered.IsZero() {
		t.Fatalf("%d attempts of the escalation's notification (delivered %v), want 3 and delivered", esc, delivered)
	}
	if got, want := h.env.Now().Sub(start), time.Hour+3*time.Second; got != want {
		t.Fatalf("turn ended %v after the start, want %v (after the notification's third attempt)", got, want)
	}
}

// TestTurnReadsToolFlags: verdicts asked for with PrepareInput.ToolFlags
// carry only the tool's flags (Prepared.Flags, no Info), and the turn
// reads them: two concurrency-safe Reads run at once, and an external
// AskUser call waits for its result instead of running.
func TestTurnReadsToolFlags(t *testing.T) {
	h := newHarness(t)
	h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
		p := allowed(in.Call.Name)
		if in.ToolFlags {
			f := workflows.FlagsOf(p.Tool)
			p.Tool, p.Flags = tools.Info{}, &f
		}
		return p
	}
	bar := newBarrier(2)
	var mu sync.Mutex
	overlapped := 0
	h.tool = func(ctx context.Context, in workflows.ToolInput) (workflows.ToolOutput, error) {
		if in.Call.Name == "Read" && bar.wait() {
			mu.Lock()
			overlapped++
			mu.Unlock()
		}
		return echoTool(ctx, in)
	}
	in := turnInput(
		step("", call("Read", map[string]any{"path": "/a"}), call("Read", map[string]any{"path": "/b"})),
		step("", call("AskUser", map[string]any{"question": "colour?"})),
		step("done"),
	)
	var waiting []workflows.Pending
	var answered bool
	h.env.RegisterDelayedCallback(func() {
		waiting = h.pending()
		if len(waiting) != 1 {
			return
		}
		h.env.UpdateWorkflow(workflows.UpdateExternalResult, "ext", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(error) {}, OnComplete: func(_ any, err error) { answered = err == nil },
		}, workflows.ExternalResult{CallID: waiting[0].CallID, Hash: waiting[0].Hash, Content: "blue"})
	}, time.Minute)
	res := h.run(in)
	for _, p := range h.prepareCalls() {
		if !p.ToolFlags {
			t.Fatalf("prepare of %s asked for the whole tool Info", p.Call.ID)
		}
	}
	if overlapped != 2 {
		t.Fatalf("%d of the two Reads overlapped: the concurrency-safe flag was not read", overlapped)
	}
	if len(waiting) != 1 || waiting[0].Kind != workflows.PendingExternal || !answered {
		t.Fatalf("pending = %+v, answered %v: want AskUser waiting for an external result", waiting, answered)
	}
	if m := toolMessage(t, res.Messages, "call_2_1"); m.Content != "blue" {
		t.Fatalf("AskUser result = %q, want the external answer", m.Content)
	}
	for _, c := range h.toolCalls() {
		if c.Call.Name == "AskUser" {
			t.Fatal("the external AskUser call ran as a tool")
		}
	}
}

// TestTurnPendingShowsHosts: the inbox entry of an asked call says how
// it will run if allowed, with the hosts its network reaches, what
// granted them and its limits (the recorded profile's String).
func TestTurnPendingShowsHosts(t *testing.T) {
	h := newHarness(t)
	h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
		p := asked(in.Call.Name, "Permission required for Bash: the command asks for the network to registry.npmjs.org")
		p.Sandbox = &calls.Sandbox{Write: []string{"/work"}, Dirs: []string{"/work"}, Network: true,
			Hosts: []string{"registry.npmjs.org"}, NetworkBy: "network_hosts approved by a person: registry.npmjs.org",
			Limits: &calls.Limits{Processes: 512, Memory: 2 << 30}}
		return p
	}
	in := turnInput(step("", call("Bash", map[string]any{"command": "npm install", "network_hosts": []string{"registry.npmjs.org"}})), step("fine"))
	var got []workflows.Pending
	h.env.RegisterDelayedCallback(func() {
		got = h.pending()
		h.env.SignalWorkflow(workflows.SignalApprove, workflows.Approval{
			CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionDeny, By: "bob"})
	}, time.Minute)
	h.run(in)
	want := "write /work, network to registry.npmjs.org (network_hosts approved by a person: registry.npmjs.org), limits processes 512, memory 2 GiB"
	if len(got) != 1 || got[0].Sandbox != want {
		t.Fatalf("pending = %+v, want its sandbox %q", got, want)
	}
}

// TestTurnReminderBeforeDeadline: a call whose policy asks for a
// reminder an hour before its 3 h deadline gets one approval_reminder at
// 2 h, then the answer's approval_answered (who, via, decision, reason);
// a call answered before its reminder time gets none (the control).
func TestTurnReminderBeforeDeadline(t *testing.T) {
	for _, c := range []struct {
		name     string
		answerAt time.Duration
		want     []string
	}{
		{"reminded", 150 * time.Minute, []string{"approval_requested", "approval_reminder", "approval_answered"}},
		{"answered first", 30 * time.Minute, []string{"approval_requested", "approval_answered"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.prepare = func(in workflows.PrepareInput) workflows.Prepared {
				p := askAll(in)
				p.Policy.Notify, p.Policy.RemindBefore = true, time.Hour
				return p
			}
			in := turnInput(step("", call("Bash", map[string]any{"command": "deploy"})), step("over"))
			in.ApprovalTimeout = 3 * time.Hour
			start := h.env.Now()
			h.env.RegisterDelayedCallback(func() {
				h.update("ok", workflows.Approval{CallID: "call_1_1", Hash: h.hash("call_1_1"), Decision: workflows.DecisionAllow,
					By: "alice", Via: "slack", Reason: "OPS-7"})
			}, c.answerAt)
			res := h.run(in)
			if m := toolMessage(t, res.Messages, "call_1_1"); m.Content != `Bash ran {"command":"deploy"}` {
				t.Fatalf("result = %q", m.Content)
			}
			if got := h.env.Now().Sub(start); got > c.answerAt+time.Minute {
				t.Fatalf("turn ended %v after start, want about %v", got, c.answerAt)
			}
			var types []string
			for _, n := range h.notifyCalls() {
				types = append(types, n.Type)
				switch n.Type {
				case workflows.NotifyApprovalAnswered:
					if a := n.Answer; a == nil || a.By != "alice" || a.Via != "slack" || a.Decision != "allow" || a.Reason != "OPS-7" || a.At.IsZero() {
						t.Errorf("answered note = %+v", n.Answer)
					}
				case workflows.NotifyApprovalReminder:
					if !n.Pending.Reminded || !n.Pending.Deadline.Equal(start.Add(3*time.Hour)) {
						t.Errorf("reminder pending = %+v", n.Pending)
					}
				}
			}
			if !slices.Equal(types, c.want) {
				t.Fatalf("notifications = %v, want %v", types, c.want)
			}
		})
	}
}
