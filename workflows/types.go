// Package workflows holds the agent-turn workflow and the wire types and
// names clients use to talk to it. It is deterministic workflow code only:
// no I/O, no wall clock, no goroutines, no map iteration for ordering.
package workflows

import (
	"encoding/json"
	"time"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// Names clients use. They are part of warden's API: keep them stable.
const (
	// TurnWorkflow is the agent-turn workflow type.
	TurnWorkflow = "AgentTurn"
	// UpdateApprove answers a pending permission ASK (Update with validator).
	UpdateApprove = "approve"
	// SignalApprove answers a pending permission ASK as a signal.
	SignalApprove = "approve"
	// UpdateExternalResult completes an external tool call (incl. AskUser).
	UpdateExternalResult = "external-result"
	// SignalExternalResult completes an external tool call as a signal.
	SignalExternalResult = "external-result"
	// QueryPending lists the turn's pending approvals and external calls.
	QueryPending = "pending"
	// QueryEvents returns events after a cursor.
	QueryEvents = "events"
	// QueryState returns a summary of the turn's state.
	QueryState = "state"
)

// Search attributes the workflow maintains while it waits.
const (
	// SAPendingCalls lists the call ids waiting for an answer (KeywordList).
	SAPendingCalls = "WardenPendingCalls"
	// SAPendingTools lists the tools of those calls (KeywordList).
	SAPendingTools = "WardenPendingTools"
	// SAWaitingSince is when the oldest pending call started waiting (Datetime).
	SAWaitingSince = "WardenWaitingSince"
)

// Metrics the workflow records through workflow.GetMetricsHandler
// (skipped during replay); the worker's Prometheus handler routes them.
const (
	// MetricApprovalWait is a timer: how long an answered call waited.
	MetricApprovalWait = "warden_approval_wait"
	// MetricApprovalEscalation counts deadline escalations (tag "action").
	MetricApprovalEscalation = "warden_approval_escalation"
	// MetricApprovalAnswers counts answered waits (approvals, external
	// results, budget approvals) by tags kind, how (the channel) and
	// decision.
	MetricApprovalAnswers = "warden_approval_answer"
)

// Activity names, registered by activities.Activities.
const (
	ActivityModel = "warden.Model"
	// ActivityModelStep is the model call of turns that keep their
	// conversation in the content store (by reference).
	ActivityModelStep = "warden.ModelStep"
	ActivityPrepare   = "warden.Prepare"
	ActivityTool      = "warden.Tool"
	ActivityNotify    = "warden.Notify"
	// ActivityChatPost posts a waiting call's chat message(s)
	// (ChatInput → []ChatRef); ActivityChatUpdate updates them once the
	// call is answered (ChatInput with Answer and Refs).
	ActivityChatPost   = "warden.ChatPost"
	ActivityChatUpdate = "warden.ChatUpdate"
)

// ChatInput is the input of the chat activities: the call, what chat
// routes match, and for an update the answer and the messages.
type ChatInput struct {
	WorkflowID string      `json:"workflow_id"`
	Pending    Pending     `json:"pending"`
	Namespace  string      `json:"namespace,omitempty"`
	Agent      string      `json:"agent,omitempty"`
	Roles      []string    `json:"roles,omitempty"`
	Answer     *AnswerNote `json:"answer,omitempty"`
	Refs       []ChatRef   `json:"refs,omitempty"`
}

// TurnInput starts an agent turn.
type TurnInput struct {
	// Prompt, when set, is appended to Messages as a user message.
	Prompt      string          `json:"prompt,omitempty"`
	Messages    []model.Message `json:"messages,omitempty"`
	Instruction string          `json:"instruction,omitempty"`
	Model       ModelConfig     `json:"model"`
	// Tools restricts the turn to these tool names; empty means all.
	Tools []string `json:"tools,omitempty"`
	// Permission is the turn's policy.
	Permission permission.Context `json:"permission"`
	// Approvers, when it lists users, restricts who may answer the turn's
	// calls and which calls each may answer (part of the recorded policy;
	// the workflow checks every answer against it).
	Approvers *Approvers `json:"approvers,omitempty"`
	// Backend names the backend tools run on ("" means the worker default).
	Backend string `json:"backend,omitempty"`
	// Workdir is the workspace directory inside the backend.
	Workdir string `json:"workdir,omitempty"`
	// ToolQueue, when set, routes permission checks and tool calls to the
	// workers of that task queue (e.g. workers on a Docker host), as
	// regular activities; the turn itself stays on its own queue.
	ToolQueue string `json:"tool_queue,omitempty"`
	// ReturnDirectly names tools whose result ends the turn as its answer.
	ReturnDirectly []string `json:"return_directly,omitempty"`
	// RunLocal carries run-local values into the turn (continue-as-new).
	RunLocal map[string]json.RawMessage `json:"run_local,omitempty"`
	// ContinueAsNewAfter continues the turn as new once its history has
	// this many events (0: only when the server suggests it).
	ContinueAsNewAfter int `json:"continue_as_new_after,omitempty"`
	// Budget bounds the turn's tokens, cost, tool calls and time (nil:
	// none); reaching a bound parks the turn on a budget approval.
	Budget *Budget `json:"budget,omitempty"`
	// AgentBudget, when set, is the budget store (BudgetStore, its id
	// AgentBudgetStore(agent)) the turn charges: before every model call
	// and every step's tool calls it reports its usage there and parks on
	// a budget approval when the agent's daily or total bound is reached.
	// The client sets it when the turn's agent has a store.
	AgentBudget string `json:"agent_budget,omitempty"`
	// Resume is set by the turn itself when it continues as new.
	Resume *Resume `json:"resume,omitempty"`
	// MaxIterations bounds model calls (default DefaultMaxIterations).
	MaxIterations int `json:"max_iterations,omitempty"`
	// ApprovalTimeout bounds how long an ASK waits before it is denied
	// (default 7 days).
	ApprovalTimeout time.Duration `json:"approval_timeout,omitempty"`
	// State carries tool state into the turn (e.g. across continue-as-new).
	State calls.State `json:"state,omitempty"`
	// LivePolicy, when set, is the workflow id of the policy store
	// (PolicyStore) the turn follows: every call is decided under the
	// store's live rules and remembered approvals at the time of its
	// step, and a change of the store re-decides the turn's waiting
	// calls. Empty: the turn keeps the policy it started with.
	LivePolicy string `json:"live_policy,omitempty"`
	// Agent labels the turn for remembered approvals of ScopeAgent
	// (which also match a prefix of the workflow id).
	Agent string `json:"agent,omitempty"`
	// Requester names who started the turn (the client's key name,
	// Client.Via): its allows never count toward a call's quorum.
	Requester string `json:"requester,omitempty"`
	// Session keeps the workflow open when a turn answers: it waits for
	// the next message (UpdateMessage), which opens the next turn
	// (session.go). A turn without it ends with its answer.
	Session bool `json:"session,omitempty"`
	// Senders, when set, are the users who may message, pause, resume or
	// cancel the turn (with its requester); else its requester and
	// approvers may (anyone, when no approvers are configured).
	Senders []string `json:"senders,omitempty"`
}

// ModelConfig selects the model provider.
type ModelConfig struct {
	// Provider names a provider registered on the worker ("scripted").
	Provider string        `json:"provider"`
	Name     string        `json:"name,omitempty"`
	Script   *model.Script `json:"script,omitempty"`
	// Local runs the model steps as local activities in the workflow
	// worker (every 16th stays a regular activity, which ends the
	// workflow task): two history transactions and a workflow task fewer
	// per step. For instant, in-process providers such as scripted;
	// a real provider should stay a regular activity, which heartbeats
	// and is retried elsewhere when its worker is lost mid-call.
	Local bool `json:"local,omitempty"`
}

// TurnResult is what a finished turn returns.
type TurnResult struct {
	Answer     string          `json:"answer"`
	Messages   []model.Message `json:"messages"`
	Iterations int             `json:"iterations"`
	ToolCalls  int             `json:"tool_calls"`
	// Usage is the turn's model usage, across its runs.
	Usage model.Usage `json:"usage,omitzero"`
	// ToolErrors counts the tool results that were errors (denials and
	// failures included).
	ToolErrors int                `json:"tool_errors,omitempty"`
	State      calls.State        `json:"state"`
	Permission permission.Context `json:"permission"`
	// Stopped explains an early end ("max_iterations", "budget"), empty
	// otherwise; StopReason says why a budget ended it.
	Stopped    string `json:"stopped,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	// Conversation is the head of the stored conversation (turns that
	// keep content by reference); Messages then holds only messages not
	// yet stored. `starter show` prints the whole conversation.
	Conversation string `json:"conversation,omitempty"`
	// AnswerRef names the full answer in the content store when Answer is
	// only its preview.
	AnswerRef string `json:"answer_ref,omitempty"`
}

// ModelInput is the model activity's input.
type ModelInput struct {
	Provider string        `json:"provider"`
	Request  model.Request `json:"request"`
	// Model names the provider's model (for metrics and providers that
	// serve several).
	Model string `json:"model,omitempty"`
	// Tools restricts the specs sent to the model (empty: all).
	Tools []string `json:"tools,omitempty"`
}

// ModelStepInput is the input of the by-reference model call: the stored
// conversation's head and the messages added since, never the whole
// conversation, so its size does not grow with the turn.
type ModelStepInput struct {
	Provider    string   `json:"provider"`
	Model       string   `json:"model,omitempty"`
	Tools       []string `json:"tools,omitempty"`
	Instruction string   `json:"instruction,omitempty"`
	// Conversation is the head the call builds on ("" for none yet).
	Conversation string `json:"conversation,omitempty"`
	// Append are the messages since that head (the prompt, tool
	// results): small content inline, larger content by reference.
	Append []model.Message `json:"append,omitempty"`
	// Script carries only the scripted model's current step.
	Script *model.Script `json:"script,omitempty"`
}

// ModelStepOutput is the by-reference model call's result.
type ModelStepOutput struct {
	// Conversation is the new head, ending with the assistant message.
	Conversation string `json:"conversation"`
	// Message is the assistant message: tool calls in full, content as a
	// preview with a reference when it is large.
	Message model.Message `json:"message"`
	Usage   model.Usage   `json:"usage,omitempty"`
	// Compaction is set when the conversation was compacted first.
	Compaction *model.Compaction `json:"compaction,omitempty"`
}

// CallEnv says where a call runs.
type CallEnv struct {
	Backend string `json:"backend,omitempty"`
	Workdir string `json:"workdir,omitempty"`
}

// PrepareInput asks the worker to validate and permission-check a call.
type PrepareInput struct {
	Call       model.ToolCall     `json:"call"`
	Env        CallEnv            `json:"env"`
	Permission permission.Context `json:"permission"`
	// Allowed lists tool names enabled in this turn (empty: all).
	Allowed []string `json:"allowed,omitempty"`
	// State is what the input checks need of the turn's state: the read
	// stamp of the file the call names, as the calls before it in the
	// same step will leave it (an Edit of a file never read is refused
	// before anyone is asked). Nil (older runs) skips that check.
	State *calls.State `json:"state,omitempty"`
	// ToolFlags asks for the verdict with only what the workflow reads
	// of the tool (Prepared.Flags) instead of its whole Info
	// (Prepared.Tool: description and JSON schema), which the verdict's
	// marker would record and continue-as-new would carry.
	ToolFlags bool `json:"tool_flags,omitempty"`
	// LivePolicy is TurnInput.LivePolicy; WorkflowID and Agent say which
	// remembered approvals of the store apply to the turn.
	LivePolicy string `json:"live_policy,omitempty"`
	WorkflowID string `json:"workflow_id,omitempty"`
	Agent      string `json:"agent,omitempty"`
	// Kind says why the workflow asks (a first check, a re-decision, an
	// edit); Prepare echoes it in Prepared.Kind for the audit. Empty in
	// runs recorded before versionAuditNotes.
	Kind VerdictKind `json:"kind,omitempty"`
	// Session is what the turn's (and its session's) earlier calls
	// touched, for the session rules (Resume.Touched); nil: nothing.
	Session *permission.Touched `json:"session,omitempty"`
}

// Escalation says what happens when an approval's deadline passes.
type Escalation string

// The escalation actions.
const (
	// EscalateDeny denies the call (the default).
	EscalateDeny Escalation = "deny"
	// EscalateAllow allows the call.
	EscalateAllow Escalation = "allow"
	// EscalateNotify records an escalation event, notifies, and keeps
	// waiting without a further deadline.
	EscalateNotify Escalation = "notify"
)

// CallPolicy is how a call runs, decided by the worker's configuration in
// Prepare and recorded with the verdict, so the workflow stays
// deterministic when the configuration changes.
type CallPolicy struct {
	// MaxAttempts of the tool activity (1: at most once).
	MaxAttempts        int32         `json:"max_attempts"`
	InitialInterval    time.Duration `json:"initial_interval,omitempty"`
	BackoffCoefficient float64       `json:"backoff_coefficient,omitempty"`
	MaxInterval        time.Duration `json:"max_interval,omitempty"`
	NonRetryable       []string      `json:"non_retryable,omitempty"`
	// Timeout is the activity's start-to-close timeout.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Local runs the call as a local activity (the fast path) bounded by
	// LocalTimeout, after which it is scheduled as a regular activity.
	Local        bool          `json:"local,omitempty"`
	LocalTimeout time.Duration `json:"local_timeout,omitempty"`
	// ApprovalTimeout bounds an ASK's wait (negative: no bound; 0: the
	// default of 7 days). A turn's own ApprovalTimeout, when set, takes
	// precedence. Escalation says what happens at the deadline.
	ApprovalTimeout time.Duration `json:"approval_timeout,omitempty"`
	Escalation      Escalation    `json:"escalation,omitempty"`
	// Notify sends webhook notifications when the call waits or escalates
	// (the worker has webhooks configured).
	Notify bool `json:"notify,omitempty"`
	// Quorum is how many distinct approvers must allow the call if it
	// asks (0 or 1: one), from the policy's quorum rules; RequireReason
	// says an answer must give a reason (permission.require_reason, or
	// the quorum rule's).
	Quorum        int  `json:"quorum,omitempty"`
	RequireReason bool `json:"require_reason,omitempty"`
	// RemindBefore sends an approval_reminder notification this long
	// before the deadline of a call still waiting (0: none).
	RemindBefore time.Duration `json:"remind_before,omitempty"`
	// Chat posts the call's approval to chat (the worker has Slack
	// configured) and updates the message once it is answered.
	Chat bool `json:"chat,omitempty"`
}

// ToolProgress is the heartbeat detail of a running tool activity: the
// tail of its output so far. Clients read it from the pending activity.
type ToolProgress struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Output is the last bytes of output (stdout and stderr interleaved).
	Output string `json:"output"`
	// Bytes counts all output so far.
	Bytes int64 `json:"bytes"`
}

// Notification types (NotifyInput.Type; notify.Type* name the same).
const (
	// NotifyApprovalRequested: a call waits for an approval.
	NotifyApprovalRequested = "approval_requested"
	// NotifyApprovalEscalated: an approval's deadline passed.
	NotifyApprovalEscalated = "approval_escalated"
	// NotifyExternalRequested: a call waits for an external result.
	NotifyExternalRequested = "external_requested"
	// NotifyBudgetWarning: a turn spent its budget's warning fraction.
	NotifyBudgetWarning = "budget_warning"
	// NotifyApprovalAnswered: a waiting call got its answer (from a
	// person, an escalation, or a policy re-decision); NotifyInput.Answer
	// says who, how and what.
	NotifyApprovalAnswered = "approval_answered"
	// NotifyApprovalReminder: a call still waits and its deadline is
	// near (CallPolicy.RemindBefore).
	NotifyApprovalReminder = "approval_reminder"
	// NotifyApprovalProgress: an allow short of a call's quorum; the
	// call still waits (AnswerNote.Approvers and Progress say who allowed
	// and how many more are needed).
	NotifyApprovalProgress = "approval_progress"
	// NotifyApprovalUpdated: a waiting call got a new hash (a policy
	// change re-decided it and it still waits); answers must send the
	// new one.
	NotifyApprovalUpdated = "approval_updated"
)

// AnswerNote is what an approval_answered notification says of the
// answer: who gave it, through which key or channel, the decision, and
// for an always_allow what it remembers.
type AnswerNote struct {
	// By is the approver ("deadline" for an escalation, "policy" for a
	// live-policy re-decision, "rule" for an added rule).
	By string `json:"by,omitempty"`
	// Via is the authenticated key or channel the answer came through
	// ("slack" for answers from Slack).
	Via string `json:"via,omitempty"`
	// Decision is allow, deny, always_allow, or result for an external
	// result.
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// Scope and TTL are those of a remembered always_allow.
	Scope string        `json:"scope,omitempty"`
	TTL   time.Duration `json:"ttl,omitempty"`
	// Edited is set when the approver changed the call's input.
	Edited bool `json:"edited,omitempty"`
	// Raise is what an allow of a budget approval added to the budget.
	Raise *Budget   `json:"raise,omitempty"`
	At    time.Time `json:"at"`
	// Approvers are, for a call that needs several approvers (a quorum),
	// everyone who allowed it so far, in order; Progress says how far
	// ("1 of 2"). Partial marks an allow short of the quorum (the
	// approval_progress notification, the chat message's progress): the
	// call still waits.
	Approvers []string `json:"approvers,omitempty"`
	Progress  string   `json:"progress,omitempty"`
	Partial   bool     `json:"partial,omitempty"`
}

// NotifyInput is the notification activity's input.
type NotifyInput struct {
	// Type is NotifyApprovalRequested, NotifyApprovalEscalated or
	// NotifyExternalRequested.
	Type       string  `json:"type"`
	WorkflowID string  `json:"workflow_id"`
	Pending    Pending `json:"pending"`
	// Answer is the answer of an approval_answered notification.
	Answer *AnswerNote `json:"answer,omitempty"`
	// Namespace, Agent (TurnInput.Agent) and Roles (the approver roles
	// whose patterns cover the call) are what notification routes match.
	Namespace string   `json:"namespace,omitempty"`
	Agent     string   `json:"agent,omitempty"`
	Roles     []string `json:"roles,omitempty"`
	// Session is a session notification's news (NotifySession*).
	Session *SessionNote `json:"session,omitempty"`
}

// Session notification types (webhooks; sessions only).
const (
	NotifySessionMessage   = "session_message"
	NotifySessionPaused    = "session_paused"
	NotifySessionResumed   = "session_resumed"
	NotifySessionCancelled = "session_cancelled"
	NotifySessionAnswered  = "session_answered"
)

// SessionNote is what a session notification reports.
type SessionNote struct {
	Seq    int       `json:"seq"`
	State  string    `json:"state"`
	Turn   int       `json:"turn"`
	Mode   string    `json:"mode,omitempty"`
	Text   string    `json:"text,omitempty"`
	Reason string    `json:"reason,omitempty"`
	Answer string    `json:"answer,omitempty"`
	By     string    `json:"by,omitempty"`
	Via    string    `json:"via,omitempty"`
	At     time.Time `json:"at"`
}

// Prepared is the recorded verdict on one call.
type Prepared struct {
	// Invalid, when set, is a tool error for the model (unknown tool,
	// input that fails the schema); no decision was made.
	Invalid  string              `json:"invalid,omitempty"`
	Decision permission.Decision `json:"decision"`
	// CallID is the call decided (PrepareInput.Call.ID), and Layer the
	// layer that decided it: the engine's (permission.Verdict.Layer), or
	// the worker's when a remembered approval allowed the call or a
	// quorum rule made it ask. Empty in verdicts recorded before they
	// were recorded (the audit then matches verdicts to calls by order
	// and reads the layer from Decision.Reason) and Layer in invalid
	// ones. The workflow reads neither: they are for the audit.
	CallID string           `json:"call_id,omitempty"`
	Layer  permission.Layer `json:"layer,omitempty"`
	// Kind is PrepareInput.Kind, echoed: what the verdict is (a first
	// check, a re-decision, an edit). The workflow does not read it;
	// empty in verdicts of runs recorded before versionAuditNotes, whose
	// kind the audit works out itself.
	Kind VerdictKind `json:"kind,omitempty"`
	// Tool is the tool's whole Info, in verdicts asked for without
	// PrepareInput.ToolFlags (runs recorded before versionPrepareFlags);
	// otherwise it is left out and Flags holds what the workflow reads.
	Tool calls.Info `json:"tool,omitzero"`
	// Flags are the tool's flags the workflow reads, in verdicts asked
	// for with PrepareInput.ToolFlags. Read them with ToolFlags.
	Flags    *ToolFlags `json:"flags,omitempty"`
	ReadOnly bool       `json:"read_only"`
	Policy   CallPolicy `json:"policy"`
	// Preview is what the call would change (tools.Preview), computed
	// only for calls that ask.
	Preview string `json:"preview,omitempty"`
	// Sandbox is the profile the call's processes run with
	// (decide.Profile); nil in runs decided before it was recorded, which
	// then run with the backend's default (the workdir writable, no
	// network).
	Sandbox *calls.Sandbox `json:"sandbox,omitempty"`
	// PolicyVersion is the version of the live policy store the call was
	// decided under (0: the turn follows none).
	PolicyVersion int `json:"policy_version,omitempty"`
	// Remembered is the remembered approval that allowed the call, if
	// one did (Decision.Reason names it and its approver too).
	Remembered *Remembered `json:"remembered,omitempty"`
	// Team and TeamVersion are the policy store's team when the call was
	// decided (TeamVersion 0: it has none): a turn adopts a newer team
	// than it knows, so a turn the store's fan-out did not reach (it was
	// not waiting) checks its answers against the team in force.
	Team        *Approvers `json:"team,omitempty"`
	TeamVersion int        `json:"team_version,omitempty"`
	// Workdir is the workspace the call was decided in (the turn's, else
	// the backend's): the role check of its approvers resolves its paths
	// there, as the decision did.
	Workdir string `json:"workdir,omitempty"`
	// Touches are the legs the call adds to its session once it ran,
	// Clears the leg an approval of a session rule's ASK clears, WouldBe
	// what log-only rules would have decided (permission.Verdict).
	Touches []permission.Touch `json:"touches,omitempty"`
	Clears  permission.Leg     `json:"clears,omitempty"`
	WouldBe []permission.Would `json:"would_be,omitempty"`
	// Windows are the window limits the call counts against when it
	// runs (window.go).
	Windows []permission.WindowLimit `json:"windows,omitempty"`
	// Links are where the call's paths inside its working directories
	// lead through symbolic links, as the worker resolved them before
	// deciding (decide.Call.Links): the role check of its approvers and
	// what-if decide those paths through them, as the decision did.
	Links permission.Links `json:"links,omitempty"`
}

// ToolFlags is what the workflow reads of a tool's Info.
type ToolFlags struct {
	// ConcurrencySafe calls may run in parallel with each other.
	ConcurrencySafe bool `json:"concurrency_safe,omitempty"`
	// External calls wait for a result from outside the worker.
	External bool `json:"external,omitempty"`
	// StateInjected calls read and write the turn's state.
	StateInjected bool `json:"state_injected,omitempty"`
}

// FlagsOf is the part of a tool's Info the workflow reads.
func FlagsOf(info calls.Info) ToolFlags {
	return ToolFlags{ConcurrencySafe: info.ConcurrencySafe, External: info.External, StateInjected: info.StateInjected}
}

// ToolFlags returns the flags of the call's tool: Flags, or in verdicts
// recorded with the whole Info, its flags.
func (p Prepared) ToolFlags() ToolFlags {
	if p.Flags != nil {
		return *p.Flags
	}
	return FlagsOf(p.Tool)
}

// ToolInput runs one allowed call.
type ToolInput struct {
	// Key is the call's idempotency key: workflow id + "/" + call id.
	Key   string         `json:"key"`
	Call  model.ToolCall `json:"call"`
	Env   CallEnv        `json:"env"`
	State calls.State    `json:"state"`
	// ByRef stores the result's content in the content store and returns
	// a preview with a reference.
	ByRef bool `json:"by_ref,omitempty"`
	// Sandbox is the call's recorded profile (Prepared.Sandbox).
	Sandbox *calls.Sandbox `json:"sandbox,omitempty"`
}

// ToolOutput is a finished call and the tool state after it.
type ToolOutput struct {
	Result calls.Result `json:"result"`
	State  calls.State  `json:"state"`
}

// Decision answers a pending permission ASK.
type Decision string

// The decisions an approver can make.
const (
	DecisionAllow       Decision = "allow"
	DecisionAlwaysAllow Decision = "always_allow"
	DecisionDeny        Decision = "deny"
)

// Approval is the payload of UpdateApprove / SignalApprove.
type Approval struct {
	CallID   string   `json:"call_id"`
	Decision Decision `json:"decision"`
	// Hash must equal the pending entry's hash (Pending.Hash, as listed),
	// binding the answer to the exact call (tool, input, call id) and the
	// policy version the approver saw. An answer without it, or with a
	// stale one (the policy changed since), is rejected: list again.
	Hash string `json:"hash,omitempty"`
	// Rules to add for always_allow ("Bash(npm run:*)"); empty means the
	// entry's suggestions.
	Rules []string `json:"rules,omitempty"`
	// Reason for a denial, shown to the model; for an allow, why (a
	// ticket), recorded in the audit and the answered event.
	Reason string `json:"reason,omitempty"`
	// Input, when set with allow, replaces the call's input. The edited
	// input is a new call: it is validated and decided again (its own
	// read-only flag, policy and retries); a deny refuses the edit.
	Input json.RawMessage `json:"input,omitempty"`
	// By names the approver; with approvers configured on the turn it
	// must be one whose roles cover the call (and the edit, and any rule).
	By string `json:"by,omitempty"`
	// Via names the authenticated key the answer was sent with: on a
	// warden server with keys the frontend refuses an answer whose via
	// is not the key's name, or whose by differs from it (unless the key
	// is a delegate's, such as the inbox's, which answers for the users
	// it signed in). The client library fills it in.
	Via string `json:"via,omitempty"`
	// Scope, with always_allow, remembers the approval in the turn's
	// policy store (TurnInput.LivePolicy) instead of adding rules to the
	// turn: ScopeInput remembers the exact input; ScopeTurn, ScopeAgent
	// and ScopeNamespace remember Rules (default: the call's suggested
	// rules), each of which must cover the call and be no wider than the
	// call's suggestions, nor than the approver's roles.
	Scope RememberScope `json:"scope,omitempty"`
	// Agent is ScopeAgent's turn label or workflow-id prefix (default:
	// the turn's TurnInput.Agent); it must be the turn's label or a
	// prefix of its workflow id.
	Agent string `json:"agent,omitempty"`
	// Raise, with allow, answers a budget approval (PendingBudget): what
	// it adds to the turn's budget. A budget approval needs it.
	Raise *Budget `json:"raise,omitempty"`
	// TTL ends a remembered approval after this long (0: none);
	// SingleUse after the first call it allows.
	TTL       time.Duration `json:"ttl,omitempty"`
	SingleUse bool          `json:"single_use,omitempty"`
}

// ExternalResult completes an external call (AskUser answers included).
type ExternalResult struct {
	CallID string `json:"call_id"`
	// Hash must equal the pending entry's hash, as for an Approval.
	Hash     string         `json:"hash,omitempty"`
	Content  string         `json:"content"`
	IsError  bool           `json:"is_error,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	By       string         `json:"by,omitempty"`
	// Via names the authenticated key, as for an Approval.
	Via string `json:"via,omitempty"`
}

// Ack acknowledges an accepted update.
type Ack struct {
	CallID string `json:"call_id"`
	Status string `json:"status"`
	// NotRemembered, on an always_allow with a scope, says why what was
	// to be remembered could not be stored in the policy store: the call
	// was allowed, but nothing beyond it is remembered.
	NotRemembered string `json:"not_remembered,omitempty"`
}

// PendingKind tells what a pending entry waits for.
type PendingKind string

// The pending kinds.
const (
	PendingApproval PendingKind = "approval"
	PendingExternal PendingKind = "external"
	// PendingBudget: the turn reached a bound of its budget and waits for
	// an answer that raises it (Approval.Raise) or ends the turn.
	PendingBudget PendingKind = "budget"
)

// Pending is one call the turn waits on.
type Pending struct {
	Kind         PendingKind     `json:"kind"`
	CallID       string          `json:"call_id"`
	Tool         string          `json:"tool"`
	Input        json.RawMessage `json:"input"`
	Message      string          `json:"message,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	Suggestions  []string        `json:"suggestions,omitempty"`
	BypassImmune bool            `json:"bypass_immune,omitempty"`
	RequestedAt  time.Time       `json:"requested_at"`
	// Deadline is zero when the wait has no bound.
	Deadline   time.Time  `json:"deadline"`
	Escalation Escalation `json:"escalation,omitempty"`
	// Escalated is set once the deadline passed with escalation notify.
	Escalated bool `json:"escalated,omitempty"`
	// Hash binds an answer to this exact call and the policy version
	// (CallHash); answers must send it back. It changes when the policy
	// changes (a rule added by always_allow).
	Hash string `json:"hash"`
	// Notify is copied from the call's policy.
	Notify bool `json:"notify,omitempty"`
	// Context is what the agent said in the step that made the call, and
	// Prompt the turn's prompt (each at most ContextBytes): what the
	// approver needs to judge why the call is made.
	Context string `json:"context,omitempty"`
	Prompt  string `json:"prompt,omitempty"`
	// Diff is what a Write or Edit would change, as a unified diff
	// against the file when the call was decided (Prepared.Preview).
	Diff string `json:"diff,omitempty"`
	// Sandbox says how the call will run if allowed ("write /src/app,
	// network off"), from its recorded profile.
	Sandbox string `json:"sandbox,omitempty"`
	// LiveVersion is the policy store's version the call was last
	// decided under (turns that follow a store).
	LiveVersion int `json:"live_version,omitempty"`
	// Workdir is the workspace the call was decided in (Prepared.Workdir):
	// the role check of an answer, in the turn, the inbox and the CLI,
	// resolves the call's paths there.
	Workdir string `json:"workdir,omitempty"`
	// Links are the symbolic links the call's paths lead through and
	// where they lead (Prepared.Links): the role check decides those
	// paths through them, and the approver sees them.
	Links permission.Links `json:"links,omitempty"`
	// Quorum is how many distinct approvers must allow the call (0 or 1:
	// one), from the policy's quorum rules (CallPolicy.Quorum).
	// Approvals are the allows recorded so far, while fewer than Quorum
	// distinct approvers gave one; the entry stays open until the
	// Quorum-th does. A deny answers at once.
	Quorum    int        `json:"quorum,omitempty"`
	Approvals []Approval `json:"approvals,omitempty"`
	// ReasonRequired says an answer must carry a reason (policy).
	ReasonRequired bool `json:"reason_required,omitempty"`
	// RemindBefore is copied from the call's policy; Reminded is set
	// once its reminder was sent.
	RemindBefore time.Duration `json:"remind_before,omitempty"`
	Reminded     bool          `json:"reminded,omitempty"`
	// Chat lists the chat messages posted about this call (channel and
	// timestamp), updated when it is answered. ChatOn is copied from the
	// call's policy (CallPolicy.Chat); a budget approval has no call and
	// sets it always (since versionChatBudget): the chat activity posts
	// it when the worker has chat configured, as the notify activity
	// sends its webhooks.
	Chat   []ChatRef `json:"chat,omitempty"`
	ChatOn bool      `json:"chat_on,omitempty"`
}

// ChatRef is one chat message about a call: Slack's channel id and
// message ts.
type ChatRef struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// ContextBytes bounds Pending.Context and Pending.Prompt.
const ContextBytes = 1000

// Event is one entry of the turn's progress stream.
type Event struct {
	Seq    int       `json:"seq"`
	Time   time.Time `json:"time"`
	Type   string    `json:"type"`
	CallID string    `json:"call_id,omitempty"`
	Tool   string    `json:"tool,omitempty"`
	Text   string    `json:"text,omitempty"`
	Input  string    `json:"input,omitempty"`
	Error  bool      `json:"error,omitempty"`
}

// Event types.
const (
	EventModel = "model"
	// EventUsage: a model call's usage (tokens by kind, cost when
	// priced) and the turn's so far.
	EventUsage = "usage"
	// EventBudget: a budget warning, or a budget raised by an answer.
	EventBudget    = "budget"
	EventToolCall  = "tool_call"
	EventDecision  = "decision"
	EventWaiting   = "waiting"
	EventAnswered  = "answered"
	EventEscalated = "escalated"
	EventRejected  = "rejected"
	EventResult    = "tool_result"
	EventFinal     = "final"
	EventCustom    = "custom"
	// EventCompacted reports a context compaction before a model call.
	EventCompacted = "compacted"
	// EventFailed reports why a turn could not go on.
	EventFailed = "failed"
)

// EventsPage is QueryEvents' answer.
type EventsPage struct {
	Events []Event `json:"events"`
	// Next is the cursor to pass to get later events.
	Next int  `json:"next"`
	Done bool `json:"done"`
}

// Summary is QueryState's answer.
type Summary struct {
	Iterations int                `json:"iterations"`
	ToolCalls  int                `json:"tool_calls"`
	Pending    []Pending          `json:"pending"`
	Permission permission.Context `json:"permission"`
	Tasks      []calls.Task       `json:"tasks,omitempty"`
	Done       bool               `json:"done"`
	// Usage is the turn's model usage so far.
	Usage model.Usage `json:"usage,omitzero"`
	// LivePolicy is the policy store the turn follows (TurnInput.LivePolicy).
	LivePolicy string `json:"live_policy,omitempty"`
	// Session is the turn's session state (turns, pause, queued messages).
	Session *SessionSummary `json:"session,omitempty"`
}
