package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/slack-go/slack"

	"github.com/wardenhq/warden/chat"
	"github.com/wardenhq/warden/workflows"
)

// slackPath is where Slack posts button clicks (the app's
// interactivity request URL).
const slackPath = "/slack/interactivity"

// handleSlack answers a call from a Slack button (a budget approval
// from its raise or deny button). The request must carry
// Slack's v0 signature of its raw body within the 5-minute window and
// not have been seen before; the clicking Slack user must map to an
// inbox user (inbox.users.NAME.slack) whose roles cover the call. An
// allow for a call that needs step-up (chat.StepUp) is refused. The
// answer goes through the same checks as the inbox's own (authorize) and
// names the user, with "from Slack" in its reason. Refusals of a signed
// request are ephemeral messages to the user (response_url); nothing is
// answered.
func (s *Server) handleSlack(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	now := time.Now()
	if err := chat.Verify(s.cfg.SlackSecret, r.Header, body, now); err != nil {
		s.unauthorized.Inc()
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	if !s.slackFirst(r.Header.Get(chat.HeaderSignature), now) {
		s.unauthorized.Inc()
		http.Error(w, "replayed slack request", http.StatusUnauthorized)
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil || len(cb.ActionCallback.BlockActions) == 0 {
		http.Error(w, "no block action in the payload", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
	act := cb.ActionCallback.BlockActions[0]
	if act.ActionID == chat.ActionOpen {
		return // a link: Slack opens it
	}
	msg, ok := s.slackAnswer(r.Context(), cb.User.ID, act, chat.Reason(cb), cb.ResponseURL)
	if !ok {
		s.refusals.WithLabelValues("slack").Inc()
	}
	s.slackReply(r.Context(), cb.ResponseURL, msg)
}

// slackAnswer applies a click and says what happened, for the user. A
// click on a message whose call was decided again since it was posted
// (a policy change re-hashed it) answers nothing and replaces the
// message, through responseURL, with the call as it is now, whose
// buttons carry the new hash. It reports whether the answer was taken
// (false: refused).
func (s *Server) slackAnswer(ctx context.Context, slackID string, act *slack.BlockAction, reason, responseURL string) (string, bool) {
	user, ok := s.User("slack", slackID)
	if !ok {
		s.unauthorized.Inc()
		return "You are not a warden approver: ask an admin to set inbox.users.NAME.slack to your member id. Nothing was answered.", false
	}
	wf, callID, hash, err := chat.ParseValue(act.Value)
	if err != nil {
		return "Refused: " + err.Error(), false
	}
	p, err := s.authorize(ctx, user, wf, callID, nil, workflows.PendingApproval, workflows.PendingBudget)
	if err != nil {
		return "Refused: " + err.Error() + ". Nothing was answered.", false
	}
	if p.Hash != hash {
		s.slackRefresh(ctx, responseURL, wf, p)
		return "Refused: this call was decided again since the message was posted (the policy changed); the message now shows it as it is: check it and click again. Nothing was answered.", false
	}
	if p.ReasonRequired && reason == "" {
		return "Refused: this call needs a reason: type it in the message's Reason field, then click again. Nothing was answered.", false
	}
	// The reason says it came from Slack; the person's own words follow.
	from := "from Slack"
	if reason != "" {
		from += ": " + reason
	}
	var (
		ack    workflows.Ack
		raised string
	)
	// The answer goes through the core, as the inbox's own endpoints do.
	switch act.ActionID {
	case chat.ActionAllow:
		if p.Kind == workflows.PendingBudget {
			return "Refused: " + callID + " is a budget approval: raise or deny it. Nothing was answered.", false
		}
		if why := chat.StepUp(p, s.cfg.SlackStepUp); why != "" {
			s.unauthorized.Inc()
			return "Refused: this call needs review in the inbox (" + why + "). Nothing was answered.", false
		}
		ack, err = s.Approve(ctx, user, ApproveRequest{WorkflowID: wf, CallID: callID, Hash: hash, Decision: workflows.DecisionAllow, Reason: from})
	case chat.ActionRaise:
		// The raise is the one the message states, read again from the
		// entry: a click cannot name another amount.
		raise, ok := chat.LimitAgain(p)
		if !ok {
			return "Refused: " + callID + " offers no raise from Slack: raise it in the inbox. Nothing was answered.", false
		}
		if why := chat.StepUp(p, s.cfg.SlackStepUp); why != "" {
			s.unauthorized.Inc()
			return "Refused: this budget approval needs review in the inbox (" + why + "). Nothing was answered.", false
		}
		raised = ", raising the budget by " + chat.RaiseText(raise)
		ack, err = s.AnswerBudget(ctx, user, BudgetAnswerRequest{WorkflowID: wf, CallID: callID, Hash: hash,
			Decision: workflows.DecisionAllow, Raise: raise.RaiseText(), Reason: from})
	case chat.ActionDeny:
		if reason == "" {
			from = "denied from Slack"
		}
		ack, err = s.Deny(ctx, user, DenyRequest{WorkflowID: wf, CallID: callID, Hash: hash, Reason: from})
	default:
		return "Refused: unknown action " + act.ActionID, false
	}
	if err != nil {
		return "Refused: " + err.Error(), false
	}
	// The status says how many of a two-person rule's approvers have
	// allowed ("allow (1 of 2 approvals)").
	return ack.Status + " recorded for " + p.Tool + " " + callID + " as " + user + raised + ".", true
}

// slackRefresh replaces the message a click came from (its
// response_url) with the waiting call p as it is now.
func (s *Server) slackRefresh(ctx context.Context, responseURL, wf string, p workflows.Pending) {
	blocks := chat.Blocks(wf, p, chat.InboxLink(s.cfg.PublicURL, wf, p.CallID), chat.StepUp(p, s.cfg.SlackStepUp))
	s.slackPostJSON(ctx, responseURL, map[string]any{"replace_original": true, "text": p.Tool + " waits for an approval in " + wf, "blocks": blocks})
}

// slackReply posts an ephemeral message to a response_url.
func (s *Server) slackReply(ctx context.Context, responseURL, text string) {
	s.slackPostJSON(ctx, responseURL, map[string]any{"response_type": "ephemeral", "replace_original": false, "text": text})
}

// slackPostJSON posts m to a response_url ("": none, nothing sent).
func (s *Server) slackPostJSON(ctx context.Context, responseURL string, m map[string]any) {
	if responseURL == "" {
		return
	}
	b, _ := json.Marshal(m)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(b))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{Timeout: 10 * time.Second}
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

// slackFirst records a callback's signature and reports whether it is
// new within the window.
func (s *Server) slackFirst(sig string, now time.Time) bool {
	s.slackMu.Lock()
	defer s.slackMu.Unlock()
	for k, at := range s.slackSeen {
		if now.Sub(at) > 2*chat.Window {
			delete(s.slackSeen, k)
		}
	}
	if _, seen := s.slackSeen[sig]; seen {
		return false
	}
	s.slackSeen[sig] = now
	return true
}
