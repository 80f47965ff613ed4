package workflows_test

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/workflows"
)

// TestListTools: the listing returns what its one activity answers, and
// a failed activity fails it without a retry.
func TestListTools(t *testing.T) {
	want := workflows.ToolsList{Tools: []calls.Entry{
		{Info: calls.Info{Name: "Read", ReadOnly: true, ConcurrencySafe: true}, Source: "builtin"},
		{Info: calls.Info{Name: "mcp__echo__echo", ReadOnly: true}, Source: "mcp:echo"},
	}}
	for _, c := range []struct {
		name string
		err  error
	}{{"answers", nil}, {"fails", errors.New("no registry here")}} {
		t.Run(c.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			ran := 0
			env.RegisterActivityWithOptions(func(context.Context) (workflows.ToolsList, error) {
				ran++
				return want, c.err
			}, activity.RegisterOptions{Name: workflows.ActivityTools})
			env.ExecuteWorkflow(workflows.ListTools, workflows.ToolsInput{})
			if !env.IsWorkflowCompleted() {
				t.Fatal("workflow did not complete")
			}
			if ran != 1 {
				t.Errorf("activity ran %d times, want once", ran)
			}
			err := env.GetWorkflowError()
			if c.err != nil {
				if err == nil {
					t.Fatal("the activity's failure did not fail the listing")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got workflows.ToolsList
			if err := env.GetWorkflowResult(&got); err != nil {
				t.Fatal(err)
			}
			if len(got.Tools) != 2 || got.Tools[0].Name != "Read" || !got.Tools[0].ReadOnly || !got.Tools[0].ConcurrencySafe ||
				got.Tools[0].Source != "builtin" || got.Tools[1].Source != "mcp:echo" {
				t.Errorf("listing = %+v", got)
			}
		})
	}
}
