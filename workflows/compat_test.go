package workflows_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// updateCompat rewrites the goldens under testdata/compat. The flag is
// shared with any other test of this binary that defines -update.
var updateCompat = boolFlag("update", "rewrite testdata/compat goldens")

// boolFlag defines a bool flag, or reuses it when another test file of
// the binary already defined one with that name.
func boolFlag(name, usage string) func() bool {
	if f := flag.Lookup(name); f != nil {
		return func() bool { v, _ := strconv.ParseBool(f.Value.String()); return v }
	}
	p := flag.Bool(name, false, usage)
	return func() bool { return *p }
}

const compatDir = "testdata/compat"

// Deterministic sample values shared by the samples below.
var (
	t0 = time.Date(2025, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	t1 = t0.Add(7 * 24 * time.Hour)
)

func sampleCall() model.ToolCall {
	return model.ToolCall{ID: "call_1_1", Name: "Bash", Input: json.RawMessage(`{"command":"ls -la"}`)}
}

func sampleMessages() []model.Message {
	return []model.Message{{
		Role: model.RoleAssistant, Content: "Let me look.", ToolCalls: []model.ToolCall{sampleCall()},
		ToolCallID: "call_1_1", ToolName: "Bash", IsError: true, Ref: "5d41402abc4b2a76b9719d911017c592", Size: 70000,
	}}
}

func sampleCompaction() *model.Compaction {
	return &model.Compaction{Strategy: "trim", From: "9b74c9897bac770ffc029102a200c5de", MessagesBefore: 40, MessagesAfter: 40,
		TokensBefore: 120000, TokensAfter: 60000}
}

func sampleScript() *model.Script {
	return &model.Script{Prompt: "List the workspace", Steps: []model.Step{{
		Text:      "Let me look.",
		ToolCalls: []model.ScriptedCall{{ID: "c1", Name: "Bash", Input: map[string]any{"command": "ls"}}},
		Usage:     ptr(sampleUsage()),
		Echo:      true,
	}}, Current: &model.Step{Text: "Done.", ToolCalls: []model.ScriptedCall{{ID: "c2", Name: "Read", Input: map[string]any{"file_path": "/work/a"}}},
		Usage: ptr(sampleUsage()), Echo: true}}
}

func sampleBudget() workflows.Budget {
	return workflows.Budget{Tokens: 2000000, InputTokens: 1500000, OutputTokens: 500000, Cost: 5, ToolCalls: 500,
		PerTool: map[string]int{"Bash": 200}, Time: 8 * time.Hour, Warn: 0.8}
}

func sampleUsage() model.Usage {
	return model.Usage{InputTokens: 100, CacheReadTokens: 30, CacheWriteTokens: 10, OutputTokens: 20, Cost: ptr(0.00125)}
}

func sampleRule(b permission.Behavior) permission.Rule {
	return permission.Rule{Tool: "Bash", Content: "npm run:*", Behavior: b, Source: "policy"}
}

func samplePermission() permission.Context {
	files, dirs := []string{".env"}, []string{".git"}
	return permission.Context{
		Mode: permission.ModeAcceptEdits, WorkingDirs: []string{"/work"},
		Allow:          []permission.Rule{sampleRule(permission.Allow)},
		Ask:            []permission.Rule{sampleRule(permission.Ask)},
		Deny:           []permission.Rule{sampleRule(permission.Deny)},
		DangerousFiles: &files, DangerousDirs: &dirs, SensitivePaths: []string{"**/secrets/**"},
		Protected: []string{"/work/.warden{,/**}"}, DangerousCommands: []string{"terraform destroy:*"},
		Sandbox: &permission.Sandbox{Network: true, Hosts: []string{"*.corp.example"},
			NetworkFor: []permission.NetworkRule{{Rule: "Bash(npm install:*)", Hosts: []string{"registry.npmjs.org", "*.example.org"},
				Methods: []string{"GET", "HEAD"}, Paths: []string{"/repos/**"}}}, AutoAllow: true, UnixSocketsFor: []string{"Bash(docker:*)"}},
		Quorum:        []permission.QuorumRule{{Rule: "Bash(kubectl delete:*)", Approvals: 2, RequireReason: true}},
		RequireReason: true,
		Session: &permission.SessionPolicy{Trifecta: permission.Ask, RuleOfTwo: permission.Deny, Enforce: ptr(false),
			Labels: []permission.SessionLabel{{Rule: "mcp__web__fetch", Legs: []permission.Leg{permission.LegUntrusted}}}},
		Limits:  []permission.WindowLimit{{Rule: "Bash(git push:*)", Max: 5, Per: time.Hour, Scope: permission.ScopeAgent, Enforce: ptr(true)}},
		LogOnly: []permission.Rule{sampleRule(permission.Deny)},
	}
}

func sampleTouches() []permission.Touch {
	return []permission.Touch{{Leg: permission.LegOut, CallID: "call_1_1", Tool: "Bash", What: "sent to api.github.com", Turn: 2, Network: true}}
}

func sampleTouched() *permission.Touched {
	return &permission.Touched{Touches: sampleTouches(), Counts: []int{0, 0, 1},
		Cleared: []permission.Cleared{{Leg: permission.LegUntrusted, CallID: "call_1", By: "alice"}}}
}

func sampleSandbox() *calls.Sandbox {
	return &calls.Sandbox{Write: []string{"/work", "/etc/app.conf"}, Dirs: []string{"/work"}, Protect: []string{"/work/.git/hooks"},
		Network: true, NetworkBy: "sandbox.network_for rule Bash(npm install:*)", UnixSockets: true, UnixSocketsBy: "sandbox.unix_sockets_for rule Bash(docker:*)", Off: true, Backend: "docker",
		Git: true, Read: []string{"/work/.env"}, Granted: []string{"/work/.vscode"},
		Hosts:  []string{"registry.npmjs.org", "10.0.0.5:8080"},
		HTTP:   []calls.HTTPRule{{Hosts: []string{"registry.npmjs.org"}, Methods: []string{"GET"}, Paths: []string{"/pkg/**"}, By: "sandbox.network_for rule Bash(npm install:*)"}},
		Limits: &calls.Limits{Processes: 512, Memory: 2 << 30, CPUTime: 10 * time.Minute, CPUs: 1.5, Tmp: 1 << 30, Write: 4 << 30}}
}

func sampleDecision() permission.Decision {
	return permission.Decision{
		Behavior: permission.Ask, Message: "Bash wants to run npm run build", Reason: "Mode: default",
		UpdatedInput: json.RawMessage(`{"command":"npm run build"}`),
		Suggestions:  []permission.Rule{sampleRule(permission.Allow)}, BypassImmune: true,
	}
}

func sampleTask() tools.Task {
	return tools.Task{
		ID: "1", Subject: "Run the tests", Description: "go test ./...", Status: tools.TaskInProgress,
		Owner: "agent", Blocks: []string{"2"}, BlockedBy: []string{"3"},
		Metadata: map[string]any{"priority": "high"}, CreatedAt: t0,
	}
}

func sampleState() tools.State {
	return tools.State{
		Reads: map[string]tools.FileStamp{"/work/go.mod": {Size: 42, ModTime: t0}},
		Tasks: []tools.Task{sampleTask()},
	}
}

func sampleResult() tools.Result {
	return tools.Result{
		CallID: "call_1_1", Name: "Bash", Content: "total 0\n", IsError: true, State: tools.StateError,
		Data:     []tools.DataBlock{{MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}},
		Metadata: map[string]any{"exit_code": 1}, Ref: "5d41402abc4b2a76b9719d911017c592", Size: 70000,
	}
}

func samplePending() workflows.Pending {
	return workflows.Pending{
		Kind: workflows.PendingApproval, CallID: "call_1_1", Tool: "Bash",
		Input: json.RawMessage(`{"command":"npm run build"}`), Message: "Bash wants to run npm run build",
		Reason: "Mode: default", Suggestions: []string{"Bash(npm run:*)"}, BypassImmune: true,
		RequestedAt: t0, Deadline: t1, Escalation: workflows.EscalateAllow, Escalated: true, Hash: "3f2a9c", Notify: true,
		Context: "Let me build it.", Prompt: "Fix the build.", Diff: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
		Sandbox: "write /work, network off", LiveVersion: 2, Workdir: "/work", Links: permission.Links{"/work/notes/key": "/home/u/.ssh/authorized_keys"},
		Quorum: 2, Approvals: []workflows.Approval{sampleApproval()}, ReasonRequired: true,
		RemindBefore: time.Hour, Reminded: true, ChatOn: true,
		Chat: []workflows.ChatRef{{Channel: "C0123", TS: "1700000000.000100"}},
	}
}

func sampleEvent() workflows.Event {
	return workflows.Event{
		Seq: 3, Time: t0, Type: workflows.EventToolCall, CallID: "call_1_1", Tool: "Bash",
		Text: "ls -la", Input: `{"command":"ls -la"}`, Error: true,
	}
}

// compatSamples are the wire types with every field set. The golden
// file of each is testdata/compat/<name>.json.
func compatSamples() []struct {
	name string
	v    any
} {
	return []struct {
		name string
		v    any
	}{
		{"TurnInput", workflows.TurnInput{
			Prompt: "Tell me about this workspace.", Messages: sampleMessages(), Instruction: "Be brief.",
			Model: workflows.ModelConfig{Provider: "scripted", Name: "demo", Script: sampleScript(), Local: true},
			Tools: []string{"Bash", "Read"}, Permission: samplePermission(), Backend: "local", Workdir: "/work",
			ToolQueue:     "docker-host",
			MaxIterations: 5, ApprovalTimeout: time.Hour, State: sampleState(),
			ReturnDirectly: []string{"TaskCreate"}, RunLocal: map[string]json.RawMessage{"calls": json.RawMessage(`2`)},
			ContinueAsNewAfter: 5000, LivePolicy: "warden-policy", Agent: "builder", Requester: "ops", Budget: ptr(sampleBudget()), AgentBudget: "warden-budget-builder",
			Session: true, Senders: []string{"alice"},
			Approvers: &workflows.Approvers{Users: map[string][]string{"alice": nil, "kube": {"k8s"}}, Roles: map[string][]string{"k8s": {"Bash(kubectl:*)"}}},
			Resume: &workflows.Resume{
				Iterations: 3, ToolCalls: 4, ToolErrors: 1, PolicyVersion: 1, Instruction: "Be brief.", Tools: []string{"Bash"},
				ReturnDirectly: []string{"TaskCreate"}, Seq: 9, Events: []workflows.Event{sampleEvent()},
				Conversation: "9b74c9897bac770ffc029102a200c5de", LiveVersion: 2, Usage: sampleUsage(),
				StartedAt: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC), BudgetRaised: ptr(sampleBudget()),
				ToolsRun: map[string]int{"Bash": 3}, BudgetParks: 1, BudgetWarned: []string{"cost@5"}, AgentSeq: 4, AgentCharged: sampleUsage(),
				Notifying: []workflows.NotifyInput{sampleNotify()},
				Team:      sampleTeam(), TeamVersion: 3, Touched: sampleTouched(),
				WindowUses: []workflows.WindowUse{{Limit: "Bash(git push:*)/1h0m0s", Key: "turn-1/call_1_1", At: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC), Per: time.Hour}},
				Session: workflows.SessionState{Turns: 2, TurnIter: 3, Idle: true, Paused: ptr(sampleControl()),
					Queue: []workflows.SessionMessage{sampleMessage()}, Steers: []workflows.SessionMessage{sampleMessage()},
					Interrupt: ptr(sampleMessage()), Cancel: ptr(sampleControl()), Usage: sampleUsage()},
				Step: &workflows.StepState{
					Slots:   []workflows.SlotState{{Call: sampleCall(), Prep: samplePrepared(), Ready: true, Result: func() *tools.Result { r := sampleResult(); return &r }()}},
					Pending: []workflows.Pending{samplePending()},
					Answers: []workflows.AnswerState{{CallID: "call_1_1", Approval: func() *workflows.Approval { a := sampleApproval(); return &a }(),
						External: func() *workflows.ExternalResult { e := sampleExternal(); return &e }(), Auto: "Rule: Bash(touch:*)", Denied: "Rule: Bash(curl:*)",
						Interrupted: "interrupted by alice"}},
				},
			},
		}},
		{"TurnResult", workflows.TurnResult{
			Answer: "Done.", Messages: sampleMessages(), Iterations: 2, ToolCalls: 1, ToolErrors: 1, Usage: sampleUsage(),
			State: sampleState(), Permission: samplePermission(), Stopped: "budget", StopReason: "budget cost reached (5.01 of 5), and the request to raise it was denied by owner: enough",
			Conversation: "9b74c9897bac770ffc029102a200c5de", AnswerRef: "5d41402abc4b2a76b9719d911017c592",
		}},
		{"ModelStepInput", workflows.ModelStepInput{
			Provider: "scripted", Model: "demo", Tools: []string{"Bash"}, Instruction: "Be brief.",
			Conversation: "9b74c9897bac770ffc029102a200c5de", Append: sampleMessages(), Script: sampleScript(),
		}},
		{"ModelStepOutput", workflows.ModelStepOutput{
			Conversation: "9b74c9897bac770ffc029102a200c5de", Message: sampleMessages()[0],
			Usage: sampleUsage(), Compaction: sampleCompaction(),
		}},
		{"ModelInput", workflows.ModelInput{
			Provider: "scripted", Model: "demo",
			Request: model.Request{
				Instruction: "Be brief.", Messages: sampleMessages(),
				Tools:  []model.ToolSpec{{Name: "Bash", Description: "Run a command.", InputSchema: json.RawMessage(`{"type":"object"}`)}},
				Script: sampleScript(), Purpose: model.PurposeSummarize,
			},
			Tools: []string{"Bash"},
		}},
		{"model.Response", model.Response{
			Text: "Let me look.", ToolCalls: []model.ToolCall{sampleCall()},
			Usage: sampleUsage(),
		}},
		{"CallEnv", workflows.CallEnv{Backend: "local", Workdir: "/work"}},
		{"PrepareInput", workflows.PrepareInput{
			Call: sampleCall(), Env: workflows.CallEnv{Backend: "local", Workdir: "/work"},
			Permission: samplePermission(), Allowed: []string{"Bash"}, State: ptr(sampleState()), ToolFlags: true,
			LivePolicy: "warden-policy", WorkflowID: "turn-1", Agent: "builder", Kind: workflows.VerdictEdit,
			Session: sampleTouched(),
		}},
		{"Prepared", samplePrepared()},
		{"AuditNote", workflows.AuditNote{Escalation: &workflows.EscalationNote{
			CallID: "call_1_1", Tool: "Bash", RequestedAt: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC),
			Deadline: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), Action: workflows.EscalateNotify, Notified: true, Roles: []string{"k8s"},
		}, Budget: &workflows.BudgetNote{
			CallID: "budget_1", Request: workflows.BudgetRequest{Kind: "tokens", Spent: "2000100", Limit: "2000000", Next: "call the model",
				Agent: "builder", Window: workflows.WindowDaily, Store: "warden-budget-builder"},
			Decision: workflows.DecisionAllow, Raise: ptr(sampleBudget()), By: "owner", Via: "slack", Reason: "release week",
		}, Head: &workflows.HeadNote{RunID: "run-1", Seq: 12, Hash: "9f2c0e", Format: 2},
			Window: &workflows.WindowNote{CallID: "call_1_1", Tool: "Bash", Limit: permission.WindowLimit{Rule: "Bash(git push:*)", Max: 5, Per: time.Hour, Scope: permission.ScopeAgent, Enforce: ptr(false)},
				Count: 5, Next: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), Enforced: true}}},
		{"ToolInput", workflows.ToolInput{
			Key: "turn-1/call_1_1", Call: sampleCall(), Env: workflows.CallEnv{Backend: "local", Workdir: "/work"}, State: sampleState(),
			ByRef: true, Sandbox: sampleSandbox(),
		}},
		{"ToolOutput", workflows.ToolOutput{Result: sampleResult(), State: sampleState()}},
		{"Approval", sampleApproval()},
		{"ExternalResult", sampleExternal()},
		{"Ack", workflows.Ack{CallID: "call_1_1", Status: "always_allow", NotRemembered: "could not remember Bash(npm run:*) in warden-policy: unknown external workflow execution"}},
		{"NotifyInput", sampleNotify()},
		{"Pending", samplePending()},
		{"Event", sampleEvent()},
		{"EventsPage", workflows.EventsPage{Events: []workflows.Event{sampleEvent()}, Next: 4, Done: true}},
		{"Summary", workflows.Summary{
			Iterations: 2, ToolCalls: 1, Pending: []workflows.Pending{samplePending()},
			Permission: samplePermission(), Tasks: []tools.Task{sampleTask()}, Done: true, Usage: sampleUsage(), LivePolicy: "warden-policy",
			Session: &workflows.SessionSummary{Session: true, State: "paused", Turns: 2, Paused: ptr(sampleControl()), Queued: 1, Steers: 1},
		}},
		{"PendingIndex", workflows.PendingIndex{
			Entries: []workflows.IndexEntry{{Pending: samplePending(), Preview: `{"command":"npm run`}}, More: true,
		}},
		{"client.PendingEntry", client.PendingEntry{WorkflowID: "turn-1", RunID: "run-1", Pending: samplePending(),
			Preview: `{"command":"npm run`, Truncated: true, Usage: ptr(sampleUsage())}},
		{"ToolsInput", workflows.ToolsInput{Wait: 10 * time.Second}},
		{"ToolsList", workflows.ToolsList{Tools: []tools.Entry{{Info: tools.Info{
			Name: "mcp__echo__echo", Description: "Echo the text back.", InputSchema: json.RawMessage(`{"type":"object"}`),
			ReadOnly: true, ConcurrencySafe: true, External: true, StateInjected: true,
		}, Source: "mcp:echo"}},
			Backends:  []workflows.BackendState{{Name: "local", Default: true, Sandbox: "OFF (backend.local.sandbox: off)"}},
			Protected: []string{"/srv/warden/data{,/**}"},
			Network:   []workflows.ToolNetwork{{Tool: "Bash", Hosts: []string{"registry.npmjs.org"}, By: "tools.Bash.network_hosts"}}}},
		{"permission.Context", samplePermission()},
		{"permission.Rule", sampleRule(permission.Allow)},
		{"permission.Decision", sampleDecision()},
		{"tools.State", sampleState()},
		{"tools.Task", sampleTask()},
		{"tools.Result", sampleResult()},
	}
}

// TestWireCompat pins the JSON encoding of every wire type to a golden
// file, both ways: the sample encodes to the golden, and the golden
// decodes and re-encodes to the same bytes, so renaming or removing a
// field fails. A field the sample leaves at its zero value fails too:
// new fields must be added to the sample and the golden deliberately.
func TestWireCompat(t *testing.T) {
	for _, s := range compatSamples() {
		t.Run(s.name, func(t *testing.T) {
			for _, path := range zeroFields(reflect.ValueOf(s.v), s.name) {
				t.Errorf("%s is zero in the sample: set it (and run go test -update) so the golden covers it", path)
			}
			got, err := json.MarshalIndent(s.v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			file := filepath.Join(compatDir, s.name+".json")
			if updateCompat() {
				writeGolden(t, file, got)
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s encodes differently from %s: the wire format changed.\ngot:\n%s\nwant:\n%s", s.name, file, got, want)
			}
			// Reverse: golden -> type -> JSON must give the golden back.
			p := reflect.New(reflect.TypeOf(s.v))
			if err := json.Unmarshal(want, p.Interface()); err != nil {
				t.Fatalf("decode %s: %v", file, err)
			}
			back, err := json.MarshalIndent(p.Elem().Interface(), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			back = append(back, '\n')
			if !bytes.Equal(back, want) {
				t.Errorf("%s does not round-trip through %s (renamed or removed field?)\ngot:\n%s\nwant:\n%s", file, s.name, back, want)
			}
		})
	}
}

// leafTypes are struct types checked as a whole, not field by field.
var leafTypes = []reflect.Type{reflect.TypeFor[time.Time]()}

// zeroFields lists the paths of exported, JSON-encoded struct fields that
// are zero anywhere in v. It descends into structs, pointers, the
// elements of slices and the values of maps.
func zeroFields(v reflect.Value, path string) []string {
	if slices.Contains(leafTypes, v.Type()) {
		return nil
	}
	var out []string
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			out = append(out, zeroFields(v.Elem(), path)...)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			out = append(out, zeroFields(v.Index(i), path+"["+strconv.Itoa(i)+"]")...)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			out = append(out, zeroFields(it.Value(), path+"[key]")...)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			fv := v.Field(i)
			p := path + "." + f.Name
			if f.Anonymous {
				p = path
			}
			if fv.IsZero() {
				out = append(out, p)
				continue
			}
			out = append(out, zeroFields(fv, p)...)
		}
	}
	return out
}

// constGroups are the exported constants whose values are part of the
// wire protocol, by group. names.json pins them.
func constGroups() map[string]map[string]any {
	str := func(kv ...string) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	return map[string]map[string]any{
		"workflows.workflow": str("TurnWorkflow", workflows.TurnWorkflow),
		// Span names: dashboards and trace queries filter on them.
		"workflows.spans": str("SpanApprovalWait", workflows.SpanApprovalWait, "SpanContinueAsNew", workflows.SpanContinueAsNew),
		"workflows.policy": str(
			"PolicyWorkflow", workflows.PolicyWorkflow, "DefaultPolicyStore", workflows.DefaultPolicyStore,
			"QueryPolicy", workflows.QueryPolicy, "UpdateSetPolicy", workflows.UpdateSetPolicy,
			"UpdateRevoke", workflows.UpdateRevoke, "UpdateUse", workflows.UpdateUse, "UpdateSetTeam", workflows.UpdateSetTeam,
			"SignalRemember", workflows.SignalRemember, "SignalPolicyChanged", workflows.SignalPolicyChanged,
			"ActivityPolicyFanout", workflows.ActivityPolicyFanout,
			"ActivityCheckRules", workflows.ActivityCheckRules,
			"ScopeInput", string(workflows.ScopeInput), "ScopeTurn", string(workflows.ScopeTurn),
			"ScopeAgent", string(workflows.ScopeAgent), "ScopeNamespace", string(workflows.ScopeNamespace),
		),
		"workflows.budget": str(
			"BudgetStoreWorkflow", workflows.BudgetStoreWorkflow, "BudgetStorePrefix", workflows.BudgetStorePrefix,
			"NamespaceBudgetStore", workflows.NamespaceBudgetStore, "QueryBudget", workflows.QueryBudget,
			"UpdateBudgetSet", workflows.UpdateBudgetSet, "UpdateBudgetCharge", workflows.UpdateBudgetCharge,
			"UpdateBudgetRaise", workflows.UpdateBudgetRaise, "ActivityBudgetCharge", workflows.ActivityBudgetCharge,
			"ActivityBudgetRaise", workflows.ActivityBudgetRaise, "ActivityAuditHead", workflows.ActivityAuditHead, "WindowDaily", workflows.WindowDaily, "WindowTotal", workflows.WindowTotal,
			"UpdateWindowReserve", workflows.UpdateWindowReserve, "ActivityWindowReserve", workflows.ActivityWindowReserve,
		),
		"workflows.tools": {
			"ToolsWorkflow": workflows.ToolsWorkflow, "ActivityTools": workflows.ActivityTools,
			"ToolsIDPrefix": workflows.ToolsIDPrefix, "DefaultToolsWait": workflows.DefaultToolsWait.String(),
		},
		"workflows.messages": str(
			"UpdateApprove", workflows.UpdateApprove, "SignalApprove", workflows.SignalApprove,
			"UpdateExternalResult", workflows.UpdateExternalResult, "SignalExternalResult", workflows.SignalExternalResult,
			"QueryPending", workflows.QueryPending, "QueryEvents", workflows.QueryEvents, "QueryState", workflows.QueryState,
			"UpdateMessage", workflows.UpdateMessage, "UpdateControl", workflows.UpdateControl,
			"DecisionWithdrawn", workflows.DecisionWithdrawn,
		),
		"workflows.session": str(
			"MessageQueue", string(workflows.MessageQueue), "MessageSteer", string(workflows.MessageSteer),
			"MessageInterrupt", string(workflows.MessageInterrupt), "ControlPause", string(workflows.ControlPause),
			"ControlResume", string(workflows.ControlResume), "ControlCancel", string(workflows.ControlCancel),
		),
		"workflows.search_attributes": str(
			"SAPendingCalls", workflows.SAPendingCalls, "SAPendingTools", workflows.SAPendingTools,
			"SAWaitingSince", workflows.SAWaitingSince, "SASessionState", workflows.SASessionState,
		),
		"workflows.pending_index": {
			"MemoPending": workflows.MemoPending, "PreviewBytes": workflows.PreviewBytes, "ContextBytes": workflows.ContextBytes,
		},
		"workflows.activities": str(
			"ActivityModel", workflows.ActivityModel, "ActivityPrepare", workflows.ActivityPrepare,
			"ActivityTool", workflows.ActivityTool,
			"ActivityNotify", workflows.ActivityNotify, "ActivityChatPost", workflows.ActivityChatPost, "ActivityChatUpdate", workflows.ActivityChatUpdate, "ActivityModelStep", workflows.ActivityModelStep,
			"MetricApprovalWait", workflows.MetricApprovalWait, "MetricApprovalEscalation", workflows.MetricApprovalEscalation,
			"MetricApprovalAnswers", workflows.MetricApprovalAnswers, "MetricWindowReached", workflows.MetricWindowReached,
		),
		"workflows.error_types": str(
			"ErrTypeUnknownModel", workflows.ErrTypeUnknownModel, "ErrTypeUnknownTool", workflows.ErrTypeUnknownTool, "ErrTypeUnmatchableRule", workflows.ErrTypeUnmatchableRule,
			"ErrTypeInvalidInput", workflows.ErrTypeInvalidInput, "ErrTypeStateTooLarge", workflows.ErrTypeStateTooLarge,
		),
		"workflows.events": str(
			"EventModel", workflows.EventModel, "EventUsage", workflows.EventUsage, "EventBudget", workflows.EventBudget, "EventToolCall", workflows.EventToolCall,
			"EventDecision", workflows.EventDecision, "EventWaiting", workflows.EventWaiting,
			"EventAnswered", workflows.EventAnswered, "EventRejected", workflows.EventRejected,
			"EventResult", workflows.EventResult, "EventFinal", workflows.EventFinal, "EventCustom", workflows.EventCustom,
			"EventEscalated", workflows.EventEscalated, "EventCompacted", workflows.EventCompacted,
			"EventFailed", workflows.EventFailed, "EventMessage", workflows.EventMessage, "EventControl", workflows.EventControl,
		),
		"workflows.decisions": str(
			"DecisionAllow", string(workflows.DecisionAllow), "DecisionAlwaysAllow", string(workflows.DecisionAlwaysAllow),
			"DecisionDeny", string(workflows.DecisionDeny),
		),
		"workflows.notifications": str(
			"NotifyApprovalRequested", workflows.NotifyApprovalRequested, "NotifyApprovalEscalated", workflows.NotifyApprovalEscalated,
			"NotifySessionMessage", workflows.NotifySessionMessage, "NotifySessionPaused", workflows.NotifySessionPaused,
			"NotifySessionResumed", workflows.NotifySessionResumed, "NotifySessionCancelled", workflows.NotifySessionCancelled,
			"NotifySessionAnswered", workflows.NotifySessionAnswered,
			"NotifyExternalRequested", workflows.NotifyExternalRequested, "NotifyBudgetWarning", workflows.NotifyBudgetWarning,
			"NotifyApprovalAnswered", workflows.NotifyApprovalAnswered,
			"NotifyApprovalReminder", workflows.NotifyApprovalReminder, "NotifyApprovalProgress", workflows.NotifyApprovalProgress, "NotifyApprovalUpdated", workflows.NotifyApprovalUpdated,
		),
		"workflows.pending_kinds": str(
			"PendingApproval", string(workflows.PendingApproval), "PendingExternal", string(workflows.PendingExternal),
			"PendingBudget", string(workflows.PendingBudget), "BudgetTool", workflows.BudgetTool,
		),
		"workflows.verdict_kinds": str(
			"VerdictFirst", string(workflows.VerdictFirst), "VerdictRedecide", string(workflows.VerdictRedecide),
			"VerdictEdit", string(workflows.VerdictEdit),
		),
		"workflows.escalations": str(
			"EscalateDeny", string(workflows.EscalateDeny), "EscalateAllow", string(workflows.EscalateAllow),
			"EscalateNotify", string(workflows.EscalateNotify),
		),
		"workflows.defaults": {
			"DefaultMaxIterations":   workflows.DefaultMaxIterations,
			"DefaultApprovalTimeout": workflows.DefaultApprovalTimeout.String(),
		},
		"permission.modes": str(
			"ModeDefault", string(permission.ModeDefault), "ModeExplore", string(permission.ModeExplore),
			"ModeAcceptEdits", string(permission.ModeAcceptEdits), "ModeBypass", string(permission.ModeBypass),
			"ModeDontAsk", string(permission.ModeDontAsk),
		),
		"permission.behaviors": str(
			"Allow", string(permission.Allow), "Ask", string(permission.Ask), "Deny", string(permission.Deny),
			"Passthrough", string(permission.Passthrough),
		),
		"tools.result_states": str(
			"StateSuccess", string(tools.StateSuccess), "StateError", string(tools.StateError),
			"StateDenied", string(tools.StateDenied), "StateInterrupted", string(tools.StateInterrupted),
		),
		"tools.task_statuses": str(
			"TaskPending", string(tools.TaskPending), "TaskInProgress", string(tools.TaskInProgress),
			"TaskCompleted", string(tools.TaskCompleted), "TaskDeleted", string(tools.TaskDeleted),
		),
		"model.roles": str(
			"RoleSystem", string(model.RoleSystem), "RoleUser", string(model.RoleUser),
			"RoleAssistant", string(model.RoleAssistant), "RoleTool", string(model.RoleTool),
		),
	}
}

// TestNamesCompat pins the names and values of the protocol constants to
// testdata/compat/names.json, and fails when package workflows declares
// an exported constant that no group lists.
func TestNamesCompat(t *testing.T) {
	groups := constGroups()
	got, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	file := filepath.Join(compatDir, "names.json")
	if updateCompat() {
		writeGolden(t, file, got)
	} else {
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("protocol names differ from %s: clients and running workflows depend on them.\ngot:\n%s\nwant:\n%s", file, got, want)
		}
	}

	listed := map[string]bool{}
	for g, names := range groups {
		if strings.HasPrefix(g, "workflows.") {
			for n := range names {
				listed[n] = true
			}
		}
	}
	for _, name := range exportedConsts(t, ".") {
		if !listed[name] {
			t.Errorf("workflows.%s is an exported constant missing from names.json: add it to constGroups and run go test -update", name)
		}
	}
}

// exportedConsts parses the non-test Go files of dir and returns the
// exported constant names they declare.
func exportedConsts(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, sp := range gd.Specs {
				for _, n := range sp.(*ast.ValueSpec).Names {
					if n.IsExported() {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("no exported constants found in %s", dir)
	}
	return names
}

func writeGolden(t *testing.T, file string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func samplePrepared() workflows.Prepared {
	return workflows.Prepared{
		Invalid: "unknown tool", Decision: sampleDecision(), CallID: "call_1_1", Layer: permission.LayerAllowRule, Kind: workflows.VerdictRedecide,
		Tool: tools.Info{
			Name: "Bash", Description: "Run a command.", InputSchema: json.RawMessage(`{"type":"object"}`),
			ReadOnly: true, ConcurrencySafe: true, External: true, StateInjected: true,
		},
		Flags:    &workflows.ToolFlags{ConcurrencySafe: true, External: true, StateInjected: true},
		ReadOnly: true,
		Policy: workflows.CallPolicy{
			MaxAttempts: 3, InitialInterval: time.Second, BackoffCoefficient: 2, MaxInterval: 30 * time.Second,
			NonRetryable: []string{"Permanent"}, Timeout: 11 * time.Minute, Local: true, LocalTimeout: 5 * time.Second,
			ApprovalTimeout: 24 * time.Hour, Escalation: workflows.EscalateNotify, Notify: true,
			Quorum: 2, RequireReason: true,
			RemindBefore: time.Hour, Chat: true,
		},
		Preview: "--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+b\n",
		Touches: sampleTouches(), Clears: permission.LegUntrusted,
		Windows: []permission.WindowLimit{{Rule: "Bash(git push:*)", Max: 5, Per: time.Hour, Scope: permission.ScopeAgent, Enforce: ptr(true)}},
		WouldBe: []permission.Would{{Layer: permission.LayerSession, Rule: "trifecta", Behavior: permission.Deny, Reason: "private data after untrusted input"}},
		Sandbox: sampleSandbox(), PolicyVersion: 2, Team: sampleTeam(), TeamVersion: 3, Workdir: "/work", Links: permission.Links{"/work/notes/key": "/home/u/.ssh/authorized_keys"},
		Remembered: &workflows.Remembered{ID: "r1", Scope: workflows.ScopeAgent, Tool: "Bash", Rule: "Bash(npm run:*)",
			Input: json.RawMessage(`{"command":"npm run build"}`), WorkflowID: "turn-1", Agent: "builder", By: "alice", Via: "inbox",
			FromWorkflow: "turn-0", CallID: "call_1_1", CreatedAt: t0, ExpiresAt: t1, SingleUse: true, UsedBy: "turn-1/call_1_1",
			RevokedBy: "ops", RevokedAt: t1},
	}
}

func sampleApproval() workflows.Approval {
	return workflows.Approval{
		CallID: "call_1_1", Decision: workflows.DecisionAlwaysAllow, Hash: "3f2a9c",
		Rules: []string{"Bash(npm run:*)"}, Reason: "looks fine",
		Input: json.RawMessage(`{"command":"npm run test"}`), By: "alice", Via: "inbox",
		Scope: workflows.ScopeAgent, Agent: "builder", TTL: time.Hour, SingleUse: true,
		Raise: ptr(sampleBudget()),
	}
}

func sampleExternal() workflows.ExternalResult {
	return workflows.ExternalResult{
		CallID: "call_2_1", Hash: "5f2b9c1e8d7a6b4c3e2f1a0b9c8d7e6f", Content: "blue", IsError: true, Metadata: map[string]any{"answers": "blue"}, By: "bob", Via: "bob",
	}
}

func ptr[T any](v T) *T { return &v }

// sampleNotify is a notification with every field set.
func sampleNotify() workflows.NotifyInput {
	return workflows.NotifyInput{Type: "approval_answered", WorkflowID: "turn-1", Pending: samplePending(),
		Answer: &workflows.AnswerNote{By: "alice", Via: "slack", Decision: "always_allow", Reason: "OPS-12", Scope: "agent",
			TTL: time.Hour, Edited: true, Raise: ptr(sampleBudget()), At: time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC),
			Approvers: []string{"bob", "alice"}, Progress: "2 of 2", Partial: true},
		Namespace: "default", Agent: "ops", Roles: []string{"kube"},
		Session: &workflows.SessionNote{Seq: 7, State: "running", Turn: 2, Mode: "steer", Text: "also the changelog", Reason: "weekend",
			Answer: "Done.", By: "alice", Via: "web-inbox", At: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}}
}

func sampleMessage() workflows.SessionMessage {
	return workflows.SessionMessage{Text: "also update the changelog", Mode: workflows.MessageSteer, By: "alice", Via: "web-inbox",
		At: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}
}

func sampleControl() workflows.SessionControl {
	return workflows.SessionControl{Action: workflows.ControlPause, Reason: "weekend", By: "alice", Via: "alice",
		At: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}
}

func sampleTeam() *workflows.Approvers {
	return &workflows.Approvers{Users: map[string][]string{"alice": nil, "bob": {"k8s"}}, Roles: map[string][]string{"k8s": {"Bash(kubectl:*)"}}}
}
