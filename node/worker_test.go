package node

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/config"
)

// blockingClient is a Temporal client whose visibility list blocks until
// its context is done; listed receives each list's context.
type blockingClient struct {
	tclient.Client
	listed chan context.Context
}

func (c blockingClient) ListWorkflow(ctx context.Context, _ *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	c.listed <- ctx
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestHousekeepingEndsWithNode: the approvals poll and the content GC
// loop end when the node stops, not when the caller's context does (a
// node whose serve or worker start failed, or that exited after its
// demo, left them running).
func TestHousekeepingEndsWithNode(t *testing.T) {
	n := newNode(config.Config{}, Options{})
	c := blockingClient{listed: make(chan context.Context, 1)}
	n.c = c
	n.housekeep(context.Background())
	var pollCtx context.Context
	select {
	case pollCtx = <-c.listed:
	case <-time.After(5 * time.Second):
		t.Fatal("the approvals poll never counted")
	}
	n.stop()
	if pollCtx.Err() == nil {
		t.Error("the approvals poll's context outlived the node")
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, loop := range []string{"metrics.(*Approvals).Poll", "client.(*Client).GCEvery"} {
		if strings.Contains(stacks, loop) {
			t.Errorf("%s still runs after the node stopped", loop)
		}
	}
}
