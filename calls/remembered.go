package calls

import (
	"encoding/json"
	"time"
)

// RememberScope is where a remembered approval applies.
type RememberScope string

// The scopes of a remembered approval.
const (
	// ScopeInput: exactly this tool and input, in any turn that follows
	// the store.
	ScopeInput RememberScope = "input"
	// ScopeTurn: the rule, in this turn only (all its runs).
	ScopeTurn RememberScope = "turn"
	// ScopeAgent: the rule, in turns of this agent (Remembered.Agent: a
	// turn label, or a workflow-id prefix).
	ScopeAgent RememberScope = "agent"
	// ScopeNamespace: the rule, in every turn that follows the store.
	ScopeNamespace RememberScope = "namespace"
)

// Valid reports whether s is one of the scopes.
func (s RememberScope) Valid() bool {
	switch s {
	case ScopeInput, ScopeTurn, ScopeAgent, ScopeNamespace:
		return true
	}
	return false
}

// Remembered is a remembered approval: an always_allow answer kept in
// the policy store. It is derived from the approved call: an exact
// input (ScopeInput) or a rule that covers the call and is no wider than
// the call's own suggested rules, nor than the approver's roles.
type Remembered struct {
	// ID is assigned by the store ("r1", "r2", ...).
	ID    string        `json:"id"`
	Scope RememberScope `json:"scope"`
	Tool  string        `json:"tool"`
	// Rule is the allow rule ("Bash(npm test:*)") of the turn, agent and
	// namespace scopes; Input the exact input of ScopeInput.
	Rule  string          `json:"rule,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// WorkflowID is the turn of ScopeTurn; Agent the label or prefix of
	// ScopeAgent.
	WorkflowID string `json:"workflow_id,omitempty"`
	Agent      string `json:"agent,omitempty"`
	// By approved it (Via: the key the answer came with), in the turn
	// FromWorkflow answering its call CallID.
	By           string    `json:"by"`
	Via          string    `json:"via,omitempty"`
	FromWorkflow string    `json:"from_workflow"`
	CallID       string    `json:"call_id"`
	CreatedAt    time.Time `json:"created_at"`
	// ExpiresAt ends it (zero: no TTL); SingleUse ends it after the
	// first call it allows (UsedBy: that call, workflow id/call id).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	SingleUse bool      `json:"single_use,omitempty"`
	UsedBy    string    `json:"used_by,omitempty"`
	// RevokedBy names who revoked it (RevokedAt when).
	RevokedBy string    `json:"revoked_by,omitempty"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// What is the rule r remembers, or "exact INPUT" for the input scope.
func (r Remembered) What() string {
	if r.Rule == "" {
		return "exact " + string(r.Input)
	}
	return r.Rule
}

// Active reports whether the remembered approval may still allow calls
// at now (key: the call asking, workflow id/call id, which may reuse a
// single-use approval it already spent).
func (r Remembered) Active(now time.Time, key string) bool {
	if !r.RevokedAt.IsZero() || (!r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)) {
		return false
	}
	return !r.SingleUse || r.UsedBy == "" || r.UsedBy == key
}

// Status is "active", "expired", "used" or "revoked" at now.
func (r Remembered) Status(now time.Time) string {
	switch {
	case !r.RevokedAt.IsZero():
		return "revoked"
	case !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt):
		return "expired"
	case r.SingleUse && r.UsedBy != "":
		return "used"
	}
	return "active"
}

// Applies reports whether the approval's scope covers a call of the turn
// workflowID (labelled agent).
func (r Remembered) Applies(workflowID, agent string) bool {
	switch r.Scope {
	case ScopeInput, ScopeNamespace:
		return true
	case ScopeTurn:
		return r.WorkflowID == workflowID
	case ScopeAgent:
		return r.Agent != "" && (r.Agent == agent || (len(workflowID) >= len(r.Agent) && workflowID[:len(r.Agent)] == r.Agent))
	}
	return false
}
