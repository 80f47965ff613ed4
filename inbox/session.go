// The session view: the sessions list (GET /sessions, GET /api/sessions),
// a session's page (GET /session, GET /api/session) and what a person
// sends it from there (POST /api/session/message, /api/session/control).
// Who may message, pause, resume or cancel a session is the workflow's
// check (workflows.TurnInput.Senders, else its requester and approvers);
// the inbox sends as its signed-in user (By) through its own key (Via),
// as it sends answers.

package inbox

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/workflows"
)

// sessionClient is what the session view asks of warden: the
// client.Client's session calls (tests give a fake).
type sessionClient interface {
	ListSessions(ctx context.Context, state string) ([]client.SessionRow, error)
	State(ctx context.Context, workflowID string) (workflows.Summary, error)
	Events(ctx context.Context, workflowID string, cursor int) (workflows.EventsPage, error)
	Send(ctx context.Context, workflowID string, m workflows.SessionMessage) (workflows.SessionAck, error)
	Control(ctx context.Context, workflowID string, c workflows.SessionControl) (workflows.SessionAck, error)
}

// sessionStates are the states the sessions list shows, in its order
// (an ended session is listed only when asked for by state).
func sessionStates() []string { return []string{"waiting", "paused", "running", "idle"} }

// maxSessionEvents bounds the events a session view shows (the latest).
const maxSessionEvents = 200

// SessionMessageRequest is the body of POST /api/session/message.
type SessionMessageRequest struct {
	// ID is the session's (or turn's) workflow id.
	ID   string `json:"id"`
	Text string `json:"text"`
	// Mode is queue (after the current turn), steer (at its next model
	// call) or interrupt (stop the current step, then deliver).
	Mode workflows.MessageMode `json:"mode"`
}

// SessionControlRequest is the body of POST /api/session/control.
type SessionControlRequest struct {
	ID     string                  `json:"id"`
	Action workflows.ControlAction `json:"action"` // pause, resume or cancel
	// Reason says why; a cancel needs one.
	Reason string `json:"reason,omitempty"`
}

// SessionList is the answer of GET /api/sessions.
type SessionList struct {
	User     string              `json:"user"`
	Sessions []client.SessionRow `json:"sessions"`
}

// SessionView is the answer of GET /api/session: a session's state, the
// calls it waits for and its recent events.
type SessionView struct {
	ID   string `json:"id"`
	User string `json:"user"`
	// Session is false for a single turn, which takes steer and
	// interrupt but no queued message.
	Session bool   `json:"session"`
	State   string `json:"state"`
	// Turns counts the turns answered; Iterations and ToolCalls are the
	// current run's model and tool calls.
	Turns      int `json:"turns"`
	Iterations int `json:"iterations"`
	ToolCalls  int `json:"tool_calls"`
	// Paused is the pause in force: by whom, when and why.
	Paused *workflows.SessionControl `json:"paused,omitempty"`
	// Queued messages wait for later turns, Steers for the next model call.
	Queued  int           `json:"queued"`
	Steers  int           `json:"steers"`
	Waiting []WaitingCall `json:"waiting"`
	Usage   string        `json:"usage,omitempty"`
	// Events are the latest messages, controls, model text, calls and
	// answers (none when Hidden says why not).
	Events []SessionEvent `json:"events"`
	Hidden string         `json:"hidden,omitempty"`
}

// SessionEvent is an event of a session view with the line that shows it.
type SessionEvent struct {
	workflows.Event
	Line string `json:"line"`
}

// eventLine is how a session view shows e: as `starter session show`
// prints it (inert), an answer as "answer: TEXT".
func eventLine(e workflows.Event) string {
	if e.Type == workflows.EventFinal {
		return client.Inert("answer:  " + e.Text)
	}
	return strings.TrimRight(client.FormatEvent(e), "\n")
}

// WaitingCall is a call a session waits for (answered in the inbox).
type WaitingCall struct {
	CallID string                `json:"call_id"`
	Tool   string                `json:"tool"`
	Kind   workflows.PendingKind `json:"kind"`
}

// sessionEvent reports whether a session view shows e.
func sessionEvent(e workflows.Event) bool {
	switch e.Type {
	case workflows.EventMessage, workflows.EventControl, workflows.EventFinal, workflows.EventFailed,
		workflows.EventToolCall, workflows.EventResult, workflows.EventWaiting, workflows.EventAnswered:
		return true
	case workflows.EventModel:
		return strings.TrimSpace(e.Text) != ""
	}
	return false
}

// sessions lists the open sessions in state (all open ones when state is
// empty; "ended" lists those that ended), latest first, one row per
// session: the runs a session continued as new from are left out.
func (s *Server) sessions(ctx context.Context, state string) ([]client.SessionRow, error) {
	if state != "" && state != "ended" && !slices.Contains(sessionStates(), state) {
		return nil, statusErr(http.StatusBadRequest, "state %q: want running, waiting, paused, idle or ended", state)
	}
	rows, err := s.sess.ListSessions(ctx, state)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []client.SessionRow{}
	for _, r := range rows {
		if r.Status == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW.String() || seen[r.WorkflowID] {
			continue
		}
		if state == "" && r.State == "ended" {
			continue
		}
		seen[r.WorkflowID] = true
		out = append(out, r)
	}
	return out, nil
}

func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) {
	rows, err := s.sessions(r.Context(), r.URL.Query().Get("state"))
	writeResult(w, SessionList{User: userFrom(r), Sessions: rows}, err)
}

// sessionView reads a session's state and, for a user who may read its
// conversation (mayRead), its latest events.
func (s *Server) sessionView(ctx context.Context, user, id string) (SessionView, error) {
	if id == "" {
		return SessionView{}, statusErr(http.StatusBadRequest, "id is required")
	}
	sum, err := s.sess.State(ctx, id)
	if err != nil {
		return SessionView{}, statusErr(http.StatusNotFound, "session %s: %w", id, err)
	}
	v := SessionView{ID: id, User: user, State: "running", Iterations: sum.Iterations, ToolCalls: sum.ToolCalls,
		Waiting: []WaitingCall{}, Events: []SessionEvent{}}
	if ss := sum.Session; ss != nil {
		v.Session, v.State, v.Turns, v.Paused, v.Queued, v.Steers = ss.Session, ss.State, ss.Turns, ss.Paused, ss.Queued, ss.Steers
	} else if sum.Done {
		v.State = "ended"
	}
	for _, p := range sum.Pending {
		v.Waiting = append(v.Waiting, WaitingCall{CallID: p.CallID, Tool: p.Tool, Kind: p.Kind})
	}
	if sum.Usage.Total() > 0 || sum.Usage.Cost != nil {
		v.Usage = sum.Usage.String()
	}
	if why := s.mayRead(user, id, sum.Pending); why != "" {
		v.Hidden = why
		return v, nil
	}
	page, err := s.sess.Events(ctx, id, 0)
	if err != nil {
		return v, statusErr(http.StatusNotFound, "session %s: %w", id, err)
	}
	for _, e := range page.Events {
		if sessionEvent(e) {
			v.Events = append(v.Events, SessionEvent{Event: e, Line: eventLine(e)})
		}
	}
	if n := len(v.Events); n > maxSessionEvents {
		v.Events = v.Events[n-maxSessionEvents:]
	}
	return v, nil
}

// mayRead says why user may not read the conversation of turn id ("":
// they may): as GET /conversation, a user whose roles are restricted
// reads only turns with a waiting call their roles cover.
func (s *Server) mayRead(user, id string, waiting []workflows.Pending) string {
	if !s.restricted(user) {
		return ""
	}
	for _, p := range waiting {
		if s.may(user, p.Tool, p.Input, nil, p.Workdir, p.Links) {
			return ""
		}
	}
	return "your roles cover no waiting call of " + id + ": its conversation is shown to unrestricted users"
}

func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	v, err := s.sessionView(r.Context(), userFrom(r), r.URL.Query().Get("id"))
	writeResult(w, v, err)
}

func (s *Server) handleSessionMessage(r *http.Request) (any, error) {
	var req SessionMessageRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	req.ID = strings.TrimSpace(req.ID)
	if req.ID == "" {
		return nil, statusErr(http.StatusBadRequest, "id is required")
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, statusErr(http.StatusBadRequest, "empty message: a message needs text")
	}
	switch req.Mode {
	case workflows.MessageQueue, workflows.MessageSteer, workflows.MessageInterrupt:
	default:
		return nil, statusErr(http.StatusBadRequest, "mode %q: want queue, steer or interrupt", req.Mode)
	}
	ack, err := s.sess.Send(r.Context(), req.ID, workflows.SessionMessage{Text: req.Text, Mode: req.Mode, By: userFrom(r)})
	if err != nil {
		return nil, s.refused(err)
	}
	return ack, nil
}

func (s *Server) handleSessionControl(r *http.Request) (any, error) {
	var req SessionControlRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	req.ID, req.Reason = strings.TrimSpace(req.ID), strings.TrimSpace(req.Reason)
	if req.ID == "" {
		return nil, statusErr(http.StatusBadRequest, "id is required")
	}
	switch req.Action {
	case workflows.ControlPause, workflows.ControlResume:
	case workflows.ControlCancel:
		if req.Reason == "" {
			return nil, statusErr(http.StatusBadRequest, "cancel needs a reason")
		}
	default:
		return nil, statusErr(http.StatusBadRequest, "action %q: want pause, resume or cancel", req.Action)
	}
	ack, err := s.sess.Control(r.Context(), req.ID, workflows.SessionControl{Action: req.Action, Reason: req.Reason, By: userFrom(r)})
	if err != nil {
		return nil, s.refused(err)
	}
	return ack, nil
}

// notSender is how the workflow's refusal of a sender begins its reason
// (workflows' maySend: `"bob" may not message ID: ...`).
const notSender = "may not message"

// refused turns the workflow's refusal of a message or control into a
// 4xx carrying the workflow's own reason: 403 for a sender it does not
// take (counted as unauthorized), 409 for one that does not apply now
// (not paused, already paused, ended). Other errors pass unchanged.
func (s *Server) refused(err error) error {
	reason := err
	var ae *temporal.ApplicationError
	if errors.Is(err, client.ErrRejected) && errors.As(err, &ae) && ae.Message() != "" {
		reason = errors.New(ae.Message())
	}
	switch {
	case errors.Is(err, client.ErrRejected) && strings.Contains(reason.Error(), notSender):
		s.unauthorized.Inc()
		return &httpError{status: http.StatusForbidden, err: reason}
	case errors.Is(err, client.ErrRejected), errors.Is(err, client.ErrEnded):
		return &httpError{status: http.StatusConflict, err: reason}
	}
	return err
}

// sessionsPage is what sessions.html shows.
type sessionsPage struct {
	Title   string
	User    string
	Groups  []sessionGroup
	Error   string
	Refresh int64
}

type sessionGroup struct {
	State string
	Rows  []client.SessionRow
}

// groupSessions orders rows by sessionStates, latest first within each.
func groupSessions(rows []client.SessionRow) []sessionGroup {
	var out []sessionGroup
	for _, st := range sessionStates() {
		g := sessionGroup{State: st}
		for _, r := range rows {
			if r.State == st {
				g.Rows = append(g.Rows, r)
			}
		}
		out = append(out, g)
	}
	return out
}

func (s *Server) handleSessionsPage(w http.ResponseWriter, r *http.Request) {
	d := sessionsPage{Title: s.cfg.Title, User: userFrom(r), Refresh: s.cfg.Refresh.Milliseconds()}
	rows, err := s.sessions(r.Context(), "")
	if err != nil {
		d.Error = err.Error()
	}
	d.Groups = groupSessions(rows)
	s.renderPage(w, "sessions.html", d)
}

// sessionPage is what session.html shows.
type sessionPage struct {
	Title   string
	User    string
	ID      string
	View    SessionView
	Items   []entryView
	Error   string
	Refresh int64
	Now     time.Time
}

func (s *Server) handleSessionPage(w http.ResponseWriter, r *http.Request) {
	user, id := userFrom(r), r.URL.Query().Get("id")
	d := sessionPage{Title: s.cfg.Title, User: user, ID: id, Refresh: s.cfg.Refresh.Milliseconds(), Now: time.Now()}
	v, err := s.sessionView(r.Context(), user, id)
	d.View = v
	if err == nil {
		// The session's waiting calls as the inbox lists them, to answer
		// here (the listing filters by prefix: keep this id's).
		var es []client.PendingEntry
		es, err = s.lister(r.Context(), query{Order: "oldest", Workflow: id, Limit: defaultLimit})
		for _, e := range es {
			if e.WorkflowID == id {
				d.Items = append(d.Items, s.view(user, e))
			}
		}
	}
	if err != nil {
		d.Error = err.Error()
	}
	s.renderPage(w, "session.html", d)
}

// renderPage executes the page template name with d.
func (s *Server) renderPage(w http.ResponseWriter, name string, d any) {
	var b bytes.Buffer
	if err := s.page.ExecuteTemplate(&b, name, d); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}
