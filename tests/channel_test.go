package tests

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// relayChannel is a chat channel written the way a new one (Teams, email
// replies) would be: one inbox.Channel. Its service posts a form with a
// shared secret; the sender's account maps to an inbox user through
// inbox.users.NAME.accounts.relay, and the answer goes through the desk.
type relayChannel struct{ secret string }

func (relayChannel) Name() string { return "relay" }

func (c relayChannel) Handler(d inbox.Desk) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Relay-Secret")), []byte(c.secret)) != 1 {
			d.Refused(c.Name(), true)
			http.Error(w, "bad secret", http.StatusUnauthorized)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		user, ok := d.User(c.Name(), r.Form.Get("account"))
		if !ok {
			d.Refused(c.Name(), true)
			http.Error(w, "unknown account", http.StatusForbidden)
			return
		}
		wf, call, hash, reason := r.Form.Get("workflow"), r.Form.Get("call"), r.Form.Get("hash"), r.Form.Get("reason")
		var ack workflows.Ack
		var err error
		switch r.Form.Get("action") {
		case "allow":
			ack, err = d.Approve(r.Context(), user, inbox.ApproveRequest{WorkflowID: wf, CallID: call, Hash: hash, Reason: reason})
		case "deny":
			ack, err = d.Deny(r.Context(), user, inbox.DenyRequest{WorkflowID: wf, CallID: call, Hash: hash, Reason: reason})
		default:
			err = errors.New("unknown action")
		}
		if err != nil {
			d.Refused(c.Name(), false)
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		fmt.Fprintf(w, "%s by %s", ack.Status, user)
	})
}

// TestChannelAnswersThroughTheCore: a channel added as one inbox.Channel
// answers waiting calls with the inbox's own checks. Through a real
// worker and server: a request without the channel's secret, and one
// from an account no user has, are refused and counted; kube, whose role
// covers kubectl only, is refused a touch command by the core's role
// check (the control: the same request from ops, an admin, is taken and
// the call runs); a deny from kube of a kubectl call names kube and its
// reason. The refusals are counted under the channel's name.
func TestChannelAnswersThroughTheCore(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir, Client: env.c})
	ctx := ctxT(t, 90*time.Second)
	users := map[string]config.InboxUser{
		"ops":  {Token: "ops-token", Accounts: map[string]string{"relay": "ops@example.com"}},
		"kube": {Token: "kube-token", Roles: []string{"k8s"}, Accounts: map[string]string{"relay": "kube@example.com"}},
	}
	roles := map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)"}}}
	approvers, err := client.Approvers(config.Inbox{Users: users, Roles: roles})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv, err := inbox.New(inbox.Config{Client: cl, Registerer: reg, Users: users, Roles: roles,
		Channels: []inbox.Channel{relayChannel{secret: "relay-secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	post := func(secret string, form neturl.Values) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/channels/relay", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Relay-Secret", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	id := "channel-core-" + tag()
	s := script(t, `
steps:
  - tool_calls:
      - {id: t1, name: Bash, input: {command: "touch from-relay"}}
      - {id: k1, name: Bash, input: {command: "kubectl delete ns prod"}}
  - text: done
`)
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: permission.Context{Mode: permission.ModeDefault}, Approvers: approvers}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 2)
	hashOf := map[string]string{}
	for _, p := range ps {
		hashOf[p.CallID] = p.Hash
	}
	allowT1 := func(account string) neturl.Values {
		return neturl.Values{"account": {account}, "action": {"allow"}, "workflow": {id}, "call": {"t1"}, "hash": {hashOf["t1"]}}
	}
	if code, body := post("wrong", allowT1("ops@example.com")); code != http.StatusUnauthorized {
		t.Fatalf("without the channel's secret: %d %s", code, body)
	}
	if code, body := post("relay-secret", allowT1("mallory@example.com")); code != http.StatusForbidden {
		t.Fatalf("an account no user has: %d %s", code, body)
	}
	code, body := post("relay-secret", allowT1("kube@example.com"))
	if code != http.StatusConflict || !strings.Contains(body, "may not answer") {
		t.Fatalf("kube's allow of a touch command: %d %s; want the core's role refusal", code, body)
	}
	if _, err := os.Stat(filepath.Join(workdir, "from-relay")); err == nil {
		t.Fatal("a refused answer ran the call")
	}
	if got := refusalsOf(t, reg, "relay"); got != 3 {
		t.Errorf("refusals counted under relay: %v, want 3", got)
	}
	// The control: the same request from ops is taken.
	if code, body := post("relay-secret", allowT1("ops@example.com")); code != http.StatusOK || !strings.Contains(body, "by ops") {
		t.Fatalf("ops's allow: %d %s", code, body)
	}
	deny := neturl.Values{"account": {"kube@example.com"}, "action": {"deny"}, "workflow": {id}, "call": {"k1"}, "hash": {hashOf["k1"]}, "reason": {"not in prod"}}
	if code, body := post("relay-secret", deny); code != http.StatusOK {
		t.Fatalf("kube's deny of the kubectl call: %d %s", code, body)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "from-relay")); err != nil {
		t.Errorf("ops's allow did not run the call: %v", err)
	}
	var denied string
	for _, m := range toolResults(res) {
		denied += fmt.Sprint(m) + "\n"
	}
	if !strings.Contains(denied, "denied this Bash call by kube: not in prod") {
		t.Errorf("the turn's tool results do not carry kube's deny:\n%s", denied)
	}
}

// refusalsOf reads warden_inbox_refusals_total{channel} from reg.
func refusalsOf(t *testing.T, reg *prometheus.Registry, channel string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "warden_inbox_refusals_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "channel" && l.GetValue() == channel {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
