package client

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// NoLivePolicy, as Client.LivePolicy or TurnInput.LivePolicy, opts out of
// live policy: the turn keeps the policy it started with, and neither
// `policy apply` nor a remembered approval reaches it. The client clears
// it from the input it starts.
const NoLivePolicy = "-"

// withLivePolicy fills in the policy store a turn follows (the client's,
// else the default) and makes sure that store exists; NoLivePolicy
// leaves the turn without one.
func (cl *Client) withLivePolicy(ctx context.Context, in workflows.TurnInput) (workflows.TurnInput, error) {
	if in.LivePolicy == "" {
		in.LivePolicy = cl.LivePolicy
		if in.LivePolicy == "" {
			in.LivePolicy = workflows.DefaultPolicyStore
		}
	}
	if in.LivePolicy == NoLivePolicy {
		in.LivePolicy = ""
		return in, nil
	}
	cl.storesMu.Lock()
	made := cl.stores[in.LivePolicy]
	cl.storesMu.Unlock()
	if made {
		return in, nil
	}
	if _, err := cl.StartPolicyStore(ctx, in.LivePolicy); err != nil {
		return in, err
	}
	cl.storesMu.Lock()
	if cl.stores == nil {
		cl.stores = map[string]bool{}
	}
	cl.stores[in.LivePolicy] = true
	cl.storesMu.Unlock()
	return in, nil
}

// Start starts a turn with the given workflow id (generated when empty).
// Starting an id that is already running returns that run: starts are
// idempotent. A turn whose quorum rules its approvers cannot meet (its
// requester never counts) is refused before anything starts
// (CheckQuorum). The turn follows the policy store in.LivePolicy, else the
// client's (LivePolicy), else workflows.DefaultPolicyStore, made first
// when missing; NoLivePolicy opts out. It charges its agent's budget
// store when the agent has one (withAgentBudget); NoAgentBudget opts out.
func (cl *Client) Start(ctx context.Context, id string, in workflows.TurnInput) (tclient.WorkflowRun, error) {
	in = cl.withApprovers(in)
	if in.Requester == "" {
		in.Requester = cl.Via
	}
	if err := cl.checkRules(in.Permission); err != nil {
		return nil, fmt.Errorf("start turn: permission: %w", err)
	}
	if _, err := CheckQuorum(in.Approvers, in.Permission.Quorum, in.Requester); err != nil {
		return nil, fmt.Errorf("start turn: permission: %w", err)
	}
	in, err := cl.withLivePolicy(ctx, in)
	if err != nil {
		return nil, err
	}
	if in, err = cl.withAgentBudget(ctx, in); err != nil {
		return nil, err
	}
	opts := tclient.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                cl.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
	run, err := cl.c.ExecuteWorkflow(ctx, opts, workflows.TurnWorkflow, in)
	if err != nil {
		return nil, fmt.Errorf("start turn: %w", err)
	}
	return run, nil
}

// checkRules refuses the rules of pc that the built-in tools or
// cl.Tools cannot match (decide.CheckRules).
func (cl *Client) checkRules(pc permission.Context) error {
	return decide.CheckRules(decide.ToolLookup(append(tools.Builtins(), cl.RuleTools...)), pc)
}

// withApprovers records the client's approvers in a turn that names none.
func (cl *Client) withApprovers(in workflows.TurnInput) workflows.TurnInput {
	if in.Approvers == nil && cl.Approvers.Enabled() {
		in.Approvers = cl.Approvers
	}
	return in
}

// Result waits for the turn to end and returns its result.
func (cl *Client) Result(ctx context.Context, workflowID string) (workflows.TurnResult, error) {
	var res workflows.TurnResult
	err := cl.c.GetWorkflow(ctx, workflowID, "").Get(ctx, &res)
	return res, err
}

// State returns the turn's summary (pending entries, permission context).
func (cl *Client) State(ctx context.Context, workflowID string) (workflows.Summary, error) {
	var s workflows.Summary
	v, err := cl.c.QueryWorkflow(ctx, workflowID, "", workflows.QueryState)
	if err != nil {
		return s, fmt.Errorf("query state: %w", err)
	}
	return s, v.Get(&s)
}
