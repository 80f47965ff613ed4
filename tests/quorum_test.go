package tests

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// These tests cover two-person approval (permission.quorum), required
// reasons and the always-allow offers, through real turns on the real
// embedded server.

// answeredEvent waits until the turn records an answered event of callID
// whose text contains want.
func answeredEvent(t *testing.T, cl *client.Client, id, callID, want string) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	waitFor(t, ctx, func() bool {
		page, err := cl.Events(ctx, id, 0)
		if err != nil {
			return false
		}
		return slices.ContainsFunc(page.Events, func(e workflows.Event) bool {
			return e.Type == workflows.EventAnswered && e.CallID == callID && strings.Contains(e.Text, want)
		})
	})
}

func refused(t *testing.T, err error, want, what string) {
	t.Helper()
	if !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v, want a refusal containing %q", what, err, want)
	}
}

func quorumPolicy(rule string, n int) permission.Context {
	pc, err := permission.Policy{Quorum: []permission.QuorumRule{{Rule: rule, Approvals: n}}}.Context()
	if err != nil {
		panic(err)
	}
	return pc
}

// TestQuorumNeedsDistinctApprovers: a call a two-person rule matches
// waits until two distinct approvers allowed it. One approver cannot
// pass it twice (Update or signal), nor under a second name with the same
// key, nor can the turn's requester; always_allow is refused. The first
// allow is kept and shown ("1 of 2") in the query, the listing's index
// and the events; the second distinct approver's allow runs the call.
func TestQuorumNeedsDistinctApprovers(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 120*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: k1, name: Bash, input: {command: \"touch deleted\"}}]\n  - text: done\n")
	id := "quorum-" + fmt.Sprint(time.Now().UnixNano())
	// touch would run on its own in the workdir (the mode allows it):
	// the quorum rule makes it ask.
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: quorumPolicy("Bash(touch:*)", 2), Requester: "ops", Workdir: workdir}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]
	if p.Quorum != 2 || len(p.Suggestions) != 0 {
		t.Fatalf("pending = %+v, want quorum 2 and no rule offered", p)
	}
	allow := func(by, via string) error {
		_, err := cl.ApproveListed(ctx, id, p, workflows.Approval{Decision: workflows.DecisionAllow, By: by, Via: via})
		return err
	}
	refused(t, allow("ops", ""), "requester's allow never counts", "allow by the requester")
	_, err := cl.ApproveListed(ctx, id, p, workflows.Approval{Decision: workflows.DecisionAlwaysAllow, Rules: []string{"Bash(touch:*)"}, By: "alice", Via: "alice"})
	refused(t, err, "always_allow refused", "always_allow")
	if err := allow("alice", "alice"); err != nil {
		t.Fatalf("first allow: %v", err)
	}
	answeredEvent(t, cl, id, "k1", "allow by alice (1 of 2 approvals; 1 more needed)")
	ps := waitPending(t, cl, id, 1)
	if len(ps[0].Approvals) != 1 || ps[0].Approvals[0].By != "alice" {
		t.Fatalf("pending after one allow = %+v, want alice's allow kept", ps[0])
	}
	waitFor(t, ctx, func() bool {
		es, err := cl.ListPending(ctx, client.Filter{Workflow: id})
		return err == nil && len(es) == 1 && len(es[0].Approvals) == 1 && es[0].Quorum == 2
	})
	// starter approvals list shows the count.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, "{}\n", 0o644)
	out, err := runStarter(t, buildStarter(t), dir, "--config", cfg, "--address", env.srv.Addr(), "--namespace", "default",
		"approvals", "list", "--workflow", id)
	if err != nil || !strings.Contains(out, "approval (1 of 2)") {
		t.Errorf("approvals list: %v\n%s", err, out)
	}
	// The same approver again, by Update and by signal.
	refused(t, allow("alice", "alice"), "alice\" already allowed it (1 of 2)", "second allow by alice")
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "k1", Hash: p.Hash, Decision: workflows.DecisionAllow, By: "alice", Via: "alice"}); err != nil {
		t.Fatal(err)
	}
	rejectedEvent(t, cl, id, "k1", "already allowed it")
	// The same key under a second name.
	refused(t, allow("carol", "alice"), "already allowed it under another name", "alice's key naming carol")
	if _, err := os.Stat(filepath.Join(workdir, "deleted")); err == nil {
		t.Fatal("the call ran with one approver")
	}
	if ps := waitPending(t, cl, id, 1); len(ps[0].Approvals) != 1 {
		t.Fatalf("refused allows were counted: %+v", ps[0].Approvals)
	}
	// A second, distinct approver.
	if err := allow("bob", "bob"); err != nil {
		t.Fatalf("second approver: %v", err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "deleted")); err != nil {
		t.Fatalf("the call did not run after two approvers: %v", err)
	}
	answeredEvent(t, cl, id, "k1", "allow by bob (2 of 2 approvals)")
}

// TestQuorumDenyByOneEnds: after one allow of a two-person rule, one
// approver's deny answers the call at once. Control: a call outside the
// rule, in the same turn, is answered by one allow.
func TestQuorumDenyByOneEnds(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 120*time.Second)
	s := script(t, `
steps:
  - tool_calls:
      - {id: d1, name: Bash, input: {command: "touch dropped"}}
      - {id: c1, name: Bash, input: {command: "curl -s http://127.0.0.1:1/"}}
  - text: done
`)
	id := "quorum-deny-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: quorumPolicy("Bash(touch:*)", 2), Workdir: workdir}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 2)
	if ps[0].Quorum != 2 || ps[1].Quorum != 0 {
		t.Fatalf("pending = %+v, want quorum only on d1", ps)
	}
	// Without names (no keys, no --by), all such answers are one approver.
	if _, err := cl.ApproveListed(ctx, id, ps[0], workflows.Approval{Decision: workflows.DecisionAllow}); err != nil {
		t.Fatal(err)
	}
	_, err := cl.ApproveListed(ctx, id, ps[0], workflows.Approval{Decision: workflows.DecisionAllow})
	refused(t, err, "an approver naming nobody already allowed it", "a second allow naming nobody")
	// Control: one allow answers the call no quorum rule matches.
	if _, err := cl.ApproveListed(ctx, id, ps[1], workflows.Approval{Decision: workflows.DecisionAllow, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	left := waitPending(t, cl, id, 1)
	if left[0].CallID != "d1" {
		t.Fatalf("pending = %+v, want d1 still waiting", left)
	}
	if _, err := cl.ApproveListed(ctx, id, left[0], workflows.Approval{Decision: workflows.DecisionDeny, By: "bob", Reason: "not today"}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != 2 || !strings.Contains(rs[0].Content, "not today") {
		t.Fatalf("results = %+v, want d1 denied by bob", rs)
	}
	if _, err := os.Stat(filepath.Join(workdir, "dropped")); err == nil {
		t.Fatal("a denied call ran")
	}
}

// TestRequiredReason: a policy that requires a reason refuses an answer
// without one (allow and deny, Update and signal) and accepts one with
// it. Control: a call the rule does not cover is answered without one.
func TestRequiredReason(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 120*time.Second)
	s := script(t, `
steps:
  - tool_calls:
      - {id: r1, name: Bash, input: {command: "touch reasoned"}}
      - {id: c1, name: Bash, input: {command: "curl -s http://127.0.0.1:1/"}}
  - text: done
`)
	pc, err := permission.Policy{Quorum: []permission.QuorumRule{{Rule: "Bash(touch:*)", Approvals: 1, RequireReason: true}}}.Context()
	if err != nil {
		t.Fatal(err)
	}
	id := "reason-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: pc, Workdir: workdir}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 2)
	if !ps[0].ReasonRequired || ps[1].ReasonRequired {
		t.Fatalf("pending = %+v, want a reason required on r1 only", ps)
	}
	for _, d := range []workflows.Decision{workflows.DecisionAllow, workflows.DecisionDeny} {
		_, err := cl.ApproveListed(ctx, id, ps[0], workflows.Approval{Decision: d, By: "alice", Reason: "  "})
		refused(t, err, "needs a reason with every answer", string(d)+" without a reason")
	}
	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "r1", Hash: ps[0].Hash, Decision: workflows.DecisionAllow, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	rejectedEvent(t, cl, id, "r1", "needs a reason")
	// Control: no reason needed for c1.
	if _, err := cl.ApproveListed(ctx, id, ps[1], workflows.Approval{Decision: workflows.DecisionDeny, By: "alice"}); err != nil {
		t.Fatalf("answer without a reason to a call that needs none: %v", err)
	}
	if _, err := cl.ApproveListed(ctx, id, ps[0], workflows.Approval{Decision: workflows.DecisionAllow, By: "alice", Reason: "TICKET-7"}); err != nil {
		t.Fatalf("allow with a reason: %v", err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "reasoned")); err != nil {
		t.Fatalf("the call allowed with a reason did not run: %v", err)
	}
	answeredEvent(t, cl, id, "r1", "allow by alice: TICKET-7")
}

// TestAlwaysAllowNotOfferedWhereNothingSilences: a force push asks by a
// safety check no allow rule silences: it offers no rule and always_allow
// is refused. Control: an ordinary ask in the same turn offers its rule
// and always_allow is accepted.
func TestAlwaysAllowNotOfferedWhereNothingSilences(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 120*time.Second)
	s := script(t, `
steps:
  - tool_calls:
      - {id: f1, name: Bash, input: {command: "git push --force origin main"}}
      - {id: c1, name: Bash, input: {command: "npm run build"}}
  - text: done
`)
	id := "always-immune-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}, Workdir: workdir}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 2)
	if !ps[0].BypassImmune || len(ps[0].Suggestions) != 0 {
		t.Fatalf("force push pending = %+v, want bypass-immune with no rule offered", ps[0])
	}
	if ps[1].BypassImmune || len(ps[1].Suggestions) == 0 {
		t.Fatalf("ordinary ask = %+v, want a rule offered", ps[1])
	}
	_, err := cl.ApproveListed(ctx, id, ps[0], workflows.Approval{Decision: workflows.DecisionAlwaysAllow, Rules: []string{"Bash(git push:*)"}, By: "alice"})
	refused(t, err, "no allow rule silences", "always_allow of a force push")
	// The CLI refuses --always before sending, by Update or signal.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, "{}\n", 0o644)
	common := []string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default"}
	sbin := buildStarter(t)
	for _, extra := range [][]string{nil, {"--signal"}} {
		out, err := runStarter(t, sbin, dir, append(append(common, "approvals", "approve", id, "f1", "--always", "--rule", "Bash(git push:*)"), extra...)...)
		if err == nil || !strings.Contains(out+err.Error(), "no allow rule silences") {
			t.Errorf("starter approve --always %v of a force push: %v\n%s", extra, err, out)
		}
	}
	if ps := waitPending(t, cl, id, 2); ps[0].CallID != "f1" {
		t.Fatalf("pending = %+v", ps)
	}
	if _, err := cl.ApproveListed(ctx, id, ps[1], workflows.Approval{Decision: workflows.DecisionAlwaysAllow, By: "alice"}); err != nil {
		t.Fatalf("control: always_allow of an ordinary ask: %v", err)
	}
	left := waitPending(t, cl, id, 1)
	if _, err := cl.ApproveListed(ctx, id, left[0], workflows.Approval{Decision: workflows.DecisionDeny, By: "alice", Reason: "no force pushes"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// TestOperatorAnswersWithInboxUsers: with inbox users configured, the
// operator key's name may answer every call (the starter binary, with
// the config's users checked first, and the workflow's approvers, which
// the config's client records). Control: an inbox user whose roles do
// not cover the call is refused, and the refusal names the roles.
func TestOperatorAnswersWithInboxUsers(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	inbox := config.Inbox{
		Users: map[string]config.InboxUser{"alice": {Token: "tok-a", Roles: []string{"k8s"}}, "bob": {Token: "tok-b"}},
		Roles: map[string]config.InboxRole{"k8s": {Allow: []string{"Bash(kubectl:*)"}}},
	}
	approvers, err := client.Approvers(inbox)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 120*time.Second)
	s := script(t, "steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch by-operator\"}}]\n  - text: done\n")
	id := "operator-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Approvers: approvers, Workdir: workdir}); err != nil {
		t.Fatal(err)
	}
	p := waitPending(t, cl, id, 1)[0]
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, "inbox:\n  users:\n    alice: {token: tok-a, roles: [k8s]}\n    bob: {token: tok-b}\n  roles:\n    k8s: {allow: [\"Bash(kubectl:*)\"]}\n", 0o600)
	common := []string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default"}
	sbin := buildStarter(t)
	out, err := runStarter(t, sbin, dir, append(common, "approvals", "approve", id, "c1", "--by", "alice")...)
	if err == nil || !strings.Contains(out+err.Error(), "roles of inbox user \"alice\"") {
		t.Errorf("control: approve --by alice (roles k8s): %v\n%s", err, out)
	}
	// The workflow refuses her too (the library skips the CLI's check).
	_, err = cl.ApproveListed(ctx, id, p, workflows.Approval{Decision: workflows.DecisionAllow, By: "alice"})
	refused(t, err, "alice's roles do not cover", "library allow by alice")
	if out, err := runStarter(t, sbin, dir, append(common, "approvals", "approve", id, "c1", "--by", "operator", "--reason", "on call")...); err != nil {
		t.Fatalf("approve --by operator: %v\n%s", err, out)
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "by-operator")); err != nil {
		t.Fatalf("the call the operator allowed did not run: %v", err)
	}
	answeredEvent(t, cl, id, "c1", "allow by operator: on call")
}

// entryHTML is the inbox page's entry of call (its <li>).
func entryHTML(page, call string) string {
	for _, part := range strings.Split(page, `<li class="entry`)[1:] {
		if strings.Contains(part, `data-call="`+call+`"`) {
			return part
		}
	}
	return ""
}

// TestInboxQuorumReasonAndOffers: the inbox shows a two-person entry's
// count ("1 of 2 approvals: alice") and that a reason is required, takes a
// reason with an allow (refusing an allow without one), counts the same
// user once, and offers no always-allow for a call no rule silences nor
// for a quorum call, and refuses one posted anyway. Control: an ordinary
// ask of the same turn offers always-allow.
func TestInboxQuorumReasonAndOffers(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 120*time.Second)
	srv, err := inbox.New(inbox.Config{Client: cl, Refresh: time.Second, Content: env.store,
		Users: map[string]config.InboxUser{"alice": {Token: "alice-token"}, "bob": {Token: "bob-token"}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	s := script(t, `
steps:
  - tool_calls:
      - {id: q1, name: Bash, input: {command: "touch two-person"}}
      - {id: f1, name: Bash, input: {command: "git push --force origin main"}}
      - {id: n1, name: Bash, input: {command: "npm run build"}}
  - text: done
`)
	pc, err := permission.Policy{Quorum: []permission.QuorumRule{{Rule: "Bash(touch:*)", Approvals: 2, RequireReason: true}}}.Context()
	if err != nil {
		t.Fatal(err)
	}
	id := "inbox-quorum-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: pc, Workdir: workdir}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 3)
	waitListed(t, ctx, cl, id)
	page := func() string {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+"/?workflow="+id, nil)
		req.Header.Set("Authorization", "Bearer alice-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	pg := page()
	q, f, n := entryHTML(pg, "q1"), entryHTML(pg, "f1"), entryHTML(pg, "n1")
	if !strings.Contains(q, "0 of 2 approvals") || !strings.Contains(q, "reason required") || strings.Contains(q, `data-act="always"`) {
		t.Errorf("quorum entry: want 0 of 2, reason required, no always-allow:\n%s", q)
	}
	if !strings.Contains(f, "no allow rule can silence this call") || strings.Contains(f, `data-act="always"`) {
		t.Errorf("force-push entry offers always-allow:\n%s", f)
	}
	if !strings.Contains(n, `data-act="always"`) || !strings.Contains(n, "Bash(npm run:*)") {
		t.Errorf("control: the ordinary ask offers no always-allow:\n%s", n)
	}
	post := func(token, path string, body map[string]any) (int, string) {
		return apiPost(t, hs.URL+path, token, body)
	}
	code, body := post("alice-token", "/api/approve", map[string]any{"workflow_id": id, "call_id": "f1", "hash": ps[1].Hash,
		"decision": "always_allow", "rules": []string{"Bash(git push:*)"}})
	if code != http.StatusBadRequest || !strings.Contains(body, "no allow rule silences") {
		t.Errorf("always_allow of a force push: %d %s, want 400", code, body)
	}
	if code, body := post("alice-token", "/api/approve", map[string]any{"workflow_id": id, "call_id": "q1", "hash": ps[0].Hash}); code != http.StatusBadRequest || !strings.Contains(body, "needs a reason") {
		t.Errorf("allow without a reason: %d %s, want 400", code, body)
	}
	if code, body := post("alice-token", "/api/approve", map[string]any{"workflow_id": id, "call_id": "q1", "hash": ps[0].Hash, "reason": "CHG-1"}); code != 200 {
		t.Fatalf("alice's allow with a reason: %d %s", code, body)
	}
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("last q1 entry:\n%s", last)
		}
	}()
	waitFor(t, ctx, func() bool { last = entryHTML(page(), "q1"); return strings.Contains(last, "1 of 2 approvals: alice") })
	if code, body := post("alice-token", "/api/approve", map[string]any{"workflow_id": id, "call_id": "q1", "hash": ps[0].Hash, "reason": "again"}); code != http.StatusConflict || !strings.Contains(body, "already allowed") {
		t.Errorf("alice again: %d %s, want 409", code, body)
	}
	if _, err := os.Stat(filepath.Join(workdir, "two-person")); err == nil {
		t.Fatal("ran with one approver")
	}
	if code, body := post("bob-token", "/api/approve", map[string]any{"workflow_id": id, "call_id": "q1", "hash": ps[0].Hash, "reason": "CHG-1 too"}); code != 200 {
		t.Fatalf("bob's allow: %d %s", code, body)
	}
	for i, c := range []string{"f1", "n1"} {
		if code, body := post("alice-token", "/api/deny", map[string]any{"workflow_id": id, "call_id": c, "hash": ps[i+1].Hash, "reason": "no"}); code != 200 {
			t.Fatalf("deny %s: %d %s", c, code, body)
		}
	}
	if _, err := cl.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, "two-person")); err != nil {
		t.Fatalf("did not run after two approvers: %v", err)
	}
	answeredEvent(t, cl, id, "q1", "allow by bob (2 of 2 approvals): CHG-1 too")
}

// TestQuorumThroughWorkerWithKeys: the worker as a user starts it, with
// keys and permission.quorum in its config file. The turn's requester
// (the operator key that ran `starter run`) cannot count, one approver
// key counts once (again, or naming someone else, which the frontend
// refuses), and a second key's allow runs the call.
func TestQuorumThroughWorkerWithKeys(t *testing.T) {
	ctx := ctxT(t, 4*time.Minute)
	wbin, sbin := buildWorker(t), buildStarter(t)
	dir := t.TempDir()
	dataDir, workdir := filepath.Join(dir, "data"), filepath.Join(dir, "work")
	if err := os.MkdirAll(workdir, 0o755); err != nil {
		t.Fatal(err)
	}
	port, uiPort := freePort(t), freePort(t)
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, fmt.Sprintf(`server: {data_dir: %q, port: %d, ui_port: %d}
worker: {workdir: %q, task_queue: quorum}
metrics: {addr: "off"}
permission:
  quorum:
    - {rule: "Bash(touch:*)", approvals: 2}
`, dataDir, port, uiPort, workdir), 0o644)
	proc, _ := startEmbedded(t, wbin, dir, "--config", cfg)
	defer killProcess(t, proc)
	starter := func(args ...string) (string, error) {
		return runStarter(t, sbin, dir, append([]string{"--config", cfg}, args...)...)
	}
	scriptFile := filepath.Join(dir, "turn.yaml")
	writeFile(t, scriptFile, "prompt: quorum\nsteps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch two-keys\"}}]\n  - text: done\n", 0o644)
	if out, err := starter("run", "--script", scriptFile, "--workflow-id", "quorum-keys", "--detach"); err != nil {
		t.Fatalf("starter run: %v\n%s", err, out)
	}
	for _, name := range []string{"carol", "dave"} {
		if out, err := starter("keys", "create", name, "--role", "approver"); err != nil {
			t.Fatalf("keys create %s: %v\n%s", name, err, out)
		}
	}
	keyDir := filepath.Join(dataDir, "auth")
	waitFor(t, ctx, func() bool {
		out, err := starter("approvals", "list", "--workflow", "quorum-keys")
		return err == nil && strings.Contains(out, "approval (0 of 2)")
	})
	approve := func(key string, args ...string) (string, error) {
		return starter(append([]string{"--key-file", filepath.Join(keyDir, key+".key"), "approvals", "approve", "quorum-keys", "c1"}, args...)...)
	}
	if out, err := approve("operator"); err == nil || !strings.Contains(out+err.Error(), "requester's allow never counts") {
		t.Errorf("the requester's allow: %v\n%s", err, out)
	}
	if out, err := approve("carol", "--reason", "checked"); err != nil || !strings.Contains(out, "allow (1 of 2 approvals)") {
		t.Fatalf("carol: %v\n%s (want it to say 1 of 2)", err, out)
	}
	if out, err := approve("carol"); err == nil || !strings.Contains(out+err.Error(), "already allowed it") {
		t.Errorf("carol again: %v\n%s", err, out)
	}
	if out, err := approve("carol", "--by", "dave"); err == nil || !strings.Contains(out+err.Error(), "the key is carol's") {
		t.Errorf("carol's key naming dave: %v\n%s", err, out)
	}
	out, err := starter("approvals", "list", "--workflow", "quorum-keys")
	if err != nil || !strings.Contains(out, "approval (1 of 2)") {
		t.Fatalf("after carol: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(workdir, "two-keys")); err == nil {
		t.Fatal("the call ran with one approver")
	}
	if out, err := approve("dave"); err != nil {
		t.Fatalf("dave: %v\n%s", err, out)
	}
	waitFor(t, ctx, func() bool {
		_, err := os.Stat(filepath.Join(workdir, "two-keys"))
		return err == nil
	})
}
