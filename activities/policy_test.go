package activities

import (
	"testing"
	"time"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

func TestPolicyPaths(t *testing.T) {
	t.Parallel()
	a := &Activities{ToolSettings: map[string]config.ToolSettings{"Bash": {Retry: config.Retry{MaxAttempts: 5}, ApprovalTimeout: time.Hour, Escalation: string(workflows.EscalateNotify)}}}
	infos := map[string]tools.Info{}
	for _, tl := range tools.Builtins() {
		infos[tl.Info().Name] = tl.Info()
	}
	cases := []struct {
		tool     string
		readOnly bool
		backend  string
		local    bool
		attempts int32
	}{
		{"Read", true, "local", true, 3},
		{"Grep", true, "docker", false, 3},
		{"TaskCreate", false, "local", true, 1},
		{"Write", false, "local", false, 1},
		{"Edit", false, "local", false, 1},
		{"Bash", true, "local", true, 5},
		{"Bash", false, "local", false, 5},
		{"AskUser", true, "local", false, 3},
	}
	for _, c := range cases {
		p := a.policy(infos[c.tool], c.readOnly, c.backend)
		if p.Local != c.local || p.MaxAttempts != c.attempts {
			t.Errorf("%s (read-only %v, %s): local=%v attempts=%d, want %v %d", c.tool, c.readOnly, c.backend, p.Local, p.MaxAttempts, c.local, c.attempts)
		}
	}
	if p := a.policy(infos["Bash"], false, "local"); p.ApprovalTimeout != time.Hour || p.Escalation != workflows.EscalateNotify || p.Timeout != DefaultToolTimeout {
		t.Errorf("Bash policy = %+v", p)
	}
}
