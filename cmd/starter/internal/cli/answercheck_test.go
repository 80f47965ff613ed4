package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/decide/roles"
)

func TestAnswerCheck(t *testing.T) {
	if AnswerCheck(nil, roles.Checker{}) != nil {
		t.Error("a check without approvers: the turn's approvers decide alone")
	}
	a, err := client.Approvers(config.Inbox{Users: map[string]config.InboxUser{"kube": {Token: "k", Roles: []string{"k8s"}}},
		Roles: map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)"}}}})
	if err != nil {
		t.Fatal(err)
	}
	check := AnswerCheck(a, roles.Checker{})
	if err := check("kube", "Bash", json.RawMessage(`{"command":"kubectl get pods"}`)); err != nil {
		t.Errorf("a call the role covers: %v", err)
	}
	err = check("kube", "Bash", json.RawMessage(`{"command":"rm -rf /"}`))
	if err == nil || !strings.Contains(err.Error(), `"kube" may not answer Bash calls`) {
		t.Errorf("a call the role does not cover: %v", err)
	}
	err = check("mallory", "Read", json.RawMessage(`{"file_path":"/x"}`))
	if err == nil || !strings.Contains(err.Error(), `"mallory" is not an approver`) {
		t.Errorf("an unknown user: %v", err)
	}
	// The operator key answers everything unless an inbox user of its name
	// has roles.
	if err := check("operator", "Bash", json.RawMessage(`{"command":"rm -rf /"}`)); err != nil {
		t.Errorf("the operator: %v", err)
	}
}
