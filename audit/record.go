// The record schema: what the audit writes out. A Record is one decision
// about one call (its kinds, paths and decisions are the constants
// below); a Decided is one engine verdict with what re-deciding it needs,
// which what-if reads.

package audit

import (
	"encoding/json"
	"time"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// Record kinds.
const (
	// KindPermission is the permission engine's verdict on a call.
	KindPermission = "permission"
	// KindRecheck is a verdict re-evaluated after a rule was added.
	KindRecheck = "recheck"
	// KindEdit is the verdict on an input an approver edited.
	KindEdit = "edit"
	// KindApproval is a human's answer to an ASK.
	KindApproval = "approval"
	// KindLivePolicy is a waiting call decided again after its policy
	// store changed: Decision is the new verdict (allow and deny answer
	// the call, ask keeps it waiting), By "policy vN", PolicyVersion N
	// and FromVersion the version it waited under.
	KindLivePolicy = "live_policy"
	// KindExternal is an external result (AskUser answers included).
	KindExternal = "external"
	// KindEscalation is an approval whose deadline passed: Decision is
	// the escalation action (deny, allow, or notify and keep waiting).
	KindEscalation = "escalation"
	// KindExecution is a call that ran, with its effective input.
	KindExecution = "execution"
	// KindConnection is a connection a call's processes asked the
	// egress proxy for: Decision is allowed or refused, Reason the
	// connection (host, port, address dialled, bytes, what decided),
	// Connection its fields.
	KindConnection = "connection"
	// KindLimit is a limit that ended a call (Reason says which).
	KindLimit = "limit"
	// KindWindow is a window limit found at its bound for a call
	// (permission.WindowLimit): Decision is ask (the call waits for an
	// approval) or, for a log-only limit, allow, with WouldBe saying it
	// would have asked.
	KindWindow = "window"
	// KindModel is a model call: Usage its tokens and cost (when the
	// worker prices the model), TurnUsage the turn's so far, across its
	// runs; Tool names the model, CallID numbers the calls (model_N).
	KindModel = "model"
	// KindBudget is the answer to a budget approval (CallID budget_N,
	// Tool Budget): Decision is raise (Raise: by how much) or deny
	// (Reason: why); By who answered ("deadline" for an escalation),
	// Identity the key or channel it came through.
	KindBudget = "budget"
	// KindNotification is a webhook notification about a call:
	// Decision is delivered or undelivered (it failed for good, or its
	// turn ended while it was in flight), Notification its type.
	KindNotification = "notification"
	// KindMessage is a message a person sent to a running turn or
	// session: Decision is its mode (queue, steer, interrupt), By who
	// sent it, Identity the key, Reason its text.
	KindMessage = "message"
	// KindControl is a pause, resume or cancel (Decision), with who
	// sent it and its reason.
	KindControl = "control"
)

// Decisions of notification records.
const (
	NotificationDelivered   = "delivered"
	NotificationUndelivered = "undelivered"
)

// Decisions of connection records.
const (
	ConnectionAllowed = "allowed"
	ConnectionRefused = "refused"
)

// Paths a decision came by (Record.Path).
const (
	// PathRule: the permission engine (rules, modes, read-only checks).
	PathRule = "rule"
	// PathUpdate and PathSignal: an answer sent as an Update or a signal.
	PathUpdate = "update"
	PathSignal = "signal"
	// PathEscalation: the approval deadline passed.
	PathEscalation = "escalation"
)

// Record is one decision about one call.
type Record struct {
	Time       time.Time `json:"time"`
	WorkflowID string    `json:"workflow_id"`
	// RunID is the run of the continue-as-new chain the record comes from.
	RunID  string `json:"run_id,omitempty"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	Kind   string `json:"kind"`
	// Decision is allow, ask, deny or invalid (permission, recheck,
	// edit), allow, always_allow or deny (approval), completed or error
	// (external), deny, allow or notify (escalation), ran (execution),
	// then failed, timed_out, cut_off (it stopped heartbeating: its
	// worker was killed or lost) or interrupted for a regular tool
	// activity that did not complete (its last attempt's end), and
	// cut_off or retried for an attempt that another attempt ran again
	// (a worker killed mid-run whose call was retried).
	Decision string `json:"decision"`
	// By is "policy" for engine verdicts, the approver for answers,
	// "deadline" for escalations and "worker" for executions.
	By string `json:"by"`
	// Identity is the authenticated key the answer came with (its via):
	// on a warden server with keys the frontend checked it, and that by
	// is the key's own name unless the key is a delegate's (the inbox,
	// which signs its users in). Empty for answers sent to a server
	// without keys, whose by nobody checked.
	Identity string `json:"identity,omitempty"`
	// Path says how the decision was made: rule, update, signal or
	// escalation.
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Layer is the part of the policy or the turn that decided. For the
	// engine's verdicts (permission, recheck, edit, live_policy) it is
	// the layer recorded with the verdict (permission.Layer: "deny
	// rule", "allow rule", "mode", "safety check", "remembered",
	// "quorum"...), or, for verdicts recorded before it was, the head of
	// the reason (Layer: "rule", "mode"); "validation" for invalid
	// calls. Other records name theirs: approver, external, deadline,
	// local or activity (executions), egress, limits, model, webhook.
	Layer string   `json:"layer"`
	Rules []string `json:"rules,omitempty"`
	// ProposedInput is the call's input as the model proposed it.
	ProposedInput json.RawMessage `json:"proposed_input,omitempty"`
	// ApprovedInput is the input an approver allowed (an edit, or the
	// waiting input unchanged).
	ApprovedInput json.RawMessage `json:"approved_input,omitempty"`
	// EffectiveInput is the input the tool ran with (execution records).
	EffectiveInput json.RawMessage `json:"effective_input,omitempty"`
	// Notification is the type of a notification record
	// (approval_requested, approval_escalated, external_requested).
	Notification string `json:"notification,omitempty"`
	// Sandbox is how the call runs (permission records): its recorded
	// profile ("write /src/app, network off"), or that the local
	// sandbox was off. Empty for calls decided before profiles were
	// recorded.
	Sandbox string `json:"sandbox,omitempty"`
	// Remembered is the remembered approval of the policy store that
	// allowed the call (its id), RememberedBy who approved it.
	Remembered   string `json:"remembered,omitempty"`
	RememberedBy string `json:"remembered_by,omitempty"`
	// WouldBe are what the policy's log-only rules would have decided
	// about the call (a verdict's permission.Would, as text: "would deny
	// (log-only deny rule Bash(curl:*)): ..."); never applied.
	WouldBe []string `json:"would_be,omitempty"`
	// PolicyVersion is the policy store's version the verdict was
	// decided under (turns that follow a store).
	PolicyVersion int `json:"policy_version,omitempty"`
	// FromVersion is the store version a live-policy re-decision's call
	// waited under before it (PolicyVersion is the new one).
	FromVersion int `json:"from_version,omitempty"`
	// Scope and TTL are what an always_allow remembered beyond the turn
	// (approval records): the scope (input, turn, agent, namespace), how
	// long it holds (0: until revoked) and whether it is single-use.
	Scope     string        `json:"scope,omitempty"`
	TTL       time.Duration `json:"ttl,omitempty"`
	SingleUse bool          `json:"single_use,omitempty"`
	// Edited says an approval allowed an input the approver edited
	// (ApprovedInput).
	Edited bool `json:"edited,omitempty"`
	// Connection is the connection of a connection record.
	Connection *calls.Connection `json:"connection,omitempty"`
	// Deadline is the approval deadline an escalation record's call
	// reached, and EscalatedTo the approver roles its notification was
	// routed by (empty: routes that match no role); both only in
	// escalations of runs that record them.
	Deadline    time.Time `json:"deadline,omitzero"`
	EscalatedTo []string  `json:"escalated_to,omitempty"`
	// Raise is what a budget record's answer raised the bound by.
	Raise *workflows.Budget `json:"raise,omitempty"`
	// TeamVersion is the version of the policy store's team (live
	// approvers) an approval was checked against; 0: the approvers the
	// turn started with.
	TeamVersion int `json:"team_version,omitempty"`
	// Usage is a model record's usage; TurnUsage the turn's total after
	// it.
	Usage     *model.Usage `json:"usage,omitempty"`
	TurnUsage *model.Usage `json:"turn_usage,omitempty"`
	// Seq, Prev and Hash chain a turn's records (Link): Seq numbers
	// them from 1 in the order the turn recorded them, Hash is the
	// SHA-256 of the previous record's Hash and this record's JSON
	// without Prev and Hash, Prev the previous record's Hash.
	Seq  int    `json:"seq,omitempty"`
	Prev string `json:"prev,omitempty"`
	Hash string `json:"hash,omitempty"`
}

// Decided is one verdict of the permission engine recorded in a turn's
// history (a permission or edit record), with what re-deciding it needs
// and what came of it.
type Decided struct {
	// Verdict is the verdict's record.
	Verdict Record `json:"verdict"`
	// Input is the input decided: the model's, or an approver's edit.
	Input json.RawMessage `json:"input"`
	// Policy is the turn's policy as its run recorded it (the Prepare
	// activity's own, for turns whose checks run on a tool queue).
	Policy permission.Context `json:"policy"`
	// Session are the rules the turn's approvers had added (always
	// allow) when the call was decided.
	Session []permission.Rule `json:"session,omitempty"`
	// Workdir and Backend are where the call ran: the workdir the
	// verdict's sandbox profile names, else the turn's ("" means the
	// worker's default).
	Workdir string `json:"workdir,omitempty"`
	Backend string `json:"backend,omitempty"`
	// Tools are the tools the turn allows (empty: all).
	Tools []string `json:"tools,omitempty"`
	// Sandboxed says the call ran in the local kernel sandbox (its
	// recorded profile is neither off nor another backend's).
	Sandboxed bool `json:"sandboxed,omitempty"`
	// Answer is what came of an ASK: the approval (allow, always_allow,
	// deny; an edit is an allow with an approved input, and the verdict
	// on the edited input has that approval too), the escalation at the
	// deadline, or the re-check an added rule allowed. Nil for calls the
	// engine decided alone and for asks still waiting.
	Answer *Record `json:"answer,omitempty"`
	// Connections are the connections the call's processes asked the
	// egress proxy for when it ran on this verdict.
	Connections []calls.Connection `json:"connections,omitempty"`
	// Remembered is the remembered approval the verdict used, as the
	// worker read it from the policy store; Agent the turn's agent label.
	Remembered *calls.Remembered `json:"remembered,omitempty"`
	Agent      string            `json:"agent,omitempty"`
	// Links are where the call's paths led through symbolic links of
	// its workspace when the worker decided it (workflows.Prepared.Links):
	// what-if decides those paths through them, as the worker did.
	Links permission.Links `json:"links,omitempty"`
}
