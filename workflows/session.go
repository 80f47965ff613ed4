package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/model"
)

// A session is a turn started with TurnInput.Session: when a turn
// answers, the workflow does not end but waits for the next message,
// which opens the next turn in a new run (continue-as-new), the
// conversation carried by reference. Every turn, a session's or not,
// takes messages while it works (steer, interrupt), pause and resume,
// and cancel; only a session queues messages for after its answer.

// Session names.
const (
	// UpdateMessage sends a SessionMessage to a running turn or session.
	UpdateMessage = "message"
	// UpdateControl pauses, resumes or cancels it (SessionControl).
	UpdateControl = "control"
	// SASessionState is the session's state as a search attribute
	// (running, waiting, paused, idle), set on sessions only.
	SASessionState = "WardenSessionState"
	// EventMessage reports a message delivered to the model, queued, or
	// an interrupt; EventControl a pause, resume or cancel.
	EventMessage = "message"
	EventControl = "control"
)

var saSessionState = temporal.NewSearchAttributeKeyKeyword(SASessionState)

// MessageMode says when a message reaches the model.
type MessageMode string

// The message modes.
const (
	// MessageQueue delivers the message when the current turn ends, as
	// the next turn's prompt (sessions only).
	MessageQueue MessageMode = "queue"
	// MessageSteer delivers it at the next model call of the current
	// turn; what runs is not stopped.
	MessageSteer MessageMode = "steer"
	// MessageInterrupt stops the current step (running tool processes
	// are cancelled, waiting approvals withdrawn), then delivers it.
	MessageInterrupt MessageMode = "interrupt"
)

// SessionMessage is a person's message to a running turn or session. It
// is user content for the model: it never changes the policy, the mode
// or the budget.
type SessionMessage struct {
	Text string      `json:"text"`
	Mode MessageMode `json:"mode"`
	// By is who sends it, Via the key that sent it (as for approvals).
	By  string `json:"by,omitempty"`
	Via string `json:"via,omitempty"`
	// At is when the workflow accepted it (set by the workflow).
	At time.Time `json:"at,omitzero"`
}

// ControlAction is what a SessionControl does.
type ControlAction string

// The control actions.
const (
	ControlPause  ControlAction = "pause"
	ControlResume ControlAction = "resume"
	ControlCancel ControlAction = "cancel"
)

// SessionControl pauses, resumes or cancels a turn or session.
type SessionControl struct {
	Action ControlAction `json:"action"`
	Reason string        `json:"reason,omitempty"`
	By     string        `json:"by,omitempty"`
	Via    string        `json:"via,omitempty"`
	At     time.Time     `json:"at,omitzero"`
}

// SessionAck is the workflow's answer to a message or control.
type SessionAck struct {
	// Status says what happened: "queued", "steering", "interrupted",
	// "paused", "resumed", "cancelled", or "started turn N".
	Status string `json:"status"`
	// Turn is the turn the message reaches (1-based).
	Turn int `json:"turn"`
}

// SessionState is a session's carried state (part of Resume).
type SessionState struct {
	// Turns counts the turns answered; TurnIter is the turn's first
	// model call (Iterations when it started): MaxIterations bounds
	// each turn.
	Turns    int `json:"turns,omitempty"`
	TurnIter int `json:"turn_iter,omitempty"`
	// Idle is set while a session waits for its next message.
	Idle bool `json:"idle,omitempty"`
	// Paused is the pause in force (nil: running).
	Paused *SessionControl `json:"paused,omitempty"`
	// Queue holds messages for after the turn; Steers those for its
	// next model call; Interrupt the interrupt the current step has not
	// yet applied.
	Queue     []SessionMessage `json:"queue,omitempty"`
	Steers    []SessionMessage `json:"steers,omitempty"`
	Interrupt *SessionMessage  `json:"interrupt,omitempty"`
	// Cancel is the cancel in force: the turn ends at its next step.
	Cancel *SessionControl `json:"cancel,omitempty"`
	// Usage sums the model usage of the session's answered turns.
	Usage model.Usage `json:"usage,omitzero"`
}

// SessionSummary is a session's part of QueryState's Summary.
type SessionSummary struct {
	Session bool            `json:"session"`
	State   string          `json:"state"`
	Turns   int             `json:"turns"`
	Paused  *SessionControl `json:"paused,omitempty"`
	Queued  int             `json:"queued,omitempty"`
	Steers  int             `json:"steers,omitempty"`
}

// errCancelled ends a turn whose cancel was accepted.
var errCancelled = errors.New("cancelled")

// registerSession installs the message and control updates.
func (t *turn) registerSession(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateMessage,
		func(ctx workflow.Context, m SessionMessage) (SessionAck, error) { return t.acceptMessage(ctx, m), nil },
		workflow.UpdateHandlerOptions{Validator: func(m SessionMessage) error { return t.validateMessage(m) }},
	); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateControl,
		func(ctx workflow.Context, c SessionControl) (SessionAck, error) { return t.acceptControl(ctx, c), nil },
		workflow.UpdateHandlerOptions{Validator: func(c SessionControl) error { return t.validateControl(c) }},
	)
}

// ended says why the turn takes no more messages ("" while it does).
func (t *turn) ended() string {
	switch {
	case t.Session.Cancel != nil:
		return "it was cancelled"
	case t.done && !t.Session.Idle:
		return "it has finished"
	}
	return ""
}

// validateMessage refuses a message the turn cannot take, with the reason.
func (t *turn) validateMessage(m SessionMessage) error {
	if why := t.ended(); why != "" {
		return fmt.Errorf("%s takes no messages: %s", t.wfid, why)
	}
	if strings.TrimSpace(m.Text) == "" {
		return errors.New("empty message: a message needs text")
	}
	switch m.Mode {
	case MessageSteer, MessageInterrupt:
	case MessageQueue:
		if !t.in.Session {
			return fmt.Errorf("%s is a single turn, not a session: it ends with its answer, so nothing can be queued after it (send with steer or interrupt, or start a session)", t.wfid)
		}
	default:
		return fmt.Errorf("unknown message mode %q (want queue, steer or interrupt)", m.Mode)
	}
	return t.maySend(m.By)
}

// maySend checks who may message or control the turn: the users of
// TurnInput.Senders when set, else its requester and approvers when
// approvers are configured, else anyone the server let send (a key that
// may answer).
func (t *turn) maySend(by string) error {
	switch {
	case len(t.in.Senders) > 0:
		if by != "" && (by == t.in.Requester || slices.Contains(t.in.Senders, by)) {
			return nil
		}
		return fmt.Errorf("%q may not message %s: senders are %s and its requester", by, t.wfid, strings.Join(t.in.Senders, ", "))
	case t.approvers().Enabled():
		if by != "" && by == t.in.Requester {
			return nil
		}
		if _, ok := t.approvers().Users[by]; by != "" && ok {
			return nil
		}
		return fmt.Errorf("%q may not message %s: only its requester and its approvers may", by, t.wfid)
	}
	return nil
}

// validateControl refuses a control that does not apply now.
func (t *turn) validateControl(c SessionControl) error {
	if why := t.ended(); why != "" {
		return fmt.Errorf("%s cannot be %s: %s", t.wfid, pastTense(c.Action), why)
	}
	switch c.Action {
	case ControlPause:
		if t.Session.Paused != nil {
			return fmt.Errorf("%s is already paused (by %s)", t.wfid, t.Session.Paused.By)
		}
	case ControlResume:
		if t.Session.Paused == nil {
			return fmt.Errorf("%s is not paused", t.wfid)
		}
	case ControlCancel:
	default:
		return fmt.Errorf("unknown control %q (want pause, resume or cancel)", c.Action)
	}
	return t.maySend(c.By)
}

func pastTense(a ControlAction) string {
	switch a {
	case ControlPause:
		return "paused"
	case ControlResume:
		return "resumed"
	case ControlCancel:
		return "cancelled"
	}
	return string(a)
}

// turnNo is the number of the turn a message reaches now.
func (t *turn) turnNo() int { return t.Session.Turns + 1 }

// acceptMessage takes a validated message. A session waiting for its
// next message starts its next turn with it, whatever the mode.
func (t *turn) acceptMessage(ctx workflow.Context, m SessionMessage) SessionAck {
	m.At = workflow.Now(ctx)
	from := who(m.By, m.Via)
	defer t.notifySession(ctx, NotifySessionMessage, SessionNote{Mode: string(m.Mode), Text: m.Text, By: m.By, Via: m.Via})
	if t.Session.Idle {
		// The first message starts the next turn; others sent before it
		// started queue behind it.
		n := t.turnNo() + len(t.Session.Queue)
		t.Session.Queue = append(t.Session.Queue, m)
		if len(t.Session.Queue) > 1 {
			t.emit(ctx, Event{Type: EventMessage, Text: fmt.Sprintf("message from %s queued for turn %d: %s", from, n, m.Text)})
			return SessionAck{Status: "queued", Turn: n}
		}
		t.emit(ctx, Event{Type: EventMessage, Text: fmt.Sprintf("message from %s starts turn %d: %s", from, n, m.Text)})
		return SessionAck{Status: fmt.Sprintf("started turn %d", n), Turn: n}
	}
	switch m.Mode {
	case MessageQueue:
		t.Session.Queue = append(t.Session.Queue, m)
		t.emit(ctx, Event{Type: EventMessage, Text: fmt.Sprintf("message from %s queued for turn %d: %s", from, t.turnNo()+len(t.Session.Queue), m.Text)})
		return SessionAck{Status: "queued", Turn: t.turnNo() + len(t.Session.Queue)}
	case MessageInterrupt:
		t.Session.Steers = append(t.Session.Steers, m)
		t.interrupt(ctx, m, "interrupted by "+from)
		return SessionAck{Status: "interrupted", Turn: t.turnNo()}
	default:
		t.Session.Steers = append(t.Session.Steers, m)
		t.emit(ctx, Event{Type: EventMessage, Text: fmt.Sprintf("message from %s for the next model call: %s", from, m.Text)})
		return SessionAck{Status: "steering", Turn: t.turnNo()}
	}
}

// acceptControl takes a validated pause, resume or cancel.
func (t *turn) acceptControl(ctx workflow.Context, c SessionControl) SessionAck {
	c.At = workflow.Now(ctx)
	from := who(c.By, c.Via)
	text := pastTense(c.Action) + " by " + from
	if c.Reason != "" {
		text += ": " + c.Reason
	}
	switch c.Action {
	case ControlPause:
		t.Session.Paused = &c
	case ControlResume:
		t.Session.Paused = nil
	case ControlCancel:
		t.Session.Cancel = &c
		if !t.Session.Idle {
			t.interrupt(ctx, SessionMessage{Text: c.Reason, By: c.By, Via: c.Via, At: c.At}, "cancelled by "+from)
		}
	}
	t.emit(ctx, Event{Type: EventControl, Text: text})
	t.upsertSession(ctx)
	typ := map[ControlAction]string{ControlPause: NotifySessionPaused, ControlResume: NotifySessionResumed, ControlCancel: NotifySessionCancelled}[c.Action]
	t.notifySession(ctx, typ, SessionNote{Reason: c.Reason, By: c.By, Via: c.Via})
	return SessionAck{Status: pastTense(c.Action), Turn: t.turnNo()}
}

func who(by, via string) string {
	switch {
	case by == "":
		return "an unnamed sender"
	case via != "" && via != by:
		return by + " (via " + via + ")"
	}
	return by
}

// interrupt stops the current step: the calls it has not run will not
// run, running tool activities are cancelled (their processes stopped,
// their output so far kept), and its waiting approvals and external
// calls are withdrawn, their channels told.
func (t *turn) interrupt(ctx workflow.Context, m SessionMessage, why string) {
	t.Session.Interrupt = &m
	text := why
	if m.Text != "" {
		text += ": " + m.Text
	}
	t.emit(ctx, Event{Type: EventMessage, Text: text})
	if t.stopRunning != nil {
		t.stopRunning()
	}
	for _, p := range t.open() {
		if p.Kind == PendingBudget && t.Session.Cancel != nil {
			// A cancel ends a budget wait too: as a deny, which ends the
			// turn (as cancelled, see endOn).
			t.answers[p.CallID] = AnswerState{CallID: p.CallID, Approval: &Approval{CallID: p.CallID, Decision: DecisionDeny,
				By: m.By, Via: m.Via, Reason: text}}
			t.emit(ctx, Event{Type: EventAnswered, CallID: p.CallID, Tool: p.Tool, Text: "withdrawn: " + why})
			t.notifyAnswered(ctx, p, AnswerNote{By: m.By, Via: m.Via, Decision: DecisionWithdrawn, Reason: text})
			continue
		}
		if p.Kind != PendingApproval && p.Kind != PendingExternal {
			continue
		}
		t.answers[p.CallID] = AnswerState{CallID: p.CallID, Interrupted: why}
		t.emit(ctx, Event{Type: EventAnswered, CallID: p.CallID, Tool: p.Tool, Text: "withdrawn: " + why})
		t.notifyAnswered(ctx, p, AnswerNote{By: m.By, Via: m.Via, Decision: DecisionWithdrawn, Reason: text})
	}
}

// DecisionWithdrawn is the AnswerNote decision of an entry an interrupt
// or a cancel withdrew.
const DecisionWithdrawn = "withdrawn"

// interrupted is the result of a call an interrupt stopped; output is
// what it printed before it was stopped ("" when it never ran).
func interrupted(c model.ToolCall, why string, ran bool, output string) *calls.Result {
	content := fmt.Sprintf("The %s call was %s before it ran; it did not run.", c.Name, why)
	if ran {
		content = fmt.Sprintf("The %s call was %s while it ran; it was stopped.", c.Name, why)
		if output != "" {
			content += " Output so far:\n" + output
		}
	}
	return &calls.Result{CallID: c.ID, Name: c.Name, IsError: true, State: calls.StateInterrupted, Content: content}
}

// interruptWhy is how a result names the interrupt in force.
func (t *turn) interruptWhy() string {
	if c := t.Session.Cancel; c != nil {
		return "cancelled by " + who(c.By, c.Via)
	}
	if m := t.Session.Interrupt; m != nil {
		return "interrupted by " + who(m.By, m.Via)
	}
	return "interrupted"
}

// interruptSlots gives every slot without a result an interrupted one
// (the calls did not run).
func (t *turn) interruptSlots(slots []*slot) {
	why := t.interruptWhy()
	for _, s := range slots {
		if s.Result == nil {
			s.Ready = false
			s.Result = interrupted(s.Call, why, false, "")
		}
	}
}

// beforeModel holds a model call while the turn is paused, then hands the
// model the messages sent for it. A cancel ends the wait (errCancelled),
// and so does the history bound (errContinueAsNew).
func (t *turn) beforeModel(ctx workflow.Context) error {
	if t.Session.Paused != nil && t.Session.Cancel == nil {
		t.upsertSession(ctx)
		if err := workflow.Await(ctx, func() bool {
			return t.Session.Paused == nil || t.Session.Cancel != nil || t.shouldContinueAsNew(ctx)
		}); err != nil {
			return fmt.Errorf("paused: %w", err)
		}
		if t.Session.Paused != nil && t.Session.Cancel == nil {
			return errContinueAsNew
		}
		t.upsertSession(ctx)
	}
	if t.Session.Cancel != nil {
		return errCancelled
	}
	t.Session.Interrupt = nil
	for _, m := range t.Session.Steers {
		t.msgs = append(t.msgs, model.Message{Role: model.RoleUser, Content: m.Text})
		t.emit(ctx, Event{Type: EventMessage, Text: fmt.Sprintf("delivered to the model: message from %s: %s", who(m.By, m.Via), m.Text)})
	}
	t.Session.Steers = nil
	return nil
}

// holdWhilePaused holds the start of tool calls while the turn is
// paused; an interrupt or a cancel ends the hold (the calls then do not
// run).
func (t *turn) holdWhilePaused(ctx workflow.Context) error {
	if t.Session.Paused == nil {
		return nil
	}
	t.upsertSession(ctx)
	if err := workflow.Await(ctx, func() bool {
		return t.Session.Paused == nil || t.Session.Interrupt != nil || t.Session.Cancel != nil
	}); err != nil {
		return fmt.Errorf("paused: %w", err)
	}
	t.upsertSession(ctx)
	return nil
}

// stopped reports whether an interrupt or cancel stops the current step.
func (t *turn) stopped() bool { return t.Session.Interrupt != nil || t.Session.Cancel != nil }

// cancelled ends the turn that a cancel stopped.
func (t *turn) cancelled(ctx workflow.Context) TurnResult {
	c := t.Session.Cancel
	reason := "cancelled by " + who(c.By, c.Via)
	if c.Reason != "" {
		reason += ": " + c.Reason
	}
	t.Session.Idle = false
	res := t.finish(ctx, TurnResult{Stopped: "cancelled", StopReason: reason})
	t.upsertSession(ctx)
	return res
}

// sessionState names what the session does now (SASessionState).
func (t *turn) sessionState() string {
	switch {
	case t.Session.Cancel != nil || (t.done && !t.Session.Idle):
		return "ended"
	case t.Session.Paused != nil:
		return "paused"
	case t.Session.Idle:
		return "idle"
	case len(t.open()) > 0:
		return "waiting"
	}
	return "running"
}

// upsertSession publishes a session's state as SASessionState when it
// changed. Turns that are not sessions set none.
func (t *turn) upsertSession(ctx workflow.Context) {
	if !t.in.Session {
		return
	}
	st := t.sessionState()
	if st == t.saState {
		return
	}
	t.saState = st
	_ = workflow.UpsertTypedSearchAttributes(ctx, saSessionState.ValueSet(st))
}

// summary is the session part of QueryState.
func (t *turn) sessionSummary() *SessionSummary {
	return &SessionSummary{Session: t.in.Session, State: t.sessionState(), Turns: t.Session.Turns,
		Paused: t.Session.Paused, Queued: len(t.Session.Queue), Steers: len(t.Session.Steers)}
}

// nextTurn is a session's end of turn: it waits for the next message
// (or a cancel), then continues as new with that message as the next
// turn's prompt. res is the answered turn's result, which a cancel ends
// the session with.
func (t *turn) nextTurn(ctx workflow.Context, res TurnResult) (TurnResult, error) {
	if !t.Session.Idle {
		t.Session.Turns++
		t.Session.Idle = true
		t.Session.Usage = t.Session.Usage.Add(t.Usage)
		// Messages sent for a model call the turn did not make open
		// the next turn, before those queued after it.
		t.Session.Queue = append(t.Session.Steers, t.Session.Queue...)
		t.Session.Steers, t.Session.Interrupt = nil, nil
		t.upsertSession(ctx)
		t.notifySession(ctx, NotifySessionAnswered, SessionNote{Turn: t.Session.Turns, Answer: clipTo(res.Answer, 500), Reason: res.StopReason})
	}
	t.upsertSession(ctx)
	if err := workflow.Await(ctx, func() bool {
		return len(t.Session.Queue) > 0 || t.Session.Cancel != nil || t.shouldContinueAsNew(ctx)
	}); err != nil {
		return TurnResult{}, fmt.Errorf("waiting for a message: %w", err)
	}
	if c := t.Session.Cancel; c != nil {
		res.Stopped, res.StopReason = "cancelled", "cancelled by "+who(c.By, c.Via)
		if c.Reason != "" {
			res.StopReason += ": " + c.Reason
		}
		t.Session.Idle = false
		t.upsertSession(ctx)
		return res, nil
	}
	if len(t.Session.Queue) > 0 {
		m := t.Session.Queue[0]
		t.Session.Queue = slices.Delete(t.Session.Queue, 0, 1)
		t.openTurn(m)
	}
	return TurnResult{}, t.endOrContinue(ctx, errContinueAsNew)
}

// openTurn makes m the prompt of the session's next turn: the per-turn
// counters and budget start again.
func (t *turn) openTurn(m SessionMessage) {
	t.Session.Idle = false
	t.Session.TurnIter = t.Iterations
	t.done = false
	t.Usage = model.Usage{}
	t.StartedAt, t.BudgetRaised, t.ToolsRun, t.BudgetWarned = time.Time{}, nil, nil, nil
	t.msgs = append(t.msgs, model.Message{Role: model.RoleUser, Content: m.Text})
}

// notifySession sends a session's webhook notification (sessions only;
// a worker without webhooks sends nothing).
func (t *turn) notifySession(ctx workflow.Context, typ string, n SessionNote) {
	if !t.in.Session {
		return
	}
	info := workflow.GetInfo(ctx)
	n.Seq, n.State, n.At = t.Seq, t.sessionState(), workflow.Now(ctx)
	if n.Turn == 0 {
		n.Turn = t.turnNo()
	}
	t.sendNotification(ctx, NotifyInput{Type: typ, WorkflowID: info.WorkflowExecution.ID, Namespace: info.Namespace,
		Agent: t.in.Agent, Session: &n})
}
