package tools

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/calls"
)

// TestBashLimit: a Bash call that a limit ends reads "Command stopped:"
// with the limit and the output so far, an error result whose metadata
// names the limit. Control: the same backend's ordinary call has no
// limit.
func TestBashLimit(t *testing.T) {
	dir := t.TempDir()
	b := &local.Backend{Workdir: dir, Limits: calls.Limits{Processes: 64}}
	defer b.Close()
	env := &Env{Backend: b, Workdir: dir, State: &State{}}
	r := callTool(t, Bash{}, env, BashInput{Command: `echo BEFORE; for i in $(seq 1 200); do sleep 30 & done; echo SPAWNED-$((1+1))`})
	t.Logf("%v %q %v", r.IsError, r.Content, r.Metadata)
	if !r.IsError || !strings.HasPrefix(r.Content, "Command stopped: processes: ") || !strings.Contains(r.Content, "BEFORE") ||
		strings.Contains(r.Content, "SPAWNED-2") || !strings.HasPrefix(r.Metadata["limit"].(string), "processes: ") {
		t.Errorf("limited call: %v %q %v", r.IsError, r.Content, r.Metadata)
	}
	r = callTool(t, Bash{}, env, BashInput{Command: `echo FINE`})
	if r.IsError || strings.TrimSpace(r.Content) != "FINE" || r.Metadata["limit"] != nil {
		t.Errorf("control: %v %q %v", r.IsError, r.Content, r.Metadata)
	}
}
