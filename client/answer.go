package client

import (
	"context"
	"fmt"

	"github.com/wardenhq/warden/workflows"
)

// Target is one waiting call an answer goes to, as read for answering.
// Err is set when the call could not be read; the answer is not sent.
type Target struct {
	WorkflowID string
	Pending    workflows.Pending
	Err        error
}

// Selection names the calls an answer goes to: one call (WorkflowID and
// CallID, with the Hash the approver listed, or the hash as read now),
// or with All every pending approval that Filter selects.
type Selection struct {
	All                bool
	Filter             Filter
	WorkflowID, CallID string
	Hash               string
	// FullInput reads the whole input of entries the index keeps only a
	// preview of (a role check needs it).
	FullInput bool
}

// Targets reads the calls s names. Each carries the hash it was read
// with: an answer sent with it is refused if the call or the policy
// changed since.
func (cl *Client) Targets(ctx context.Context, s Selection) ([]Target, error) {
	if s.All {
		f := s.Filter
		f.Kind = workflows.PendingApproval
		entries, err := cl.ListPending(ctx, f)
		if err != nil {
			return nil, err
		}
		out := make([]Target, 0, len(entries))
		for _, e := range entries {
			t := Target{WorkflowID: e.WorkflowID, Pending: e.Pending}
			if e.Truncated && s.FullInput {
				t.Pending, t.Err = cl.PendingCall(ctx, e.WorkflowID, e.CallID)
				t.Pending.CallID = e.CallID
			}
			out = append(out, t)
		}
		return out, nil
	}
	p, err := cl.PendingCall(ctx, s.WorkflowID, s.CallID)
	if err != nil {
		err = fmt.Errorf("reading the call's hash: %w (list again, or pass the hash as listed)", err)
	}
	if s.Hash != "" {
		// The hash the approver read in the listing: with it, a signal
		// needs no worker to read the call, unless its input is needed.
		p = workflows.Pending{CallID: s.CallID, Hash: s.Hash, Tool: p.Tool, Input: p.Input}
		if err != nil && !s.FullInput {
			err = nil
		}
	}
	p.CallID = s.CallID
	return []Target{{WorkflowID: s.WorkflowID, Pending: p, Err: err}}, nil
}

// Answered is the outcome of one answer of AnswerAll.
type Answered struct {
	Target
	// Err is why the answer was not sent or was refused (nil: accepted).
	Err error
	// Status is the workflow's acknowledgement of an Update ("allow", or
	// "allow (1 of 2 approvals)" while a quorum is short); empty for a
	// signal.
	Status string
	// Signaled says the answer went by signal: the server took it, but
	// the turn checks it only when a worker runs it, and records a
	// refusal as a rejected event, so a nil Err does not say it was
	// accepted.
	Signaled bool
}

// AnswerAll sends a to every target, each with the target's call id and
// hash, by Update (or by signal, which the server accepts while no worker
// runs). allowed, when not nil, is checked first: a call it refuses is
// not answered.
func (cl *Client) AnswerAll(ctx context.Context, targets []Target, a workflows.Approval, signal bool,
	allowed func(by string, p workflows.Pending) error) []Answered {
	out := make([]Answered, 0, len(targets))
	for _, t := range targets {
		a.CallID, a.Hash = t.Pending.CallID, t.Pending.Hash
		err := t.Err
		if err == nil {
			err = workflows.CheckAnswerable(t.Pending, a)
		}
		if err == nil && allowed != nil {
			err = allowed(a.By, t.Pending)
		}
		var status string
		if err == nil {
			if signal {
				err = cl.ApproveSignal(ctx, t.WorkflowID, a)
			} else {
				var ack workflows.Ack
				ack, err = cl.Approve(ctx, t.WorkflowID, a)
				status = ack.Status
			}
		}
		out = append(out, Answered{Target: t, Err: err, Status: status, Signaled: signal && err == nil})
	}
	return out
}
