package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/wardenhq/warden/workflows"
)

// Approve answers a pending ASK with an Update: the workflow validates it
// (unknown or answered call, a missing or stale hash, bad rule, an
// approver whose roles do not cover the call) and the error comes back to
// the caller. a.Hash must be the hash of the entry as listed (Pending,
// PendingCall, ListPending): it binds the answer to the exact call and
// policy version the approver saw. ApproveListed sets it from an entry.
//
// An always_allow with a scope remembers beyond the turn: the turn's
// policy store is made first when missing, and an answer whose
// remembered approvals could not be stored comes back with an error
// wrapping ErrNotRemembered (the call itself was allowed).
func (cl *Client) Approve(ctx context.Context, workflowID string, a workflows.Approval) (workflows.Ack, error) {
	cl.sign(&a.By, &a.Via)
	if err := cl.storeFor(ctx, workflowID, a); err != nil {
		return workflows.Ack{}, err
	}
	ack, err := update[workflows.Ack](ctx, cl, workflowID, workflows.UpdateApprove, a)
	if err == nil && ack.NotRemembered != "" {
		err = fmt.Errorf("%s was allowed once, but %w: %s", a.CallID, ErrNotRemembered, ack.NotRemembered)
	}
	return ack, err
}

// ErrNotRemembered wraps the error of an always_allow with a scope whose
// remembered approvals the policy store did not take.
var ErrNotRemembered = errors.New("nothing was remembered")

// storeFor makes the policy store the turn follows, for an always_allow
// with a scope (which the turn sends there), when it is missing. A turn
// that follows no store refuses such an answer itself.
func (cl *Client) storeFor(ctx context.Context, workflowID string, a workflows.Approval) error {
	if a.Decision != workflows.DecisionAlwaysAllow || a.Scope == "" {
		return nil
	}
	st, err := cl.State(ctx, workflowID)
	if err != nil {
		return fmt.Errorf("reading the turn's policy store before remembering: %w", err)
	}
	if st.LivePolicy == "" {
		return nil
	}
	if _, err := cl.StartPolicyStore(ctx, st.LivePolicy); err != nil {
		return fmt.Errorf("remembering needs the policy store: %w", err)
	}
	return nil
}

// ApproveListed answers the listed entry p with an Update, bound to it:
// a.CallID and a.Hash are taken from p, so the answer is refused if the
// call or the policy changed since p was read.
func (cl *Client) ApproveListed(ctx context.Context, workflowID string, p workflows.Pending, a workflows.Approval) (workflows.Ack, error) {
	a.CallID, a.Hash = p.CallID, p.Hash
	return cl.Approve(ctx, workflowID, a)
}

// ApproveSignal answers a pending ASK with a signal, which the server
// accepts even while no worker runs; the workflow validates it later and
// records a rejection as an event.
func (cl *Client) ApproveSignal(ctx context.Context, workflowID string, a workflows.Approval) error {
	cl.sign(&a.By, &a.Via)
	if err := cl.storeFor(ctx, workflowID, a); err != nil {
		return err
	}
	return Explain(cl.c.SignalWorkflow(ctx, workflowID, "", workflows.SignalApprove, a))
}

// CompleteExternal delivers an external tool's result (or an AskUser
// answer) with an Update. r.Hash must be the listed hash of the call
// (Pending.Hash), as for Approve.
func (cl *Client) CompleteExternal(ctx context.Context, workflowID string, r workflows.ExternalResult) (workflows.Ack, error) {
	cl.sign(&r.By, &r.Via)
	return update[workflows.Ack](ctx, cl, workflowID, workflows.UpdateExternalResult, r)
}
