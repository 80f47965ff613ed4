package inbox

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wardenhq/warden/config"
)

func TestPolicyCheckAnswer(t *testing.T) {
	p, err := NewPolicy(map[string]config.InboxUser{"kube": {Token: "k", Roles: []string{"k8s"}}},
		map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckAnswer("kube", "Bash", json.RawMessage(`{"command":"kubectl get pods"}`)); err != nil {
		t.Errorf("a call the role covers: %v", err)
	}
	err = p.CheckAnswer("kube", "Bash", json.RawMessage(`{"command":"rm -rf /"}`))
	if err == nil || !strings.Contains(err.Error(), `"kube" may not answer Bash calls`) {
		t.Errorf("a call the role does not cover: %v", err)
	}
	if err := p.CheckAnswer("mallory", "Read", json.RawMessage(`{"file_path":"/x"}`)); err == nil {
		t.Error("an unknown user may answer")
	}
}
