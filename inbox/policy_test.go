package inbox

import (
	"encoding/json"
	"testing"

	"github.com/wardenhq/warden/config"
)

func TestPolicyAllows(t *testing.T) {
	p, err := NewPolicy(map[string]config.InboxUser{
		"alice": {Token: "a"},
		"kube":  {Token: "k", Roles: []string{"k8s"}},
	}, map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)"}}})
	if err != nil {
		t.Fatal(err)
	}
	bash := func(cmd string) json.RawMessage { b, _ := json.Marshal(map[string]string{"command": cmd}); return b }
	cases := []struct {
		user, tool string
		input      json.RawMessage
		want       bool
	}{
		{"alice", "Bash", bash("rm -rf build"), true},
		{"kube", "Bash", bash("kubectl get pods"), true},
		{"kube", "Bash", bash("kubectl get pods && rm -rf /"), false},
		{"kube", "Write", json.RawMessage(`{"file_path":"/x","content":"x"}`), false},
		// A write hidden in a command the role allows is checked as a
		// write: outside the workspace it needs an unrestricted approver.
		{"kube", "Bash", bash("kubectl get pods > /etc/cron.d/x"), false},
		{"kube", "Bash", bash("kubectl get pods > pods.txt"), true},
		{"kube", "Bash", bash("kubectl get pods\nrm -rf ~"), false},
		{"mallory", "Bash", bash("ls"), false},
	}
	for _, c := range cases {
		if got := p.Allows(c.user, c.tool, c.input); got != c.want {
			t.Errorf("Allows(%s, %s, %s) = %v, want %v", c.user, c.tool, c.input, got, c.want)
		}
	}
	if _, err := NewPolicy(map[string]config.InboxUser{"x": {Token: "t", Roles: []string{"nope"}}}, nil); err == nil {
		t.Error("unknown role accepted")
	}
}
