// The answer core (Approve, Deny, AnswerBudget, Complete: the checks of
// the open entry, the approver's roles and always-allow rules before a
// decision is sent) and the HTTP handlers that call it (POST
// /api/approve, /api/deny, /api/budget, /api/answer, /api/bulk), with
// their request bodies. The core takes the user a channel authenticated,
// never a request: the inbox's endpoints, Slack's callbacks and any
// Channel call it alike.

package inbox

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// ApproveRequest is the body of POST /api/approve.
type ApproveRequest struct {
	WorkflowID string             `json:"workflow_id"`
	CallID     string             `json:"call_id"`
	Hash       string             `json:"hash"`
	Decision   workflows.Decision `json:"decision"`
	Rules      []string           `json:"rules,omitempty"`
	Input      json.RawMessage    `json:"input,omitempty"`
	// Reason says why it is allowed (a ticket); the turn's policy may
	// require one (workflows.Pending.ReasonRequired).
	Reason string `json:"reason,omitempty"`
	// Scope, TTL (a duration such as "24h") and SingleUse remember an
	// always_allow in the turn's policy store (workflows.Approval.Scope):
	// input, turn, agent or namespace. Empty: the turn only.
	Scope     workflows.RememberScope `json:"scope,omitempty"`
	TTL       string                  `json:"ttl,omitempty"`
	SingleUse bool                    `json:"single_use,omitempty"`
}

// DenyRequest is the body of POST /api/deny.
type DenyRequest struct {
	WorkflowID string `json:"workflow_id"`
	CallID     string `json:"call_id"`
	Hash       string `json:"hash"`
	Reason     string `json:"reason"`
}

// BudgetAnswerRequest is the body of POST /api/budget: the answer to a
// budget approval (workflows.PendingBudget), a raise that lets the turn
// go on or a deny that ends it.
type BudgetAnswerRequest struct {
	WorkflowID string `json:"workflow_id"`
	CallID     string `json:"call_id"`
	Hash       string `json:"hash"`
	// Decision is allow (with Raise) or deny.
	Decision workflows.Decision `json:"decision"`
	// Raise is what an allow adds to the budget, written as the CLI's
	// --raise: "cost=+2,tokens=+1M,tool_calls=+100,Bash=+50,time=+1h".
	Raise string `json:"raise,omitempty"`
	// Reason says why (a deny's reason ends the turn with it).
	Reason string `json:"reason,omitempty"`
}

// AnswerRequest is the body of POST /api/answer: AskUser answers, or a
// plain content for other external calls.
type AnswerRequest struct {
	WorkflowID string                        `json:"workflow_id"`
	CallID     string                        `json:"call_id"`
	Answers    []tools.AskUserQuestionAnswer `json:"answers,omitempty"`
	Content    string                        `json:"content,omitempty"`
	IsError    bool                          `json:"is_error,omitempty"`
	// Hash is the call's hash as the page showed it (default: as read
	// when the answer is sent).
	Hash string `json:"hash,omitempty"`
}

// BulkRequest is the body of POST /api/bulk.
type BulkRequest struct {
	Action string        `json:"action"` // allow or deny
	Reason string        `json:"reason,omitempty"`
	Items  []DenyRequest `json:"items"`
}

// BulkResult is one item's outcome in the answer to POST /api/bulk.
type BulkResult struct {
	WorkflowID string `json:"workflow_id"`
	CallID     string `json:"call_id"`
	OK         bool   `json:"ok"`
	Error      string `json:"error,omitempty"`
}

// authorize finds the open entry, checks that it is of one of kinds and
// checks user's roles against it (and against an edited input). A
// budget approval is checked as a call of the Budget tool. It is the
// check every channel of the inbox makes (its endpoints, Slack), and
// takes no request.
func (s *Server) authorize(ctx context.Context, user, wf, callID string, edited json.RawMessage, kinds ...workflows.PendingKind) (workflows.Pending, error) {
	if wf == "" || callID == "" {
		return workflows.Pending{}, statusErr(http.StatusBadRequest, "workflow_id and call_id are required")
	}
	ps, err := s.waiting(ctx, wf)
	if err != nil {
		return workflows.Pending{}, statusErr(http.StatusNotFound, "turn %s: %w", wf, err)
	}
	i := slices.IndexFunc(ps, func(p workflows.Pending) bool { return p.CallID == callID })
	if i < 0 {
		return workflows.Pending{}, statusErr(http.StatusNotFound, "turn %s has no open call %s", wf, callID)
	}
	p := ps[i]
	if !slices.Contains(kinds, p.Kind) {
		if p.Kind == workflows.PendingBudget {
			return p, statusErr(http.StatusBadRequest, "call %s is a budget approval: answer it with a raise or a deny (POST /api/budget)", callID)
		}
		return p, statusErr(http.StatusBadRequest, "call %s waits for %s, not %s", callID, p.Kind, kinds[0])
	}
	if !s.may(user, p.Tool, p.Input, edited, p.Workdir, p.Links) {
		s.unauthorized.Inc()
		return p, statusErr(http.StatusForbidden, "user %s may not answer this %s call", user, p.Tool)
	}
	return p, nil
}

func rejected(err error) error {
	if errors.Is(err, client.ErrRejected) || errors.Is(err, client.ErrNotRemembered) {
		return statusErr(http.StatusConflict, "%w", err)
	}
	return err
}

// Answerer is the answer core every channel calls with the user it
// authenticated its own way (a session or token for the inbox's pages
// and API, a signed callback mapped to inbox.users.NAME for Slack or a
// Channel). Each method finds the open entry, checks its kind, the
// user's roles over the call (and over an edited input or an
// always-allow's rules), the answer's own rules (a reason the policy
// requires, what may be remembered), then sends it to the turn, which
// checks it again against the approvers in force.
type Answerer interface {
	Approve(ctx context.Context, user string, req ApproveRequest) (workflows.Ack, error)
	Deny(ctx context.Context, user string, req DenyRequest) (workflows.Ack, error)
	AnswerBudget(ctx context.Context, user string, req BudgetAnswerRequest) (workflows.Ack, error)
	Complete(ctx context.Context, user string, req AnswerRequest) (workflows.Ack, error)
}

var _ Answerer = (*Server)(nil)

func (s *Server) handleApprove(r *http.Request) (any, error) {
	var req ApproveRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return s.Approve(r.Context(), userFrom(r), req)
}

// Approve allows a waiting call as user: once, or always (with rules or
// a remembered scope), possibly with an edited input.
func (s *Server) Approve(ctx context.Context, user string, req ApproveRequest) (workflows.Ack, error) {
	if req.Decision == "" {
		req.Decision = workflows.DecisionAllow
	}
	if req.Decision != workflows.DecisionAllow && req.Decision != workflows.DecisionAlwaysAllow {
		return workflows.Ack{}, statusErr(http.StatusBadRequest, "decision %q: want allow or always_allow", req.Decision)
	}
	if len(req.Input) > 0 && !json.Valid(req.Input) {
		return workflows.Ack{}, statusErr(http.StatusBadRequest, "edited input is not valid JSON")
	}
	ttl, err := rememberOptions(req)
	if err != nil {
		return workflows.Ack{}, err
	}
	p, err := s.authorize(ctx, user, req.WorkflowID, req.CallID, req.Input, workflows.PendingApproval)
	if err != nil {
		return workflows.Ack{}, err
	}
	rules := trimRules(req.Rules)
	// The input scope adds no rule: it remembers the exact call, which
	// authorize found the user may answer.
	if req.Decision == workflows.DecisionAlwaysAllow && req.Scope != workflows.ScopeInput {
		if err := s.mayAlwaysAllow(user, rules, p); err != nil {
			return workflows.Ack{}, err
		}
	}
	var input json.RawMessage
	if len(req.Input) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, req.Input); err != nil {
			return workflows.Ack{}, statusErr(http.StatusBadRequest, "edited input: %w", err)
		}
		input = b.Bytes()
	}
	a := workflows.Approval{
		CallID: req.CallID, Decision: req.Decision, Hash: req.Hash, Rules: rules, Input: input, By: user,
		Reason: strings.TrimSpace(req.Reason), Scope: req.Scope, TTL: ttl, SingleUse: req.SingleUse}
	if err := workflows.CheckAnswerable(p, a); err != nil {
		return workflows.Ack{}, statusErr(http.StatusBadRequest, "%w", err)
	}
	ack, err := s.cfg.Client.Approve(ctx, req.WorkflowID, a)
	if err != nil {
		return workflows.Ack{}, rejected(err)
	}
	return ack, nil
}

// trimRules returns the rules an approver typed, trimmed, without the
// empty ones.
func trimRules(in []string) []string {
	var rules []string
	for _, rl := range in {
		if rl = strings.TrimSpace(rl); rl != "" {
			rules = append(rules, rl)
		}
	}
	return rules
}

// mayAlwaysAllow checks an always-allow of p: it needs a rule (the typed
// rules, else p's suggestions), and no rule may be wider than the
// approver's roles.
func (s *Server) mayAlwaysAllow(user string, rules []string, p workflows.Pending) error {
	if len(rules) == 0 && len(p.Suggestions) == 0 {
		return statusErr(http.StatusBadRequest, "always allow needs a rule")
	}
	added := rules
	if len(added) == 0 {
		added = p.Suggestions
	}
	for _, rl := range added {
		if err := s.approvers.MayAddRule(s.roles, user, rl); err != nil {
			s.unauthorized.Inc()
			return statusErr(http.StatusForbidden, "user %s may not add this rule: %w", user, err)
		}
	}
	return nil
}

// rememberOptions checks the remembered-approval fields of req and
// returns its TTL.
func rememberOptions(req ApproveRequest) (time.Duration, error) {
	if req.Scope != "" && !req.Scope.Valid() {
		return 0, statusErr(http.StatusBadRequest, "scope %q: want input, turn, agent or namespace", req.Scope)
	}
	if req.Scope != "" && req.Decision != workflows.DecisionAlwaysAllow {
		return 0, statusErr(http.StatusBadRequest, "a scope remembers an always_allow")
	}
	if req.Scope == workflows.ScopeInput && len(trimRules(req.Rules)) > 0 {
		return 0, statusErr(http.StatusBadRequest, "the input scope remembers the exact input and takes no rules")
	}
	if req.Scope == "" && (req.TTL != "" || req.SingleUse) {
		return 0, statusErr(http.StatusBadRequest, "ttl and single_use need a scope")
	}
	if req.TTL == "" {
		return 0, nil
	}
	ttl, err := time.ParseDuration(req.TTL)
	if err != nil || ttl <= 0 {
		return 0, statusErr(http.StatusBadRequest, "ttl %q: want a positive duration such as 24h", req.TTL)
	}
	return ttl, nil
}

func (s *Server) handleDeny(r *http.Request) (any, error) {
	var req DenyRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return s.Deny(r.Context(), userFrom(r), req)
}

// Deny denies an approval, or a budget approval (which ends its turn),
// as user.
func (s *Server) Deny(ctx context.Context, user string, req DenyRequest) (workflows.Ack, error) {
	p, err := s.authorize(ctx, user, req.WorkflowID, req.CallID, nil, workflows.PendingApproval, workflows.PendingBudget)
	if err != nil {
		return workflows.Ack{}, err
	}
	a := workflows.Approval{
		CallID: req.CallID, Decision: workflows.DecisionDeny, Hash: req.Hash, Reason: strings.TrimSpace(req.Reason), By: user}
	if err := workflows.CheckAnswerable(p, a); err != nil {
		return workflows.Ack{}, statusErr(http.StatusBadRequest, "%w", err)
	}
	ack, err := s.cfg.Client.Approve(ctx, req.WorkflowID, a)
	return ack, rejected(err)
}

func (s *Server) handleBudget(r *http.Request) (any, error) {
	var req BudgetAnswerRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return s.AnswerBudget(r.Context(), userFrom(r), req)
}

// AnswerBudget answers a budget approval as user: an allow with the
// raise the approver typed, or a deny with a reason. The user's roles
// must cover the Budget tool (workflows.BudgetTool), as the turn checks
// again.
func (s *Server) AnswerBudget(ctx context.Context, user string, req BudgetAnswerRequest) (workflows.Ack, error) {
	a := workflows.Approval{CallID: req.CallID, Decision: req.Decision, Hash: req.Hash, By: user,
		Reason: strings.TrimSpace(req.Reason)}
	switch req.Decision {
	case workflows.DecisionAllow:
		if strings.TrimSpace(req.Raise) == "" {
			return workflows.Ack{}, statusErr(http.StatusBadRequest, "an allow of a budget approval needs a raise, such as cost=+2 or tokens=+1M")
		}
		raise, err := client.ParseBudget(req.Raise, true)
		if err != nil {
			return workflows.Ack{}, statusErr(http.StatusBadRequest, "raise: %w", err)
		}
		a.Raise = &raise
	case workflows.DecisionDeny:
		if req.Raise != "" {
			return workflows.Ack{}, statusErr(http.StatusBadRequest, "a deny raises nothing: leave out the raise")
		}
	default:
		return workflows.Ack{}, statusErr(http.StatusBadRequest, "decision %q: want allow (with a raise) or deny", req.Decision)
	}
	p, err := s.authorize(ctx, user, req.WorkflowID, req.CallID, nil, workflows.PendingBudget)
	if err != nil {
		return workflows.Ack{}, err
	}
	if err := workflows.CheckAnswerable(p, a); err != nil {
		return workflows.Ack{}, statusErr(http.StatusBadRequest, "%w", err)
	}
	ack, err := s.cfg.Client.Approve(ctx, req.WorkflowID, a)
	if err != nil {
		return workflows.Ack{}, rejected(err)
	}
	return ack, nil
}

func (s *Server) handleAnswer(r *http.Request) (any, error) {
	var req AnswerRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return s.Complete(r.Context(), userFrom(r), req)
}

// Complete answers an external call as user: an AskUser call with its
// answers (checked against its questions), any other with its content.
func (s *Server) Complete(ctx context.Context, user string, req AnswerRequest) (workflows.Ack, error) {
	p, err := s.authorize(ctx, user, req.WorkflowID, req.CallID, nil, workflows.PendingExternal)
	if err != nil {
		return workflows.Ack{}, err
	}
	res := workflows.ExternalResult{CallID: req.CallID, Content: req.Content, IsError: req.IsError, By: user}
	if p.Tool == "AskUser" {
		ans := tools.AskUserAnswer{Answers: req.Answers}
		if err := tools.ValidateAskUserAnswer(p.Input, ans); err != nil {
			return workflows.Ack{}, statusErr(http.StatusBadRequest, "%w", err)
		}
		var err error
		if res, err = client.AskUserResult(req.CallID, ans, user); err != nil {
			return workflows.Ack{}, err
		}
	}
	res.Hash = cmp.Or(req.Hash, p.Hash)
	ack, err := s.cfg.Client.CompleteExternal(ctx, req.WorkflowID, res)
	if err != nil {
		return workflows.Ack{}, rejected(err)
	}
	return ack, nil
}

func (s *Server) handleBulk(r *http.Request) (any, error) {
	var req BulkRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.Action != "allow" && req.Action != "deny" {
		return nil, statusErr(http.StatusBadRequest, "action %q: want allow or deny", req.Action)
	}
	ctx, user := r.Context(), userFrom(r)
	out := make([]BulkResult, 0, len(req.Items))
	for _, it := range req.Items {
		var err error
		if req.Action == "deny" {
			it.Reason = req.Reason
			_, err = s.Deny(ctx, user, it)
		} else {
			_, err = s.Approve(ctx, user, ApproveRequest{WorkflowID: it.WorkflowID, CallID: it.CallID, Hash: it.Hash,
				Decision: workflows.DecisionAllow, Reason: req.Reason})
		}
		res := BulkResult{WorkflowID: it.WorkflowID, CallID: it.CallID, OK: err == nil}
		if err != nil {
			res.Error = err.Error()
			s.refusals.WithLabelValues("inbox").Inc()
		}
		out = append(out, res)
	}
	return map[string]any{"results": out}, nil
}
