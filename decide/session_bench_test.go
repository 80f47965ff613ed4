package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/wardenhq/warden/permission"
)

// BenchmarkSessionDecision measures the added cost per decision of the
// session rules, the window limits and log-only rules: the 200 calls of
// the benign session, each decided against what the calls before it
// touched, under the chains' rule set without them (baseline), with the
// trifecta and the Rule of Two, and with those plus a window limit and
// two log-only rules. Report the ratio of the ns/op of a run to the
// baseline's, measured in the same run:
//
//	go test -run x -bench BenchmarkSessionDecision -count 5 ./decide/
func BenchmarkSessionDecision(b *testing.B) {
	ts := sessionTools(b)
	steps := benignSession()
	base := sessionPolicy(b, nil)
	rules := sessionPolicy(b, &permission.SessionPolicy{Trifecta: permission.Ask, RuleOfTwo: permission.Ask})
	all := sessionPolicy(b, &permission.SessionPolicy{Trifecta: permission.Ask, RuleOfTwo: permission.Ask})
	all.Limits = []permission.WindowLimit{{Rule: "Bash(git push:*)", Max: 5, Per: time.Hour}}
	all.LogOnly = []permission.Rule{{Tool: "Bash", Content: "curl:*", Behavior: permission.Deny}, {Tool: "Write", Behavior: permission.Ask}}
	for _, c := range []struct {
		name string
		pc   *permission.Context
	}{{"baseline", base}, {"session_rules", rules}, {"session_windows_logonly", all}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				var touched permission.Touched
				for i, s := range steps {
					v, err := Verdict(ctx, Call{Tool: ts[s.tool], Input: json.RawMessage(s.input), Workdir: "/w/proj", Home: "/home/u",
						Policy: c.pc, Session: &touched, Turn: Turn{WorkflowID: "wf", CallID: fmt.Sprintf("c%d", i+1)}})
					if err != nil {
						b.Fatal(err)
					}
					touched.Add(v.Touches...)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(steps)), "ns/decision")
		})
	}
}
