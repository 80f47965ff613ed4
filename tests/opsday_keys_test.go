package tests

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/notify"
)

// TestApproverKeysAnswerEveryKind: the CLI channel of the ops day, with
// approver keys only (keys create --role approver: they may read and
// answer, not start workflows), on the worker binary as a user starts
// it, with webhooks. carol answers a permission ask; carol and dave
// answer a two-person rule (the first allow is progress, the second
// runs it); fin, whose role covers budget approvals only, raises one
// turn's budget and denies another's, and is refused the permission
// ask (the control: the same answer from carol is taken); carol
// remembers an always-allow in the namespace for an hour. Each answer is
// checked where the other channels see it: the webhooks name who
// answered (and the raise, the approvers so far), the policy store lists
// the remembered approval with its expiry, the turns end as answered.
func TestApproverKeysAnswerEveryKind(t *testing.T) {
	ctx := ctxT(t, 5*time.Minute)
	wbin, sbin := buildWorker(t), buildStarter(t)
	dir := t.TempDir()
	dataDir, workdir := filepath.Join(dir, "data"), filepath.Join(dir, "work")
	if err := os.MkdirAll(workdir, 0o755); err != nil {
		t.Fatal(err)
	}
	hook := &hookEndpoint{rcv: &notify.Receiver{Secret: hookSecret}}
	hookSrv := httptest.NewServer(hook)
	defer hookSrv.Close()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, fmt.Sprintf(`server: {data_dir: %q, port: %d, ui_port: 0}
worker: {workdir: %q, task_queue: opsday}
metrics: {addr: "off"}
permission:
  allow: ["Bash(echo:*)"]
  quorum:
    - {rule: "Bash(mkdir:*)", approvals: 2}
inbox:
  users:
    carol: {token: carol-token}
    dave: {token: dave-token}
    fin: {token: fin-token, roles: [budget]}
  roles:
    budget: {allow: [Budget]}
notify: {webhooks: [%q], secret: %q}
`, dataDir, freePort(t), workdir, hookSrv.URL, hookSecret), 0o644)
	proc, _ := startEmbedded(t, wbin, dir, "--config", cfg)
	defer killProcess(t, proc)
	starter := func(args ...string) (string, error) {
		return runStarter(t, sbin, dir, append([]string{"--config", cfg}, args...)...)
	}
	for _, name := range []string{"carol", "dave", "fin"} {
		if out, err := starter("keys", "create", name, "--role", "approver"); err != nil {
			t.Fatalf("keys create %s: %v\n%s", name, err, out)
		}
	}
	as := func(key string, args ...string) (string, error) {
		return starter(append([]string{"--key-file", filepath.Join(dataDir, "auth", key+".key")}, args...)...)
	}
	run := func(id, steps string, extra ...string) {
		t.Helper()
		s := filepath.Join(dir, id+".yaml")
		writeFile(t, s, "prompt: ops day\nsteps:\n"+steps+"  - text: done\n", 0o644)
		if out, err := starter(append([]string{"run", "--script", s, "--workflow-id", id, "--detach"}, extra...)...); err != nil {
			t.Fatalf("starter run %s: %v\n%s", id, err, out)
		}
	}
	waitListed := func(id, call string) {
		t.Helper()
		waitFor(t, ctx, func() bool {
			out, err := as("carol", "approvals", "list", "--workflow", id)
			return err == nil && strings.Contains(out, call)
		})
	}
	answered := func(id string, match func(notify.Event) bool) notify.Event {
		t.Helper()
		var got notify.Event
		waitFor(t, ctx, func() bool {
			hook.mu.Lock()
			defer hook.mu.Unlock()
			i := slices.IndexFunc(hook.events, func(e notify.Event) bool { return e.WorkflowID == id && match(e) })
			if i >= 0 {
				got = hook.events[i]
			}
			return i >= 0
		})
		return got
	}
	by := func(typ, who string) func(notify.Event) bool {
		return func(e notify.Event) bool { return e.Type == typ && e.Answer != nil && e.Answer.By == who }
	}
	ranFile := func(name string) {
		t.Helper()
		waitFor(t, ctx, func() bool { _, err := os.Stat(filepath.Join(workdir, name)); return err == nil })
	}

	// A permission ask: fin's role does not cover it; carol's answer runs it.
	run("opsday-ask", "  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch asked\"}}]\n")
	waitListed("opsday-ask", "c1")
	if out, err := as("fin", "approvals", "approve", "opsday-ask", "c1"); err == nil || !strings.Contains(out+err.Error(), "do not cover it") {
		t.Errorf("fin (budget role only) allowing a Bash call: %v\n%s", err, out)
	} else {
		t.Logf("fin refused: %v: %s", err, strings.TrimSpace(out))
	}
	if _, err := os.Stat(filepath.Join(workdir, "asked")); err == nil {
		t.Fatal("fin's refused allow ran the call")
	}
	if out, err := as("carol", "approvals", "approve", "opsday-ask", "c1", "--reason", "CHG-7"); err != nil {
		t.Fatalf("carol's allow: %v\n%s", err, out)
	}
	ranFile("asked")
	if e := answered("opsday-ask", by(notify.TypeApprovalAnswered, "carol")); e.Answer.Reason != "CHG-7" || e.Answer.Decision != "allow" {
		t.Errorf("approval_answered: %+v", *e.Answer)
	}

	// A two-person rule: carol's allow is progress, dave's runs it.
	run("opsday-quorum", "  - tool_calls: [{id: c1, name: Bash, input: {command: \"mkdir two-approvers\"}}]\n")
	waitListed("opsday-quorum", "c1")
	if out, err := as("carol", "approvals", "approve", "opsday-quorum", "c1"); err != nil || !strings.Contains(out, "1 of 2") {
		t.Fatalf("carol's first allow: %v\n%s", err, out)
	}
	if e := answered("opsday-quorum", by(notify.TypeApprovalProgress, "carol")); !slices.Equal(e.Answer.Approvers, []string{"carol"}) || e.Answer.Progress != "1 of 2" {
		t.Errorf("approval_progress: %+v", *e.Answer)
	}
	if out, err := as("dave", "approvals", "approve", "opsday-quorum", "c1"); err != nil {
		t.Fatalf("dave's allow: %v\n%s", err, out)
	}
	ranFile("two-approvers")
	if e := answered("opsday-quorum", by(notify.TypeApprovalAnswered, "dave")); !slices.Equal(e.Answer.Approvers, []string{"carol", "dave"}) {
		t.Errorf("approval_answered of the quorum: %+v", *e.Answer)
	}

	// Budget approvals: fin raises one turn and denies another.
	over := "  - tool_calls: [{id: e1, name: Bash, input: {command: \"echo over budget\"}}]\n    usage: {input_tokens: 1000, output_tokens: 200}\n"
	run("opsday-raise", over, "--budget", "tokens=1000")
	run("opsday-deny", over, "--budget", "tokens=1000")
	waitListed("opsday-raise", "budget_1")
	waitListed("opsday-deny", "budget_1")
	if out, err := as("fin", "approvals", "approve", "opsday-raise", "budget_1", "--raise", "tokens=+1000"); err != nil {
		t.Fatalf("fin's raise: %v\n%s", err, out)
	}
	if e := answered("opsday-raise", by(notify.TypeApprovalAnswered, "fin")); e.Answer.Raise != "tokens=+1000" {
		t.Errorf("approval_answered of the raise: %+v", *e.Answer)
	}
	if out, err := as("fin", "approvals", "deny", "opsday-deny", "budget_1", "--reason", "over plan"); err != nil {
		t.Fatalf("fin's deny: %v\n%s", err, out)
	}
	if e := answered("opsday-deny", by(notify.TypeApprovalAnswered, "fin")); e.Answer.Decision != "deny" || e.Answer.Reason != "over plan" {
		t.Errorf("approval_answered of the deny: %+v", *e.Answer)
	}
	waitFor(t, ctx, func() bool {
		out, err := as("carol", "audit", "--workflow", "opsday-raise")
		return err == nil && strings.Contains(out, "fin")
	})

	// A remembered approval with a scope and a TTL.
	run("opsday-remember", "  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch remembered\"}}]\n")
	waitListed("opsday-remember", "c1")
	if out, err := as("carol", "approvals", "approve", "opsday-remember", "c1", "--always", "--scope", "namespace", "--ttl", "1h",
		"--rule", "Bash(touch remembered:*)"); err != nil {
		t.Fatalf("carol's remembered allow: %v\n%s", err, out)
	}
	ranFile("remembered")
	list, err := as("carol", "policy", "remembered", "list")
	if err != nil || !strings.Contains(list, "Bash(touch remembered:*)") || !strings.Contains(list, "carol") {
		t.Fatalf("the store's remembered approvals: %v\n%s", err, list)
	}
	if e := answered("opsday-remember", by(notify.TypeApprovalAnswered, "carol")); e.Answer.Scope != "namespace" || e.Answer.TTL != "1h0m0s" {
		t.Errorf("approval_answered of the remembered allow: %+v", *e.Answer)
	}
}
