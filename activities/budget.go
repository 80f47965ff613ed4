package activities

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/workflows"
)

// BudgetCharge charges a turn's usage to its agent's budget store and
// returns the store's verdict on the turn's next step (an Update, so
// concurrent turns of one agent are answered one at a time). Its Update
// id is the turn and sequence: a retried attempt is answered with the
// first one's verdict. A store that does not exist bounds nothing.
func (a *Activities) BudgetCharge(ctx context.Context, in workflows.BudgetCharge) (workflows.BudgetVerdict, error) {
	var v workflows.BudgetVerdict
	if a.Client == nil {
		return v, errNoClient
	}
	h, err := a.Client.UpdateWorkflow(ctx, tclient.UpdateWorkflowOptions{
		WorkflowID: in.Store, UpdateID: in.Turn + "/charge/" + strconv.Itoa(in.Seq),
		UpdateName: workflows.UpdateBudgetCharge, Args: []any{in}, WaitForStage: tclient.WorkflowUpdateStageCompleted,
	})
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return v, nil
	}
	if err != nil {
		return v, fmt.Errorf("charge budget store %s: %w", in.Store, err)
	}
	if err := h.Get(ctx, &v); err != nil {
		return v, fmt.Errorf("charge budget store %s: %w", in.Store, err)
	}
	return v, nil
}

// BudgetRaise raises a window's bound of an agent's budget store: an
// approver's answer to the turn's agent budget approval.
func (a *Activities) BudgetRaise(ctx context.Context, in workflows.BudgetRaise) error {
	if a.Client == nil {
		return errNoClient
	}
	h, err := a.Client.UpdateWorkflow(ctx, tclient.UpdateWorkflowOptions{
		WorkflowID: in.Store, UpdateID: in.Key + "/raise",
		UpdateName: workflows.UpdateBudgetRaise, Args: []any{in}, WaitForStage: tclient.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return fmt.Errorf("raise budget store %s: %w", in.Store, err)
	}
	if err := h.Get(ctx, nil); err != nil {
		return fmt.Errorf("raise budget store %s: %w", in.Store, err)
	}
	return nil
}

// WindowReserve counts a call against a window limit of the agent scope
// in the agent's budget store (an Update: the store serializes the
// agent's concurrent turns), starting the store when it does not run
// yet: the worker owns the store, a turn needs no right to start it.
func (a *Activities) WindowReserve(ctx context.Context, in workflows.WindowReserve) (workflows.WindowVerdict, error) {
	var v workflows.WindowVerdict
	if a.Client == nil {
		return v, errNoClient
	}
	id := in.Key + "/" + workflows.WindowID(in.Limit)
	if in.Force {
		id += "/force"
	}
	opts := tclient.UpdateWorkflowOptions{WorkflowID: in.Store, UpdateID: id, UpdateName: workflows.UpdateWindowReserve,
		Args: []any{in}, WaitForStage: tclient.WorkflowUpdateStageCompleted}
	h, err := a.Client.UpdateWorkflow(ctx, opts)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		start := tclient.StartWorkflowOptions{ID: in.Store, TaskQueue: in.TaskQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING}
		if _, err := a.Client.ExecuteWorkflow(ctx, start, workflows.BudgetStoreWorkflow, workflows.AgentBudgetState{Agent: in.Agent}); err != nil {
			return v, fmt.Errorf("start budget store %s: %w", in.Store, err)
		}
		h, err = a.Client.UpdateWorkflow(ctx, opts)
	}
	if err != nil {
		return v, fmt.Errorf("window limit %s in budget store %s: %w", in.Limit.Rule, in.Store, err)
	}
	if err := h.Get(ctx, &v); err != nil {
		return v, fmt.Errorf("window limit %s in budget store %s: %w", in.Limit.Rule, in.Store, err)
	}
	return v, nil
}
