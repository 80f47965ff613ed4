package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/internal/devserver"
	"github.com/wardenhq/warden/workflows"
)

// TestPendingApprovalSurvivesServerAndWorkerRestart parks a turn on an
// approval, stops the worker and the server, starts both again on the
// same SQLite file, and answers: the turn resumes where it waited.
func TestPendingApprovalSurvivesServerAndWorkerRestart(t *testing.T) {
	dataDir, workdir := t.TempDir(), t.TempDir()
	ctx := ctxT(t, 120*time.Second)
	up := func() (*devserver.Server, tclient.Client, worker.Worker, *client.Client) {
		srv, err := devserver.Start(ctx, devserver.Options{DataDir: dataDir, Namespace: "default",
			SearchAttributes: searchAttributes(), LogLevel: "error"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := tclient.DialContext(ctx, tclient.Options{HostPort: srv.Addr(), Namespace: "default", Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		w := worker.New(c, "restart", worker.Options{})
		if _, err := warden.Register(w, warden.Options{Workdir: workdir, Content: env.store}); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		cl := client.New(c, "restart")
		cl.PollInterval = 50 * time.Millisecond
		cl.LivePolicy = client.NoLivePolicy // its worker has no Temporal client to follow a store with
		return srv, c, w, cl
	}
	srv, c, w, cl := up()
	s := script(t, "steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch survived\"}}]\n  - text: resumed\n")
	id := "restart-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, id, 1)
	w.Stop()
	c.Close()
	srv.Stop()

	start := time.Now()
	srv, c, w, cl = up()
	defer srv.Stop()
	defer c.Close()
	defer w.Stop()
	ps := waitPending(t, cl, id, 1)
	t.Logf("server+worker restart to pending visible: %s", time.Since(start).Round(time.Millisecond))
	// The ops view across workflows works after the restart too.
	waitFor(t, ctx, func() bool {
		es, err := cl.ListPending(ctx, client.Filter{})
		return err == nil && len(es) == 1 && es[0].WorkflowID == id
	})
	if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: "c1", Decision: workflows.DecisionAllow, Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "resumed" {
		t.Errorf("answer = %q", res.Answer)
	}
	if _, err := os.Stat(filepath.Join(workdir, "survived")); err != nil {
		t.Errorf("approved call did not run after restart: %v", err)
	}
}
