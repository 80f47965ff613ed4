package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// Resume carries a turn's progress into its next run when it continues
// as new: counters, the agent context after BeforeAgent, recent events,
// and the model step in flight with its pending entries and answers.
type Resume struct {
	Iterations     int      `json:"iterations"`
	ToolCalls      int      `json:"tool_calls"`
	ToolErrors     int      `json:"tool_errors,omitempty"`
	PolicyVersion  int      `json:"policy_version"`
	Instruction    string   `json:"instruction,omitempty"`
	Tools          []string `json:"tools,omitempty"`
	ReturnDirectly []string `json:"return_directly,omitempty"`
	// Seq and Events keep the event stream's cursor and its latest events.
	Seq    int        `json:"seq"`
	Events []Event    `json:"events,omitempty"`
	Step   *StepState `json:"step,omitempty"`
	// Conversation is the stored conversation's head (by-reference turns);
	// TurnInput.Messages then holds only the messages added since.
	Conversation string `json:"conversation,omitempty"`
	// Notifying are webhook notifications the previous run started and
	// did not see delivered (nor failed for good) when it continued as
	// new: the next run sends them again, under the same webhook id.
	Notifying []NotifyInput `json:"notifying,omitempty"`
	// LiveVersion is the latest policy store version the turn was told
	// of (SignalPolicyChanged).
	LiveVersion int `json:"live_version,omitempty"`
	// Usage is the turn's model usage so far, across its runs.
	Usage model.Usage `json:"usage,omitzero"`
	// StartedAt is when the turn's first budget check ran (its time bound
	// counts from there); BudgetRaised sums what answers raised; ToolsRun
	// counts the calls of the tools the budget bounds; BudgetParks
	// numbers budget approvals; BudgetWarned lists the warnings given.
	StartedAt    time.Time      `json:"started_at,omitzero"`
	BudgetRaised *Budget        `json:"budget_raised,omitempty"`
	ToolsRun     map[string]int `json:"tools_run,omitempty"`
	BudgetParks  int            `json:"budget_parks,omitempty"`
	BudgetWarned []string       `json:"budget_warned,omitempty"`
	// AgentSeq numbers the turn's charges of its agent budget store;
	// AgentCharged is the usage charged there so far.
	AgentSeq     int         `json:"agent_seq,omitempty"`
	AgentCharged model.Usage `json:"agent_charged,omitzero"`
	// Session is the state of a session and of the messages, pauses and
	// cancels a turn received (session.go).
	Session SessionState `json:"session,omitzero"`
	// Team is the approvers in force, as the policy store the turn
	// follows last told it (TeamVersion > 0); they replace
	// TurnInput.Approvers for every answer checked from then on.
	Team        *Approvers `json:"team,omitempty"`
	TeamVersion int        `json:"team_version,omitempty"`
	// Touched is what the turn's calls (and, for a session, its earlier
	// turns') touched: the session rules decide against it
	// (permission.SessionPolicy). Calls add to it as they complete.
	Touched *permission.Touched `json:"touched,omitempty"`
	// WindowUses are the calls counted against the window limits of the
	// turn scope (window.go), pruned as they leave their window.
	WindowUses []WindowUse `json:"window_uses,omitempty"`
}

// StepState is a model step interrupted by continue-as-new.
type StepState struct {
	Slots   []SlotState   `json:"slots"`
	Pending []Pending     `json:"pending,omitempty"`
	Answers []AnswerState `json:"answers,omitempty"`
}

// SlotState is one call of an interrupted step.
type SlotState struct {
	Call   model.ToolCall `json:"call"`
	Prep   Prepared       `json:"prep"`
	Ready  bool           `json:"ready,omitempty"`
	Result *calls.Result  `json:"result,omitempty"`
}

// AnswerState is an answer received for a pending call.
type AnswerState struct {
	CallID   string          `json:"call_id"`
	Approval *Approval       `json:"approval,omitempty"`
	External *ExternalResult `json:"external,omitempty"`
	Auto     string          `json:"auto,omitempty"`
	// Denied is why a policy change denied the waiting call.
	Denied string `json:"denied,omitempty"`
	// Interrupted is why an interrupt or a cancel withdrew the call.
	Interrupted string `json:"interrupted,omitempty"`
}

// carriedEvents bounds the events carried into the next run.
const carriedEvents = 100

var errContinueAsNew = errors.New("continue as new")

// shouldContinueAsNew follows the server's suggestion (history too long)
// or the turn's own bound on history length.
func (t *turn) shouldContinueAsNew(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() ||
		(t.in.ContinueAsNewAfter > 0 && info.GetCurrentHistoryLength() >= t.in.ContinueAsNewAfter)
}

// endOrContinue turns errContinueAsNew into a continue-as-new of the turn
// with its whole state; other errors end the run.
func (t *turn) endOrContinue(ctx workflow.Context, err error) error {
	if !errors.Is(err, errContinueAsNew) {
		return err
	}
	// Notifications in flight get their chance to be delivered by this
	// run; those still in flight after that are carried.
	t.settleNotifications(ctx)
	// No answer may be lost in the switch: let the signal coroutine
	// handle what it already took from its channels, apply signals still
	// buffered, and let running update handlers finish.
	yieldToOthers(ctx)
	t.drainSignals(ctx)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	t.drainSignals(ctx)
	next := t.carry()
	r := next.Resume
	// The next run's input must fit the server's payload limit, or the
	// turn would stall retrying the workflow task: the carried events go
	// first (they only serve progress displays); if it still does not
	// fit, the turn ends with the reason.
	if inputSize(next) > maxCarriedInput {
		r.Events = nil
		if n := inputSize(next); n > maxCarriedInput {
			err := fmt.Errorf("cannot continue as new: the turn's state is %d bytes, over the %d bytes a run's input may carry (pending inputs, read stamps, task list)", n, maxCarriedInput)
			return t.fail(ctx, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeStateTooLarge, nil))
		}
	}
	continueAsNewSpan(ctx, len(t.pending))
	return workflow.NewContinueAsNewError(ctx, TurnWorkflow, next)
}

// ErrTypeStateTooLarge fails a turn whose state no longer fits a run's input.
const ErrTypeStateTooLarge = "StateTooLarge"

func inputSize(in TurnInput) int {
	b, err := json.Marshal(in)
	if err != nil {
		return 0
	}
	return len(b)
}

// yieldToOthers blocks until every other ready coroutine of the workflow
// has run once (coroutines run in creation order, so one started now runs
// after them).
func yieldToOthers(ctx workflow.Context) {
	ch := workflow.NewChannel(ctx)
	workflow.Go(ctx, func(ctx workflow.Context) { ch.Send(ctx, true) })
	ch.Receive(ctx, nil)
}

// resumeStep finishes the step carried over from the previous run.
func (t *turn) resumeStep(ctx workflow.Context) ([]calls.Result, error) {
	slots := t.inFlight
	t.inFlight = nil
	return t.finishStep(ctx, slots)
}

// restore builds a run's state from its input: a first run's from the
// input alone, a continued run's from the carried state too. It is the
// inverse of carry.
func restore(in TurnInput) *turn {
	t := &turn{
		in:      in,
		msgs:    slices.Clone(in.Messages),
		state:   in.State,
		perm:    in.Permission,
		answers: map[string]AnswerState{},
		local:   in.RunLocal,
	}
	r := in.Resume
	if r == nil {
		return t
	}
	t.Resume = *r
	t.Step = nil
	if st := r.Step; st != nil {
		t.pending = st.Pending
		for _, a := range st.Answers {
			t.answers[a.CallID] = a
		}
		t.inFlight = make([]*slot, len(st.Slots))
		for i := range st.Slots {
			s := st.Slots[i]
			t.inFlight[i] = &s
		}
	}
	return t
}

// carry is the next run's input: the turn's input with its carried state
// (the latest carriedEvents events only). It is the inverse of restore.
func (t *turn) carry() TurnInput {
	next := t.in
	next.Prompt = ""
	next.Messages, next.State, next.Permission, next.RunLocal = t.msgs, t.state, t.perm, t.local
	r := t.Resume
	r.Notifying = append(slices.Clone(r.Notifying), t.unsettled()...)
	if n := len(r.Events); n > carriedEvents {
		r.Events = r.Events[n-carriedEvents:]
	}
	if t.inFlight != nil {
		st := &StepState{Pending: t.pending}
		for _, s := range t.inFlight {
			st.Slots = append(st.Slots, *s)
		}
		for _, p := range t.pending {
			if a, ok := t.answers[p.CallID]; ok {
				st.Answers = append(st.Answers, a)
			}
		}
		r.Step = st
	}
	next.Resume = &r
	return next
}
