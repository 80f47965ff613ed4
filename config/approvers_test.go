package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/tools/roles"
	"github.com/wardenhq/warden/workflows"
)

func TestInboxApprovers(t *testing.T) {
	t.Parallel()
	if a, err := (Inbox{}).Approvers(); a != nil || err != nil {
		t.Fatalf("no users: %+v %v, want nil (anyone may answer)", a, err)
	}
	in := Inbox{
		Users: map[string]inbox.User{"alice": {Token: "secret-a"}, "kube": {Password: "p", Roles: []string{"k8s"}}},
		Roles: map[string]inbox.Role{"k8s": {Allow: []string{"Bash(kubectl:*)"}}, "unused": {Allow: []string{"Write"}}},
	}
	a, err := in.Approvers()
	if err != nil {
		t.Fatal(err)
	}
	want := &workflows.Approvers{Users: map[string][]string{"alice": nil, "kube": {"k8s"}}, Roles: map[string][]string{"k8s": {"Bash(kubectl:*)"}}}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("approvers = %+v, want %+v", a, want)
	}
	// Only names and roles are recorded with the turn, never credentials.
	b, _ := json.Marshal(a)
	if s := string(b); strings.Contains(s, "secret-a") || strings.Contains(s, `"p"`) {
		t.Fatalf("credentials in the recorded policy: %s", s)
	}
	bash := json.RawMessage(`{"command":"kubectl get pods"}`)
	if err := a.MayAnswer(roles.Checker{}, "kube", "Bash", bash, nil); err != nil {
		t.Errorf("kube on kubectl: %v", err)
	}
	if err := a.MayAnswer(roles.Checker{}, "kube", "Bash", bash, json.RawMessage(`{"command":"rm -rf /"}`)); err == nil {
		t.Error("kube may edit kubectl into rm")
	}
	if err := a.MayAddRule(roles.Checker{}, "kube", "Bash"); err == nil {
		t.Error("kube may add Bash")
	}
	if err := a.MayAnswer(roles.Checker{}, "mallory", "Bash", bash, nil); err == nil {
		t.Error("a stranger may answer")
	}
	in.Users["bob"] = inbox.User{Token: "b", Roles: []string{"nope"}}
	if _, err := in.Approvers(); err == nil {
		t.Error("unknown role accepted")
	}
}
