package inbox

import (
	"encoding/json"
	"testing"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
)

// TestMayAnswer: a user without roles answers everything, one with roles
// the calls they cover (a Bash command per simple command, its writes as
// writes), a stranger nothing.
func TestMayAnswer(t *testing.T) {
	s, err := New(Config{Client: client.New(nil, "unused"), Users: map[string]config.InboxUser{
		"alice": {Token: "a"},
		"kube":  {Token: "k", Roles: []string{"k8s"}},
	}, Roles: map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)"}}}})
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
		if got := s.may(c.user, c.tool, c.input, nil, "", nil); got != c.want {
			t.Errorf("may(%s, %s, %s) = %v, want %v", c.user, c.tool, c.input, got, c.want)
		}
	}
	for user, want := range map[string]bool{"alice": false, "kube": true, "mallory": true} {
		if got := s.restricted(user); got != want {
			t.Errorf("restricted(%s) = %v, want %v", user, got, want)
		}
	}
}
