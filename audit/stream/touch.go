package stream

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/workflows"
)

// Interceptor touches a turn (Streamer.Touch) when one of its activities
// starts and ends, and when it handles a signal or an update (answers,
// messages, external results): the moments its records grow. Workflow
// code touches only when not replaying; a touch changes nothing in the
// workflow.
func (s *Streamer) Interceptor() interceptor.WorkerInterceptor {
	return &touchWorker{s: s}
}

type touchWorker struct {
	interceptor.WorkerInterceptorBase
	s *Streamer
}

func (w *touchWorker) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &touchActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, s: w.s}
}

func (w *touchWorker) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &touchWorkflow{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, s: w.s}
}

type touchActivity struct {
	interceptor.ActivityInboundInterceptorBase
	s *Streamer
}

func (a *touchActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	info := activity.GetInfo(ctx)
	if info.WorkflowType == nil || info.WorkflowType.Name != workflows.TurnWorkflow {
		return a.Next.ExecuteActivity(ctx, in)
	}
	id := info.WorkflowExecution.ID
	a.s.Touch(id)
	defer a.s.Touch(id)
	return a.Next.ExecuteActivity(ctx, in)
}

type touchWorkflow struct {
	interceptor.WorkflowInboundInterceptorBase
	s *Streamer
}

func (w *touchWorkflow) touch(ctx workflow.Context) {
	if info := workflow.GetInfo(ctx); !workflow.IsReplaying(ctx) && info.WorkflowType.Name == workflows.TurnWorkflow {
		w.s.Touch(info.WorkflowExecution.ID)
	}
}

func (w *touchWorkflow) HandleSignal(ctx workflow.Context, in *interceptor.HandleSignalInput) error {
	w.touch(ctx)
	return w.Next.HandleSignal(ctx, in)
}

func (w *touchWorkflow) ExecuteUpdate(ctx workflow.Context, in *interceptor.UpdateInput) (any, error) {
	w.touch(ctx)
	return w.Next.ExecuteUpdate(ctx, in)
}
