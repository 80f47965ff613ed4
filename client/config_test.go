package client

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/decide/roles"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

func TestInboxApprovers(t *testing.T) {
	t.Parallel()
	if a, err := Approvers(config.Inbox{}); a != nil || err != nil {
		t.Fatalf("no users: %+v %v, want nil (anyone may answer)", a, err)
	}
	in := config.Inbox{
		Users: map[string]config.InboxUser{"alice": {Token: "secret-a"}, "kube": {Password: "p", Roles: []string{"k8s"}}},
		Roles: map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)"}}, "unused": {Allow: []string{"Write"}}},
	}
	a, err := Approvers(in)
	if err != nil {
		t.Fatal(err)
	}
	// The operator key answers everything too.
	want := &workflows.Approvers{Users: map[string][]string{"alice": nil, "kube": {"k8s"}, "operator": nil}, Roles: map[string][]string{"k8s": {"Bash(kubectl:*)"}}}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("approvers = %+v, want %+v", a, want)
	}
	// Only names and roles are recorded with the turn, never credentials.
	b, _ := json.Marshal(a)
	if s := string(b); strings.Contains(s, "secret-a") || strings.Contains(s, `"p"`) {
		t.Fatalf("credentials in the recorded policy: %s", s)
	}
	bash := json.RawMessage(`{"command":"kubectl get pods"}`)
	if err := a.MayAnswer(roles.Checker{}, "kube", "Bash", bash, nil, ""); err != nil {
		t.Errorf("kube on kubectl: %v", err)
	}
	if err := a.MayAnswer(roles.Checker{}, "kube", "Bash", bash, json.RawMessage(`{"command":"rm -rf /"}`), ""); err == nil {
		t.Error("kube may edit kubectl into rm")
	}
	if err := a.MayAddRule(roles.Checker{}, "kube", "Bash"); err == nil {
		t.Error("kube may add Bash")
	}
	if err := a.MayAnswer(roles.Checker{}, "mallory", "Bash", bash, nil, ""); err == nil {
		t.Error("a stranger may answer")
	}
	in.Users["bob"] = config.InboxUser{Token: "b", Roles: []string{"nope"}}
	if _, err := Approvers(in); err == nil {
		t.Error("unknown role accepted")
	}
}

func TestDialOptionsCompression(t *testing.T) {
	t.Parallel()
	for addr, none := range map[string]bool{"127.0.0.1:7233": true, "localhost:7233": true, "[::1]:7233": true,
		"10.0.0.5:7233": false, "temporal.example.com:7233": false} {
		o, err := DialOptions(config.Temporal{Address: addr})
		if err != nil {
			t.Fatal(err)
		}
		_, got := o.ConnectionOptions.GrpcCompression.(*tclient.GrpcCompressionNone)
		if got != none {
			t.Errorf("%s: compression off = %v, want %v", addr, got, none)
		}
	}
}

func TestDialOptions(t *testing.T) {
	t.Parallel()
	o, err := DialOptions(config.Temporal{Address: "x:7233", Namespace: "ns", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if o.HostPort != "x:7233" || o.Namespace != "ns" || o.Credentials == nil || o.ConnectionOptions.TLS == nil {
		t.Errorf("options = %+v", o)
	}
	if o, err := DialOptions(config.Temporal{Address: "x:7233"}); err != nil || o.ConnectionOptions.TLS != nil || o.Credentials != nil {
		t.Errorf("plain options = %+v, %v", o, err)
	}
	if _, err := DialOptions(config.Temporal{TLSCA: "/nonexistent.pem"}); err == nil || !strings.Contains(err.Error(), "temporal.tls_ca") {
		t.Errorf("missing CA error = %v", err)
	}
	if _, err := DialOptions(config.Temporal{TLSCert: "/no.pem", TLSKey: "/no.key"}); err == nil || !strings.Contains(err.Error(), "temporal.tls_cert") {
		t.Errorf("missing cert error = %v", err)
	}
}

// TestConfigOptions: a client of a config with temporal.address dials the
// cluster in its namespace.
func TestConfigOptions(t *testing.T) {
	t.Parallel()
	c := config.Default()
	c.Temporal.Address = "cluster:7233"
	o, err := ConfigOptions(c, "")
	if err != nil || o.HostPort != "cluster:7233" || o.Namespace != "default" {
		t.Errorf("client options %q %q: %v", o.HostPort, o.Namespace, err)
	}
}

// TestConfigNamesAgree: the names package config writes down for other
// packages are theirs: the operator key's file and the escalations.
func TestConfigNamesAgree(t *testing.T) {
	t.Parallel()
	if config.OperatorKeyFile != auth.OperatorName+".key" {
		t.Errorf("config.OperatorKeyFile = %q, the keyring writes %q", config.OperatorKeyFile, auth.OperatorName+".key")
	}
	for _, e := range []workflows.Escalation{workflows.EscalateDeny, workflows.EscalateAllow, workflows.EscalateNotify} {
		s := config.Default()
		s.Tools.Defaults.Escalation = string(e)
		if err := s.Validate(); err != nil {
			t.Errorf("escalation %q: %v", e, err)
		}
	}
}

// TestStartRefusesImpossibleQuorum: Start refuses, before it asks the
// server anything (the fake client has no methods that start), a turn
// whose quorum rule its approvers cannot meet once the requester (the
// client's key) is left out, naming the rule and who could answer.
func TestStartRefusesImpossibleQuorum(t *testing.T) {
	t.Parallel()
	a, err := Approvers(config.Inbox{Users: map[string]config.InboxUser{"alice": {Token: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	cl := New(&fakeTemporal{}, "q")
	cl.Approvers, cl.Via = a, auth.OperatorName
	in := workflows.TurnInput{Prompt: "p"}
	in.Permission.Quorum = []permission.QuorumRule{{Rule: "Bash(kubectl delete:*)", Approvals: 2}}
	_, err = cl.Start(t.Context(), "t1", in)
	for _, want := range []string{`quorum rule "Bash(kubectl delete:*)" needs 2 distinct approvers, but only 1 could ever allow its calls (alice: no roles)`,
		"operator started the turn"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("start: %v, want %q", err, want)
		}
	}
	// Without the operator as requester the two of them make it.
	if _, err := CheckQuorum(a, in.Permission.Quorum, "ci"); err != nil {
		t.Errorf("requester ci: %v", err)
	}
}
