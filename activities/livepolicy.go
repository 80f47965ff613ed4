package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// errNoClient refuses live-policy work on a worker without a client.
var errNoClient = errors.New("this worker has no Temporal client (warden.Options.Client): it cannot follow a policy store")

// policyState reads the policy store's state. A store that does not
// exist (yet) has no rules and no remembered approvals: the turn's own
// policy applies, at version 0.
func (a *Activities) policyState(ctx context.Context, store string) (workflows.PolicyState, error) {
	if a.Client == nil {
		return workflows.PolicyState{}, errNoClient
	}
	v, err := a.Client.QueryWorkflow(ctx, store, "", workflows.QueryPolicy)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return workflows.PolicyState{}, nil
	}
	if err != nil {
		return workflows.PolicyState{}, fmt.Errorf("policy store %s: %w", store, err)
	}
	var st workflows.PolicyState
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("policy store %s: %w", store, err)
	}
	return st, nil
}

// spend spends a single-use remembered approval for the call key.
func (a *Activities) spend(ctx context.Context, store, id, key string) error {
	h, err := a.Client.UpdateWorkflow(ctx, tclient.UpdateWorkflowOptions{
		WorkflowID: store, UpdateName: workflows.UpdateUse, Args: []any{workflows.UseRequest{ID: id, Key: key}},
		WaitForStage: tclient.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return fmt.Errorf("spend %s: %w", id, err)
	}
	if err := h.Get(ctx, nil); err != nil {
		return fmt.Errorf("spend %s: %w", id, err)
	}
	return nil
}

// PolicyFanout tells the namespace's waiting turns that the policy store
// changed (SignalPolicyChanged): turns that follow that store re-decide
// their waiting calls, the others ignore it. It lists the waiting turns
// with the same visibility query as the pending listings.
func (a *Activities) PolicyFanout(ctx context.Context, in workflows.PolicyFanoutInput) error {
	if a.Client == nil {
		return errNoClient
	}
	q := "WorkflowType = '" + workflows.TurnWorkflow + "' AND ExecutionStatus = 'Running' AND " + workflows.SAPendingCalls + " IS NOT NULL"
	var token []byte
	for {
		resp, err := a.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token, PageSize: 1000})
		if err != nil {
			return fmt.Errorf("list waiting turns: %w", err)
		}
		for _, ex := range resp.GetExecutions() {
			id := ex.GetExecution().GetWorkflowId()
			err := a.Client.SignalWorkflow(ctx, id, "", workflows.SignalPolicyChanged, workflows.PolicyNotice(in))
			var nf *serviceerror.NotFound
			if err != nil && !errors.As(err, &nf) {
				return fmt.Errorf("signal %s: %w", id, err)
			}
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return nil
		}
	}
}

// CheckRules is workflows.ActivityCheckRules: it refuses live rules that
// do not parse, or that name a tool of this worker's registry with
// content the tool cannot match (decide.CheckRules), with a
// non-retryable workflows.ErrTypeUnmatchableRule error naming each such
// rule and its tool. Rules of tools this worker does not know pass.
func (a *Activities) CheckRules(_ context.Context, r workflows.LiveRules) error {
	allow, ask, deny, err := r.Parse()
	if err == nil {
		err = decide.CheckRules(a.Tools.Get, permission.Context{Allow: allow, Ask: ask, Deny: deny})
	}
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeUnmatchableRule, nil)
	}
	return nil
}
