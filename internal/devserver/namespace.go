// Reconciling a namespace registered by an earlier start (a data
// directory made before archival, or with another retention) with the
// options of this one.

package devserver

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

// reconcileNamespace updates ns to o's retention and, with o.Archive,
// turns its archival on. An archive URI, once set, cannot change
// (Temporal refuses it): a namespace archived elsewhere keeps that
// archive, which is reported rather than silently ignored.
func reconcileNamespace(ctx context.Context, svc workflowservice.WorkflowServiceClient, ns *workflowservice.DescribeNamespaceResponse, o Options) error {
	cfg := ns.GetConfig()
	upd := &namespacepb.NamespaceConfig{}
	changed := false
	if cfg.GetWorkflowExecutionRetentionTtl().AsDuration() != o.Retention {
		upd.WorkflowExecutionRetentionTtl = durationpb.New(o.Retention)
		changed = true
	}
	if o.Archive != "" {
		h, v := ArchiveURIs(o.Archive)
		if u := cfg.GetHistoryArchivalUri(); u != "" && u != h {
			return fmt.Errorf("devserver: namespace %s archives histories to %s, not %s (an archive URI cannot change)", o.Namespace, u, h)
		}
		if cfg.GetHistoryArchivalState() != enumspb.ARCHIVAL_STATE_ENABLED {
			upd.HistoryArchivalState, upd.HistoryArchivalUri = enumspb.ARCHIVAL_STATE_ENABLED, h
			changed = true
		}
		if cfg.GetVisibilityArchivalState() != enumspb.ARCHIVAL_STATE_ENABLED && (cfg.GetVisibilityArchivalUri() == "" || cfg.GetVisibilityArchivalUri() == v) {
			upd.VisibilityArchivalState, upd.VisibilityArchivalUri = enumspb.ARCHIVAL_STATE_ENABLED, v
			changed = true
		}
	}
	if !changed {
		return nil
	}
	_, err := svc.UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{Namespace: o.Namespace, Config: upd})
	if err != nil {
		return fmt.Errorf("devserver: update namespace %s: %w", o.Namespace, err)
	}
	return nil
}
