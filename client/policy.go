package client

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// StartPolicyStore starts the policy store store (a workflow id; "" for
// workflows.DefaultPolicyStore) on the client's task queue, or returns
// the one running. A running store is found with a read first, so that
// a key that may not start workflows (an approver's, the inbox's
// delegate) can remember approvals in a store the turn's starter made.
func (cl *Client) StartPolicyStore(ctx context.Context, store string) (string, error) {
	if store == "" {
		store = workflows.DefaultPolicyStore
	}
	if d, err := cl.c.DescribeWorkflowExecution(ctx, store, ""); err == nil &&
		d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return store, nil
	}
	opts := tclient.StartWorkflowOptions{
		ID: store, TaskQueue: cl.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
	if _, err := cl.c.ExecuteWorkflow(ctx, opts, workflows.PolicyWorkflow, workflows.PolicyState{}); err != nil {
		return store, fmt.Errorf("start policy store %s: %w", store, err)
	}
	return store, nil
}

// SetPolicy replaces the live rules of the policy store (started when it
// is not running) and returns its new version. The store then signals the
// waiting turns, and those that follow it decide their waiting calls again.
//
// Rules that cannot match are refused, with the rule and the tool named:
// first here, against the built-in tools and cl.RuleTools, then by the
// store, which checks them against the tool registry of a worker of its
// task queue (workflows.ActivityCheckRules) and sets nothing when one
// fails (ErrRejected).
func (cl *Client) SetPolicy(ctx context.Context, store string, rules workflows.LiveRules, by string) (int, error) {
	allow, ask, deny, err := rules.Parse()
	if err != nil {
		return 0, fmt.Errorf("set policy: %w", err)
	}
	if err := cl.checkRules(permission.Context{Allow: allow, Ask: ask, Deny: deny}); err != nil {
		return 0, fmt.Errorf("set policy: %w", err)
	}
	store, err = cl.StartPolicyStore(ctx, store)
	if err != nil {
		return 0, err
	}
	return update[int](ctx, cl, store, workflows.UpdateSetPolicy, workflows.PolicyChange{Rules: rules, By: by})
}

// SetTeam makes team the approvers in force for the turns that follow
// the policy store (started when it is not running): the store tells the
// waiting turns, which check every answer against it from then on, and
// turns that decide a call later read it with their verdict. Setting the
// team the store has changes nothing. It returns the team's version.
func (cl *Client) SetTeam(ctx context.Context, store string, team *workflows.Approvers, by string) (int, error) {
	if err := team.Validate(); err != nil {
		return 0, fmt.Errorf("set team: %w", err)
	}
	store, err := cl.StartPolicyStore(ctx, store)
	if err != nil {
		return 0, err
	}
	return update[int](ctx, cl, store, workflows.UpdateSetTeam, workflows.TeamChange{Team: team, By: by})
}

// ErrNoPolicyStore wraps the error of PolicyState for a store that does
// not exist yet: turns that follow it see version 0 and no live rules,
// which the zero state returned with it says; `starter policy apply` (or
// a remembered approval) creates it.
var ErrNoPolicyStore = errors.New("the policy store does not exist yet: version 0, no live rules")

// PolicyState returns the policy store's state: version, live rules and
// remembered approvals (revoked, used and expired ones included).
func (cl *Client) PolicyState(ctx context.Context, store string) (workflows.PolicyState, error) {
	if store == "" {
		store = workflows.DefaultPolicyStore
	}
	v, err := cl.c.QueryWorkflow(ctx, store, "", workflows.QueryPolicy)
	if nf := (*serviceerror.NotFound)(nil); errors.As(err, &nf) {
		return workflows.PolicyState{}, fmt.Errorf("%s: %w", store, ErrNoPolicyStore)
	}
	if err != nil {
		return workflows.PolicyState{}, fmt.Errorf("query policy store %s: %w", store, Explain(err))
	}
	var st workflows.PolicyState
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("decode policy store %s: %w", store, err)
	}
	return st, nil
}

// Revoke revokes the remembered approval id of the policy store: from
// then on no call is allowed by it (waiting turns are told).
func (cl *Client) Revoke(ctx context.Context, store, id, by string) (workflows.Remembered, error) {
	if store == "" {
		store = workflows.DefaultPolicyStore
	}
	return update[workflows.Remembered](ctx, cl, store, workflows.UpdateRevoke, workflows.RevokeRequest{ID: id, By: by})
}
