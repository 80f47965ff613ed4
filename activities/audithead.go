package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/workflows"
)

// AuditHead reads the calling turn's settled history (every run of it,
// up to the last completed workflow task) and returns the head of its
// audit chain: the number and hash of its last record, which the turn
// records as it ends (workflows.HeadNote).
func (a *Activities) AuditHead(ctx context.Context, workflowID string) (workflows.HeadNote, error) {
	if a.Client == nil {
		return workflows.HeadNote{}, temporal.NewNonRetryableApplicationError("no client to read the turn's history", "NoClient", errors.New("activities: Client is nil"))
	}
	recs, _, err := audit.Settled(ctx, a.Client, workflowID)
	if err != nil {
		return workflows.HeadNote{}, err
	}
	h := workflows.HeadNote{RunID: activity.GetInfo(ctx).WorkflowExecution.RunID, Format: audit.HeadFormat}
	if n := len(recs); n > 0 {
		h.Seq, h.Hash = recs[n-1].Seq, recs[n-1].Hash
	}
	return h, nil
}
