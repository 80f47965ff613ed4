package workflows

import "time"

// This file is the one place of what a recorded turn's replay depends on
// beyond its code paths: the change IDs of every workflow.GetVersion call,
// and the constants and comparisons that decide whether, and in which
// order, the workflow emits commands. A worker replays the history of
// every turn in flight (a turn may wait for days) with the code it runs
// now; if that code emits a different command sequence from the one
// recorded, the turn fails with a nondeterminism error.
//
// How to change workflow behaviour safely:
//
//   - A change that alters which commands a turn emits, or their order
//     (an activity, local activity, timer, marker, side effect, search
//     attribute or memo upsert added, removed or moved; a bound below that
//     decides when one is emitted), goes behind a new change ID here:
//     `if workflow.GetVersion(ctx, versionX, workflow.DefaultVersion, 1) >= 1
//     { new } else { old }`. Runs recorded before it replay the old branch
//     (GetVersion returns DefaultVersion where their history has no
//     marker); new runs record the marker and take the new branch. A
//     change ID is never reused, renamed or removed while runs recorded
//     without it may still be in flight (or in a history a test replays).
//   - Do not change a constant below in place. Keep the old value for the
//     old branch and read the new one only where GetVersion said so, as
//     legacyMaxIterations does for content-refs.
//   - Record the new behaviour: bump recordGeneration in tests/turn_test.go
//     and run `go test ./tests/ -run TestReplayHistories -update`; the
//     recorder adds new files to tests/testdata and never overwrites the
//     old ones, which keep replaying the old branches. TestVersionsRecorded
//     (workflows/versions_test.go) fails while a change ID of the code
//     appears in no recorded history.
//
// What is not compared on replay can change freely: activity inputs and
// options (timeouts, retry policies), timer durations, the contents of
// search attribute and memo upserts, event texts, and what activities
// and side effects return (it is read back from history: fields added to
// workflows.Prepared or Redecision need no change ID while the workflow
// does not branch on them).

// Change IDs, in the order they were introduced.
const (
	// versionContentRefs marks runs that keep their conversation in the
	// content store and call ActivityModelStep; runs recorded before it
	// replay with the conversation inline (and legacyMaxIterations).
	versionContentRefs = "content-refs"
	// versionPendingIndex marks runs that keep their pending entries in
	// the memo (MemoPending) for listings; runs recorded before it
	// replay without the memo upserts, and listings ask those turns with
	// a query instead.
	versionPendingIndex = "pending-index"
	// versionBoundAnswers marks runs whose signal handler checks answers
	// as strictly as the Update validator (hash required, approvers
	// checked), its outcome recorded as a side effect. Signals are
	// replayed through the handler, so histories recorded before it
	// replay with the old check and keep their outcome. Update validators
	// do not run on replay and need no version.
	versionBoundAnswers = "bound-answers"
	// versionNotifyWebhooks: runs recorded before it send no webhook
	// notifications.
	versionNotifyWebhooks = "notify-webhooks"
	// versionNotifyEscalations: runs recorded before it send none for
	// escalations that end the wait (allow, or deny on timeout).
	versionNotifyEscalations = "notify-escalations"
	// versionEditedNewCall marks runs where an approved edit is a new
	// call: it runs with its own verdict (read-only flag, policy, fast
	// path and retries); runs recorded before it replay with the
	// original's.
	versionEditedNewCall = "edited-new-call"
	// versionLocalScriptedModel marks runs whose model steps may be
	// local activities (ModelConfig.Local); runs recorded before it
	// replay with regular ones.
	versionLocalScriptedModel = "local-scripted-model"
	// versionWaitContinueAsNew marks runs whose wait for answers
	// continues as new as soon as the history passes its bound; runs
	// recorded before it checked the bound only when the wait woke for an
	// answer or a deadline.
	versionWaitContinueAsNew = "wait-continue-as-new"
	// versionNotifyDelivery marks runs that wait (at most notifyGrace)
	// for their notifications in flight before they end or continue as
	// new; runs recorded before it ended without waiting.
	versionNotifyDelivery = "notify-delivery"
	// versionPrepareFlags marks runs whose verdicts record only the
	// tool's flags the workflow reads (Prepared.Flags), not its whole
	// Info: smaller Prepare markers and continue-as-new inputs. Runs
	// recorded before it replay reading the flags of the recorded Info.
	versionPrepareFlags = "prepare-flags"
	// versionLivePolicy marks runs of turns that follow a policy store
	// (TurnInput.LivePolicy) whose re-decisions of waiting calls after a
	// policy change (SignalPolicyChanged, or a rule added) release the
	// calls the new policy allows, deny those it denies, and record each
	// re-decision with both store versions (a side effect).
	versionLivePolicy = "live-policy"
	// versionRememberedApprovals marks runs where an always_allow with a
	// scope is remembered in the turn's policy store (a signal to it)
	// instead of adding rules to the turn.
	versionRememberedApprovals = "remembered-approvals"
	// versionQuorum marks runs where an allow short of its entry's
	// quorum (Pending.Quorum, two-person rules) is kept in
	// Pending.Approvals, recorded as an answered event and written to the
	// pending index while the entry stays open. Runs recorded before it
	// had no entries with a quorum.
	versionQuorum = "quorum"
	// versionQuorumProgress marks runs that tell the channels of an allow
	// short of a call's quorum: an approval_progress notification and an
	// update of the call's chat message (who allowed, how many more);
	// runs recorded before it told nobody.
	versionQuorumProgress = "quorum-progress"
	// versionBudgets marks runs of turns with a budget (TurnInput.Budget)
	// that check it before model and tool calls and park on budget
	// approvals. It is read only by turns with a budget, which older
	// workers never started.
	versionBudgets = "budgets"
	// versionNotifyAnswered marks runs that send an approval_answered
	// notification whenever a waiting call gets its final answer (an
	// approver, an escalation, a policy re-decision, an external
	// result); runs recorded before it send none.
	versionNotifyAnswered = "notify-answered"
	// versionNotifyReminders marks runs that send an approval_reminder
	// notification RemindBefore the deadline of a call still waiting
	// (a timer wakes the wait for it); runs recorded before it send none.
	versionNotifyReminders = "notify-reminders"
	// versionChatSlack marks runs that post a waiting call to chat
	// (ActivityChatPost, its refs kept in Pending.Chat) and update the
	// message once the call is answered (ActivityChatUpdate); runs
	// recorded before it post nothing.
	versionChatSlack = "chat-slack"
	// versionPolicyRuleCheck marks policy store runs whose set-policy
	// update checks the rules against a worker's tool registry
	// (ActivityCheckRules) before it sets them, and sets none when a
	// rule cannot match; runs recorded before it set rules unchecked.
	versionPolicyRuleCheck = "policy-rule-check"
	// versionAgentBudgets marks runs of turns that charge an agent's
	// budget store (TurnInput.AgentBudget): a charge activity before
	// every model call and step's tool calls, a raise activity after an
	// approver raises the agent's bound, and a last charge when the turn
	// ends. Only turns with an agent budget read it; older workers never
	// started one.
	versionAgentBudgets = "agent-budgets"
	// versionRouteRoles marks runs that compute the approver roles
	// covering a waiting call (NotifyInput.Roles and ChatInput.Roles, what
	// routes match) once per entry and run, in a side effect: the roles
	// checker asks the decision function and the shell parser, which a
	// replay then does not run again (an answer's own check is recorded
	// since versionBoundAnswers). Runs recorded before it, of turns whose
	// approvers have roles, compute the roles at every notification and
	// chat message, and on every replay.
	versionRouteRoles = "route-roles"
	// versionAuditNotes marks runs that record what the audit reads
	// where it happens: the kind of each verdict they ask for
	// (PrepareInput.Kind, which Prepare echoes in Prepared.Kind), an
	// AuditNote side effect at each escalation (the deadline reached,
	// the action, whom it notified) and at each budget approval's
	// answer (the raise, or the denial, by whom and via what). The audit
	// reads runs with this marker from those records alone; runs
	// recorded before it replay without the side effects and keep the
	// audit's legacy reading (its re-simulated deadlines and its guess of
	// a verdict's kind).
	versionAuditNotes = "audit-notes"
	// versionChatBudget marks runs whose budget approvals are posted to
	// chat like any approval (Pending.ChatOn set on the budget entry,
	// ActivityChatPost when it parks, ActivityChatUpdate once it is
	// answered); runs recorded before it post none.
	versionChatBudget = "chat-budget"
	// versionAuditHead marks runs that record the head of their audit
	// chain as they end (ActivityAuditHead, a local activity, then an
	// AuditNote side effect with its Head); runs recorded before it end
	// without either.
	versionAuditHead = "audit-head"
	// versionWindows marks runs that count the calls of the policy's
	// window limits (permission.WindowLimit) and ask when one is
	// reached: a side effect or a local activity (an agent scope's
	// reservation in its budget store) before each counted call. Only
	// runs whose verdicts name a limit ask for it.
	versionWindows = "window-limits"
	// versionChatRefresh marks runs that tell the channels of the calls
	// still waiting after a policy change re-hashed them (a policy
	// apply, a remembered approval made, used or revoked, a rule added
	// in the turn): the chat message is drawn again with buttons that
	// carry the new hash, and an approval_updated notification carries
	// it to webhook consumers. Runs recorded before it told nobody, and
	// every click on the old buttons was refused as stale.
	versionChatRefresh = "chat-refresh"
)

// Bounds that decide when commands are emitted.
const (
	// DefaultMaxIterations bounds model calls of a turn that sets none. It
	// suits long sessions: the turn continues as new along the way and
	// keeps its conversation in the content store.
	DefaultMaxIterations = 1000
	// legacyMaxIterations is the bound of runs recorded before content by
	// reference (their replays must stop where they stopped).
	legacyMaxIterations = 20
	// DefaultApprovalTimeout is an ASK's deadline when neither the turn
	// nor the call's policy sets one: the deadline is computed again on
	// replay, and its timer and escalation depend on it.
	DefaultApprovalTimeout = 7 * 24 * time.Hour
	// localModelRun bounds the local model steps in a row: every
	// localModelRun-th step is a regular activity, which ends the
	// workflow task, so the markers of one task stay small and the
	// history length the continue-as-new check reads keeps up.
	localModelRun = 16
	// maxCarriedInput bounds a continue-as-new input, well under the
	// server's 2 MB payload limit; a turn whose state is larger fails
	// instead of continuing.
	maxCarriedInput = 1536 << 10
	// notifyGrace bounds how long a run that ends (or continues as new)
	// waits for its notifications in flight: a first attempt and a few
	// retries. Only its timer's duration depends on it, which replay does
	// not compare.
	notifyGrace = 30 * time.Second
)

// Bounds of the pending index a turn keeps in its memo. The index is
// upserted only when its JSON differs from the last one written
// (indexUnchanged), so whatever changes its encoding decides whether a
// workflow task emits an UpsertMemo command.
const (
	// PreviewBytes bounds an entry's input preview (and its message and
	// reason): inputs up to this size are kept whole.
	PreviewBytes = 200
	// maxIndexEntries bounds the entries kept; a turn with more sets
	// PendingIndex.More and listings ask it for the rest.
	maxIndexEntries = 50
)

// indexUnchanged reports whether the pending index b (its JSON) is the
// one this run last wrote: then no memo upsert is emitted. The bytes are
// compared, so the encoding of PendingIndex and IndexEntry (fields, their
// order and omitempty, PreviewBytes, maxIndexEntries, clipTo) is part of
// the command sequence: a change to it that makes two indexes differ
// where they were equal, or the reverse, needs a change ID.
func indexUnchanged(b []byte, last string) bool { return string(b) == last }
