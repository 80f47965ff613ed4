package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// Redecision is a waiting call decided again after a policy change, as
// the turn records it in history (a side effect): the store versions
// before and after, and the new verdict.
type Redecision struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// From and To are the policy store versions the call was decided
	// under before and now.
	From     int                 `json:"from"`
	To       int                 `json:"to"`
	Behavior permission.Behavior `json:"behavior"`
	Reason   string              `json:"reason,omitempty"`
	// Layer is the layer that decided (Prepared.Layer; empty in
	// re-decisions recorded before it was).
	Layer permission.Layer `json:"layer,omitempty"`
	// Message is a denial's message (what the model reads).
	Message string `json:"message,omitempty"`
	// Remembered names the remembered approval that allowed it.
	Remembered string `json:"remembered,omitempty"`
}

// policyChanged handles a SignalPolicyChanged: a turn that follows the
// store and has calls waiting re-decides them (the wait's recheck).
func (t *turn) policyChanged(ctx workflow.Context, n PolicyNotice) {
	if t.in.LivePolicy == "" || n.Store != t.in.LivePolicy || n.Version <= t.LiveVersion {
		return
	}
	if workflow.GetVersion(ctx, versionLivePolicy, workflow.DefaultVersion, 1) < 1 {
		return
	}
	t.LiveVersion = n.Version
	t.adoptTeam(ctx, Prepared{Team: n.Team, TeamVersion: n.TeamVersion})
	if n.TeamOnly || len(t.open()) == 0 {
		return
	}
	t.policyBumped()
}

// adoptTeam takes the policy store's team a verdict was decided with
// when it is newer than the one the turn knows.
func (t *turn) adoptTeam(ctx workflow.Context, p Prepared) {
	if p.TeamVersion <= t.TeamVersion {
		return
	}
	t.Team, t.TeamVersion = p.Team, p.TeamVersion
	t.emit(ctx, Event{Type: EventDecision, Text: fmt.Sprintf("approvers (team v%d of %s): %s", p.TeamVersion, t.in.LivePolicy, TeamText(p.Team))})
}

// approvers are the approvers an answer is checked against now: the
// team the policy store last told the turn of, else the turn's own.
func (t *turn) approvers() *Approvers {
	if t.TeamVersion > 0 {
		return t.Team
	}
	return t.in.Approvers
}

// TeamText names a team's users and their roles ("anyone may answer"
// for none).
func TeamText(a *Approvers) string {
	if !a.Enabled() {
		return "anyone may answer"
	}
	var parts []string
	for _, u := range sortedKeys(a.Users) {
		if rs := a.Users[u]; len(rs) > 0 {
			parts = append(parts, u+" ("+strings.Join(rs, ", ")+")")
		} else {
			parts = append(parts, u)
		}
	}
	return strings.Join(parts, ", ")
}

// redecide applies the new verdicts of the waiting calls (preps, one per
// call): a call now allowed runs, a call now denied gets the reason, the
// rest keep waiting (their hashes changed with the policy version) with
// the new verdict's reason. Every re-decision is recorded with both
// versions.
func (t *turn) redecide(ctx workflow.Context, calls []model.ToolCall, preps []Prepared) error {
	var recs []Redecision
	for i, p := range preps {
		if p.Invalid != "" {
			continue
		}
		j := t.pendingIndex(calls[i].ID)
		if j < 0 {
			continue
		}
		rec := Redecision{CallID: calls[i].ID, Tool: calls[i].Name, From: t.pending[j].LiveVersion, To: p.PolicyVersion,
			Behavior: p.Decision.Behavior, Reason: p.Decision.Reason, Layer: p.Layer, Message: p.Decision.Message}
		if p.Remembered != nil {
			rec.Remembered = p.Remembered.ID
		}
		recs = append(recs, rec)
	}
	var recorded []Redecision
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return recs }).Get(&recorded); err != nil {
		return fmt.Errorf("record re-decisions: %w", err)
	}
	for _, r := range recorded {
		j := t.pendingIndex(r.CallID)
		if j < 0 {
			continue
		}
		text := fmt.Sprintf("policy v%d → v%d: %s: %s", r.From, r.To, r.Behavior, r.Reason)
		switch r.Behavior {
		case permission.Allow:
			t.answers[r.CallID] = AnswerState{CallID: r.CallID, Auto: r.Reason}
			t.emit(ctx, Event{Type: EventAnswered, CallID: r.CallID, Tool: r.Tool, Text: text})
			t.notifyAnswered(ctx, t.pending[j], AnswerNote{By: "policy", Via: fmt.Sprintf("policy v%d", r.To), Decision: string(DecisionAllow), Reason: r.Reason})
		case permission.Deny:
			reason := r.Message
			if reason == "" {
				reason = r.Reason
			}
			t.answers[r.CallID] = AnswerState{CallID: r.CallID, Denied: fmt.Sprintf("%s (policy v%d)", reason, r.To)}
			t.emit(ctx, Event{Type: EventAnswered, CallID: r.CallID, Tool: r.Tool, Text: text})
			t.notifyAnswered(ctx, t.pending[j], AnswerNote{By: "policy", Via: fmt.Sprintf("policy v%d", r.To), Decision: string(DecisionDeny), Reason: reason})
		default:
			t.pending[j].LiveVersion = r.To
			t.pending[j].Reason = r.Reason
			t.emit(ctx, Event{Type: EventDecision, CallID: r.CallID, Tool: r.Tool, Text: text + " (still waiting)"})
		}
	}
	return nil
}

func (t *turn) pendingIndex(callID string) int {
	for i, p := range t.pending {
		if p.CallID == callID {
			return i
		}
	}
	return -1
}

// checkRemember checks an always_allow with a scope: the turn follows a
// store, and what would be remembered is derived from the approved call
// and never wider than it. The input scope remembers the exact input;
// the others remember rules (the call's suggestions by default), each of
// the call's tool, covering the call, and within one of the call's
// suggested rules (Bash(npm run:*) for npm run build, never Bash or
// Bash(npm:*)). The approver's roles bound the rules too (checked with
// the other rules of an always_allow).
func (t *turn) checkRemember(p Pending, a Approval) error {
	if a.Decision != DecisionAlwaysAllow {
		return fmt.Errorf("a scope goes with always_allow, not %s", a.Decision)
	}
	if t.in.LivePolicy == "" {
		return errors.New("this turn follows no policy store (TurnInput.LivePolicy): nothing can be remembered beyond it")
	}
	if len(a.Input) > 0 && string(a.Input) != string(p.Input) {
		return errors.New("an edited input cannot be remembered: approve the edit with allow")
	}
	if a.TTL < 0 {
		return errors.New("negative ttl")
	}
	if a.Scope == ScopeInput {
		if len(a.Rules) > 0 {
			return errors.New("the input scope remembers the exact input and takes no rules")
		}
		return nil
	}
	if err := t.checkRuleScope(a); err != nil {
		return err
	}
	return t.checkRememberedRules(p, a)
}

// checkRuleScope checks the scope of an always_allow that remembers
// rules: turn and namespace, or an agent that is the turn's label or a
// prefix of its workflow id.
func (t *turn) checkRuleScope(a Approval) error {
	switch a.Scope {
	case ScopeTurn, ScopeNamespace:
	case ScopeAgent:
		agent := a.Agent
		if agent == "" {
			agent = t.in.Agent
		}
		if agent == "" {
			return errors.New("the agent scope needs an agent: the turn's label or a prefix of its workflow id")
		}
		if agent != t.in.Agent && (len(t.wfid) < len(agent) || t.wfid[:len(agent)] != agent) {
			return fmt.Errorf("agent %q is neither this turn's label nor a prefix of its workflow id", agent)
		}
	default:
		return fmt.Errorf("unknown scope %q (want input, turn, agent or namespace)", a.Scope)
	}
	return nil
}

// checkRememberedRules checks the rules an always_allow would remember
// (its own, else the call's suggestions): each is a rule of the call's
// tool, covers the call and is within one of its suggested rules.
func (t *turn) checkRememberedRules(p Pending, a Approval) error {
	var sugg []permission.Rule
	for _, s := range p.Suggestions {
		if r, err := permission.ParseRule(s, permission.Allow); err == nil {
			sugg = append(sugg, r)
		}
	}
	rules := a.Rules
	if len(rules) == 0 {
		rules = p.Suggestions
	}
	if len(rules) == 0 {
		return errors.New("the call has no suggested rules: remember it with the input scope")
	}
	if t.roles == nil {
		return errNoRoleChecker
	}
	for _, s := range rules {
		r, err := permission.ParseRule(s, permission.Allow)
		if err != nil {
			return fmt.Errorf("rule %q: %w", s, err)
		}
		if r.Tool != p.Tool {
			return fmt.Errorf("rule %s is not a rule of the approved %s call", r, p.Tool)
		}
		if !WithLinks(t.roles, p.Links).RulesCover([]permission.Rule{r}, p.Tool, p.Input, p.Workdir) {
			return fmt.Errorf("rule %s does not cover the approved call", r)
		}
		if !t.roles.RuleWithin(r, sugg) {
			return fmt.Errorf("rule %s is wider than the approved call (its suggested rules: %v)", r, p.Suggestions)
		}
	}
	return nil
}

// remember sends the remembered approvals of a (checked) to the turn's
// policy store, then decides the turn's other waiting calls again.
func (t *turn) remember(ctx workflow.Context, a Approval) {
	p, _ := t.findPending(a.CallID)
	now := workflow.Now(ctx)
	base := Remembered{Scope: a.Scope, Tool: p.Tool, By: a.By, Via: a.Via, FromWorkflow: t.wfid, CallID: a.CallID,
		CreatedAt: now, SingleUse: a.SingleUse}
	if a.TTL > 0 {
		base.ExpiresAt = now.Add(a.TTL)
	}
	switch a.Scope {
	case ScopeTurn:
		base.WorkflowID = t.wfid
	case ScopeAgent:
		base.Agent = a.Agent
		if base.Agent == "" {
			base.Agent = t.in.Agent
		}
	}
	var recs []Remembered
	if a.Scope == ScopeInput {
		r := base
		r.Input = p.Input
		recs = append(recs, r)
	} else {
		rules := a.Rules
		if len(rules) == 0 {
			rules = p.Suggestions
		}
		for _, s := range rules {
			rule, err := permission.ParseRule(s, permission.Allow)
			if err != nil {
				continue // checked already
			}
			r := base
			r.Rule = rule.String()
			recs = append(recs, r)
		}
	}
	for _, r := range recs {
		what := r.Rule
		if what == "" {
			what = "this exact input"
		}
		err := workflow.SignalExternalWorkflow(ctx, t.in.LivePolicy, "", SignalRemember, r).Get(ctx, nil)
		if err != nil {
			msg := "could not remember " + what + " in " + t.in.LivePolicy + ": " + err.Error()
			t.emit(ctx, Event{Type: EventRejected, CallID: a.CallID, Tool: p.Tool, Error: true, Text: msg})
			if t.unremembered == nil {
				t.unremembered = map[string]string{}
			}
			if prev := t.unremembered[a.CallID]; prev != "" {
				msg = prev + "; " + msg
			}
			t.unremembered[a.CallID] = msg
			continue
		}
		t.emit(ctx, Event{Type: EventDecision, CallID: a.CallID, Tool: p.Tool,
			Text: fmt.Sprintf("remembered (%s scope) by %s in %s: %s", r.Scope, r.By, t.in.LivePolicy, what)})
	}
	t.policyBumped()
}
