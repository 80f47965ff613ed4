package workflows

import (
	"slices"

	"go.temporal.io/sdk/workflow"
)

// upsertPending publishes the open entries as search attributes so ops
// can filter waiting turns with a visibility query.
func (t *turn) upsertPending(ctx workflow.Context) {
	open := t.open()
	if len(open) == 0 {
		_ = workflow.UpsertTypedSearchAttributes(ctx, saPendingCalls.ValueUnset(), saPendingTools.ValueUnset(), saWaitingSince.ValueUnset())
		return
	}
	var ids, names []string
	since := open[0].RequestedAt
	for _, p := range open {
		ids = append(ids, p.CallID)
		if !slices.Contains(names, p.Tool) {
			names = append(names, p.Tool)
		}
		if p.RequestedAt.Before(since) {
			since = p.RequestedAt
		}
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, saPendingCalls.ValueSet(ids), saPendingTools.ValueSet(names), saWaitingSince.ValueSet(since))
}
