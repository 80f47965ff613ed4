package activities

import (
	"context"
	"errors"
	"fmt"
	"strconv"

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
