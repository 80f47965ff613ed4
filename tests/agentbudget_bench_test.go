package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// BenchmarkAgentBudget measures what charging an agent's budget store
// costs a turn per step: a 10-step turn (a model call and one tool call
// a step) of an agent without a budget ("off": no activity) and of one
// with a daily bound it never reaches ("on": a charge Update to the
// store before every model call and every step's tool calls), on the
// embedded server, in the same run. Reported as ms/step.
//
//	go test -run x -bench BenchmarkAgentBudget -benchtime 10x ./tests/
func BenchmarkAgentBudget(b *testing.B) {
	cl := startWorker(b, warden.Options{Client: env.c})
	ctx := ctxT(b, 10*time.Minute)
	var sb strings.Builder
	sb.WriteString("steps:\n")
	for range 10 {
		sb.WriteString("  - tool_calls: [{name: Bash, input: {command: \"true\"}}]\n    usage: {input_tokens: 100, output_tokens: 10}\n")
	}
	sb.WriteString("  - text: done\n")
	on := "bench-on-" + tag()
	if _, err := cl.SetAgentBudget(ctx, on, workflows.WindowDaily, &workflows.Budget{Tokens: 1 << 40}, "bench"); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, agent string }{{"off", "bench-off-" + tag()}, {"on", on}} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				id := fmt.Sprintf("agent-bench-%s-%s-%d", c.name, tag(), i)
				in := workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(b, sb.String())},
					Permission: permission.Context{Mode: permission.ModeBypass}, Agent: c.agent}
				if _, err := cl.Start(ctx, id, in); err != nil {
					b.Fatal(err)
				}
				if res, err := cl.Result(ctx, id); err != nil || res.Answer != "done" {
					b.Fatalf("%+v, %v", res, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/11, "ms/step")
		})
	}
	st, err := cl.AgentBudget(ctx, on)
	if err != nil || st.Today.Usage.Total() == 0 {
		b.Fatalf("the store counted nothing: %+v, %v", st, err)
	}
}
