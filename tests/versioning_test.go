package tests

import (
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// TestWorkerVersioningBehavior registers warden on a worker with Worker
// Versioning on (a deployment version, no default behaviour) and runs a
// turn on it, once with the default behaviour (AutoUpgrade) and once
// Pinned: Register does not panic, the version becomes the deployment's
// current one, and the turn completes with the behaviour asked for
// recorded by the server. The control: on such a worker, a workflow
// registered without a behaviour makes the SDK panic, as warden's did.
func TestWorkerVersioningBehavior(t *testing.T) {
	for _, c := range []struct {
		name string
		set  workflow.VersioningBehavior
		want enumspb.VersioningBehavior
	}{
		{"default", workflow.VersioningBehaviorUnspecified, enumspb.VERSIONING_BEHAVIOR_AUTO_UPGRADE},
		{"pinned", workflow.VersioningBehaviorPinned, enumspb.VERSIONING_BEHAVIOR_PINNED},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxT(t, 3*time.Minute)
			queue, deployment := "tq-ver-"+tag(), "warden-"+tag()
			w := worker.New(env.c, queue, worker.Options{DeploymentOptions: worker.DeploymentOptions{
				UseVersioning: true, Version: worker.WorkerDeploymentVersion{DeploymentName: deployment, BuildID: "b1"}}})
			if !panics(func() {
				w.RegisterWorkflowWithOptions(func(workflow.Context) error { return nil }, workflow.RegisterOptions{Name: "Bare" + tag()})
			}) {
				t.Fatal("a workflow without a versioning behaviour registered on a versioned worker: the worker is not versioned")
			}
			if _, err := warden.Register(w, warden.Options{Workdir: t.TempDir(), Content: env.store, VersioningBehavior: c.set}); err != nil {
				t.Fatal(err)
			}
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			h := env.c.WorkerDeploymentClient().GetHandle(deployment)
			waitFor(t, ctx, func() bool {
				_, err := h.SetCurrentVersion(ctx, tclient.WorkerDeploymentSetCurrentVersionOptions{BuildID: "b1"})
				return err == nil
			})
			cl := client.New(env.c, queue)
			cl.LivePolicy = client.NoLivePolicy
			id := "ver-" + tag()
			if _, err := cl.Start(ctx, id, workflows.TurnInput{
				Model: workflows.ModelConfig{Provider: "scripted", Script: script(t,
					"steps:\n  - tool_calls: [{id: e1, name: Bash, input: {command: \"echo versioned\"}}]\n  - text: ran\n")},
				Permission: policy(t, permission.Policy{Allow: []string{"Bash(echo:*)"}}),
			}); err != nil {
				t.Fatal(err)
			}
			res, err := cl.Result(ctx, id)
			if err != nil || res.Answer != "ran" {
				t.Fatalf("turn: %+v, %v", res, err)
			}
			if rs := toolResults(res); len(rs) != 1 || rs[0].Content != "versioned\n" && rs[0].Content != "versioned" {
				t.Errorf("tool results %+v", rs)
			}
			desc, err := env.c.DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				t.Fatal(err)
			}
			vi := desc.GetWorkflowExecutionInfo().GetVersioningInfo()
			if vi.GetBehavior() != c.want || vi.GetDeploymentVersion().GetBuildId() != "b1" {
				t.Errorf("versioning info %v, want behaviour %v on build b1", vi, c.want)
			}
		})
	}
}

// panics reports whether f panics.
func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}
