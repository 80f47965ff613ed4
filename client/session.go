package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/wardenhq/warden/workflows"
)

// StartSession starts a session: a turn whose workflow stays open when
// it answers and takes the next message as its next turn (see
// workflows.TurnInput.Session).
func (cl *Client) StartSession(ctx context.Context, id string, in workflows.TurnInput) (tclient.WorkflowRun, error) {
	in.Session = true
	return cl.Start(ctx, id, in)
}

// Send sends a message to a running turn or session with an Update: the
// workflow checks it (mode, sender, a turn that still runs) and says
// where it went. By and Via default to the client's key, as for answers.
func (cl *Client) Send(ctx context.Context, workflowID string, m workflows.SessionMessage) (workflows.SessionAck, error) {
	cl.sign(&m.By, &m.Via)
	ack, err := update[workflows.SessionAck](ctx, cl, workflowID, workflows.UpdateMessage, m)
	return ack, ended(workflowID, err)
}

// Control pauses, resumes or cancels a running turn or session.
func (cl *Client) Control(ctx context.Context, workflowID string, c workflows.SessionControl) (workflows.SessionAck, error) {
	cl.sign(&c.By, &c.Via)
	ack, err := update[workflows.SessionAck](ctx, cl, workflowID, workflows.UpdateControl, c)
	return ack, ended(workflowID, err)
}

// ErrEnded wraps the error of a message to a turn or session whose
// workflow has closed.
var ErrEnded = errors.New("it has ended")

// ended names a closed workflow in a message's error.
func ended(workflowID string, err error) error {
	var nf *serviceerror.NotFound
	if err != nil && errors.As(err, &nf) {
		return fmt.Errorf("%s takes no messages: %w (%w)", workflowID, ErrEnded, err)
	}
	return err
}

// SessionRow is one session of a listing.
type SessionRow struct {
	WorkflowID string    `json:"workflow_id"`
	State      string    `json:"state"`
	Started    time.Time `json:"started"`
	Status     string    `json:"status"`
}

// ListSessions lists sessions, latest first: those in state (running,
// waiting, paused, idle, ended), or all when state is empty.
func (cl *Client) ListSessions(ctx context.Context, state string) ([]SessionRow, error) {
	q := fmt.Sprintf("WorkflowType = '%s' AND %s IS NOT NULL", workflows.TurnWorkflow, workflows.SASessionState)
	if state != "" {
		q = fmt.Sprintf("WorkflowType = '%s' AND %s = '%s'", workflows.TurnWorkflow, workflows.SASessionState, quoteless(state))
	}
	var out []SessionRow
	var token []byte
	for {
		resp, err := cl.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", cl.explainListing(err))
		}
		for _, ex := range resp.GetExecutions() {
			row := SessionRow{WorkflowID: ex.GetExecution().GetWorkflowId(), Started: ex.GetStartTime().AsTime(),
				Status: ex.GetStatus().String()}
			if f := ex.GetSearchAttributes().GetIndexedFields()[workflows.SASessionState]; f != nil {
				var st string
				if err := converter.GetDefaultDataConverter().FromPayload(f, &st); err == nil {
					row.State = st
				}
			}
			out = append(out, row)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}
