package client

import (
	"context"
	"errors"
	"fmt"
	"sort"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/workflows"
)

// NoAgentBudget, as TurnInput.AgentBudget, starts a turn that charges no
// agent budget store even when its agent has one. The client clears it
// from the input it starts.
const NoAgentBudget = "-"

// ErrNoBudgetStore wraps the error of AgentBudget for an agent without a
// budget store: no bounds, nothing counted.
var ErrNoBudgetStore = errors.New("the agent has no budget (set one with `starter budget set`)")

// withAgentBudget makes a turn charge its agent's budget store when the
// agent has one (a running store; turns of agents without one charge
// nothing and pay no activity per step). The agent is TurnInput.Agent;
// turns without a label charge the namespace's store.
func (cl *Client) withAgentBudget(ctx context.Context, in workflows.TurnInput) (workflows.TurnInput, error) {
	if in.AgentBudget == NoAgentBudget {
		in.AgentBudget = ""
		return in, nil
	}
	if in.AgentBudget != "" {
		return in, nil
	}
	store := workflows.AgentBudgetStore(in.Agent)
	d, err := cl.c.DescribeWorkflowExecution(ctx, store, "")
	if nf := (*serviceerror.NotFound)(nil); errors.As(err, &nf) {
		return in, nil
	}
	if err != nil {
		return in, fmt.Errorf("budget store %s: %w", store, Explain(err))
	}
	if d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		in.AgentBudget = store
	}
	return in, nil
}

// SetAgentBudget sets agent's bound for window (workflows.WindowDaily or
// WindowTotal; b nil or zero clears it) in its budget store, started when
// it is not running, and returns the store's state. Turns of the agent
// started from then on charge the store; today's raises end with a new
// daily bound.
func (cl *Client) SetAgentBudget(ctx context.Context, agent, window string, b *workflows.Budget, by string) (workflows.AgentBudgetState, error) {
	store := workflows.AgentBudgetStore(agent)
	opts := tclient.StartWorkflowOptions{
		ID: store, TaskQueue: cl.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
	if _, err := cl.c.ExecuteWorkflow(ctx, opts, workflows.BudgetStoreWorkflow, workflows.AgentBudgetState{Agent: agent}); err != nil {
		return workflows.AgentBudgetState{}, fmt.Errorf("start budget store %s: %w", store, err)
	}
	return update[workflows.AgentBudgetState](ctx, cl, store, workflows.UpdateBudgetSet,
		workflows.BudgetSet{Agent: agent, Window: window, Budget: b, By: by})
}

// AgentBudget returns agent's budget store state: bounds and spend (read
// it through AgentBudgetState.At(time.Now()) for today's window).
func (cl *Client) AgentBudget(ctx context.Context, agent string) (workflows.AgentBudgetState, error) {
	return cl.budgetState(ctx, workflows.AgentBudgetStore(agent))
}

func (cl *Client) budgetState(ctx context.Context, store string) (workflows.AgentBudgetState, error) {
	v, err := cl.c.QueryWorkflow(ctx, store, "", workflows.QueryBudget)
	if nf := (*serviceerror.NotFound)(nil); errors.As(err, &nf) {
		return workflows.AgentBudgetState{}, fmt.Errorf("%s: %w", store, ErrNoBudgetStore)
	}
	if err != nil {
		return workflows.AgentBudgetState{}, fmt.Errorf("query budget store %s: %w", store, Explain(err))
	}
	var st workflows.AgentBudgetState
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("decode budget store %s: %w", store, err)
	}
	return st, nil
}

// AgentBudgets returns the state of every running budget store of the
// namespace, by agent name (from the server's visibility listing, which
// may lag a store just started by a second or so).
func (cl *Client) AgentBudgets(ctx context.Context) ([]workflows.AgentBudgetState, error) {
	q := "WorkflowType = '" + workflows.BudgetStoreWorkflow + "' AND ExecutionStatus = 'Running'"
	var out []workflows.AgentBudgetState
	var token []byte
	for {
		resp, err := cl.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token, PageSize: 1000})
		if err != nil {
			return nil, fmt.Errorf("list budget stores: %w", Explain(err))
		}
		for _, ex := range resp.GetExecutions() {
			st, err := cl.budgetState(ctx, ex.GetExecution().GetWorkflowId())
			if errors.Is(err, ErrNoBudgetStore) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out, nil
}
