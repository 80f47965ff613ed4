package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/workflows"
)

func TestAnswerCheck(t *testing.T) {
	if AnswerCheck(nil, roles.Checker{}) != nil {
		t.Error("a check without approvers: the turn's approvers decide alone")
	}
	a, err := client.Approvers(config.Inbox{Users: map[string]config.InboxUser{"kube": {Token: "k", Roles: []string{"k8s"}}},
		Roles: map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)", "Edit(src/**)"}}}})
	if err != nil {
		t.Fatal(err)
	}
	check := AnswerCheck(a, roles.Checker{})
	if err := check("kube", workflows.Pending{Tool: "Bash", Input: json.RawMessage(`{"command":"kubectl get pods"}`)}); err != nil {
		t.Errorf("a call the role covers: %v", err)
	}
	err = check("kube", workflows.Pending{Tool: "Bash", Input: json.RawMessage(`{"command":"rm -rf /"}`)})
	if err == nil || !strings.Contains(err.Error(), `"kube" may not answer Bash calls`) {
		t.Errorf("a call the role does not cover: %v", err)
	}
	err = check("mallory", workflows.Pending{Tool: "Read", Input: json.RawMessage(`{"file_path":"/x"}`)})
	if err == nil || !strings.Contains(err.Error(), `"mallory" is not an approver`) {
		t.Errorf("an unknown user: %v", err)
	}
	// A relative role pattern covers a path in the call's workspace, as
	// the turn's check resolves it, and not outside it.
	edit := json.RawMessage(`{"file_path":"/ws/src/a.go","old_string":"a","new_string":"b"}`)
	if err := check("kube", workflows.Pending{Tool: "Edit", Input: edit, Workdir: "/ws"}); err != nil {
		t.Errorf("an edit in the workspace the role covers: %v", err)
	}
	if err := check("kube", workflows.Pending{Tool: "Edit", Input: edit, Workdir: "/other"}); err == nil {
		t.Error("an edit outside the workspace: allowed")
	}
	// The operator key answers everything unless an inbox user of its name
	// has roles.
	if err := check("operator", workflows.Pending{Tool: "Bash", Input: json.RawMessage(`{"command":"rm -rf /"}`)}); err != nil {
		t.Errorf("the operator: %v", err)
	}
}
