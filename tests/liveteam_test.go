package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLiveApprovers: the team changes, and the waiting turns follow. A
// turn waits on a call while alice (any call) and bob (kubectl only) are
// approvers; bob's answer is refused (his role does not cover it). The
// worker restarts with a config that removes alice and gives bob every
// call: the store's team is set at start and told to the waiting turn,
// so alice's answer is refused and bob's allows the call; the audit
// names the team version that authorized it. The control is a turn
// started alike that follows no policy store: it keeps the approvers it
// started with, and takes alice's answer, which is the behaviour the
// test catches.
func TestLiveApprovers(t *testing.T) {
	t.Parallel() // its own worker and server; it mostly waits
	r := newSessionRig(t, "inbox:\n  enabled: false\n  users: {alice: {token: t-alice}, bob: {token: t-bob, roles: [k8s]}}\n  roles: {k8s: {allow: [\"Bash(kubectl:*)\"]}}\n")
	for _, u := range []string{"alice", "bob"} {
		r.must("keys", "create", u, "--role", "approver")
	}
	// Approvers answer with a config of their own, without the inbox
	// section (the CLI checks answers against the config's approvers
	// before sending: here only the workflow checks them).
	base, err := os.ReadFile(r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(r.dir, "approver.yaml")
	writeFile(t, mine, strings.Split(string(base), "inbox:")[0], 0o644)
	as := func(u string, args ...string) (string, error) {
		return runStarter(t, r.sbin, r.dir, append([]string{"--config", mine, "--key-file", filepath.Join(r.data, "auth", u+".key")}, args...)...)
	}
	ctx := ctxT(t, 3*time.Minute)
	start := func(id, file string, more ...string) {
		s := r.script(fmt.Sprintf("steps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"touch %s\"}}]\n  - text: done\n", file))
		r.must(append([]string{"run", "--script", s, "--workflow-id", id, "--detach"}, more...)...)
		waitFor(t, ctx, func() bool {
			out, err := r.starter("approvals", "list", "--workflow", id)
			return err == nil && strings.Contains(out, "c1")
		})
	}
	live, fixed := "team-live-"+tag(), "team-fixed-"+tag()
	start(live, "live.txt")
	start(fixed, "fixed.txt", "--no-live-policy")
	if out, err := as("bob", "approvals", "approve", live, "c1"); err == nil || !strings.Contains(out+err.Error(), "roles do not cover") {
		t.Fatalf("bob's answer before his role was granted: %v\n%s", err, out)
	}

	next := strings.Replace(string(base), "users: {alice: {token: t-alice}, bob: {token: t-bob, roles: [k8s]}}", "users: {bob: {token: t-bob}}", 1)
	if next == string(base) {
		t.Fatal("the config did not change")
	}
	writeFile(t, r.cfg, next, 0o644)
	r.sigkill()
	waitFor(t, ctx, func() bool {
		_, evs := r.show(live)
		for _, e := range evs {
			if strings.Contains(e.Text, "approvers (team v2 of") {
				return true
			}
		}
		return false
	})
	out, err := as("alice", "approvals", "approve", live, "c1")
	if err == nil || !strings.Contains(out+err.Error(), `"alice" is not an approver`) {
		t.Fatalf("alice's answer after she was removed: %v\n%s", err, out)
	}
	// The control: the turn that follows no store still takes her answer.
	for _, a := range [][]string{{"alice", fixed}, {"bob", live}} {
		if out, err := as(a[0], "approvals", "approve", a[1], "c1"); err != nil {
			t.Fatalf("%s's answer to %s: %v\n%s", a[0], a[1], err, out)
		}
	}
	for _, f := range []string{"live.txt", "fixed.txt"} {
		waitFor(t, ctx, func() bool { _, err := os.Stat(filepath.Join(r.work, f)); return err == nil })
	}
	audit := r.must("audit", "--workflow", live, "--jsonl")
	if !strings.Contains(audit, `"by":"bob"`) || !strings.Contains(audit, `"team_version":2`) {
		t.Errorf("the audit does not say bob's answer was checked against team v2:\n%s", audit)
	}
}
