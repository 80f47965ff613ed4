package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// upgradeFrom is the commit the upgrade test builds its old worker from:
// the workflow as it was before the verdict-shaped sandbox profiles, the
// wait that continues as new, durable notifications and the Prepare
// markers that record only the tool's flags (and before the local
// sandbox itself, so the old worker runs tools unconfined). Move it
// forward only to a commit whose turns a deployed warden may still hold.
const upgradeFrom = "c43866a827ff531cbbe7629130eb3b9ba4b8823e"

// buildOldWorker builds cmd/worker of upgradeFrom from a git worktree of
// this repository and returns the binary. A missing commit fails the
// test: CI's clone has the whole history, and a shallow clone must be
// deepened (git fetch --unshallow) rather than the test skipped.
func buildOldWorker(t *testing.T, commit string) string {
	t.Helper()
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", ".."}, args...)...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return strings.TrimSpace(string(out)), nil
	}
	if _, err := git("cat-file", "-e", commit+"^{commit}"); err != nil {
		shallow, _ := git("rev-parse", "--is-shallow-repository")
		t.Fatalf("the old worker's commit %s is not in this clone (shallow: %s); the upgrade test needs the "+
			"repository's history: git fetch --unshallow (or clone without --depth): %v", commit, shallow, err)
	}
	src := filepath.Join(t.TempDir(), "warden-"+commit[:12])
	if _, err := git("worktree", "add", "--detach", src, commit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := git("worktree", "remove", "--force", src); err != nil {
			t.Logf("removing the old worker's worktree: %v", err)
		}
	})
	bin := filepath.Join(env.binDir, "worker-"+commit[:12])
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/worker")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the worker of %s: %v\n%s", commit, err, out)
	}
	t.Logf("built the worker of %s in %s", commit[:12], time.Since(start).Round(time.Millisecond))
	return bin
}

// stopProcess sends SIGTERM to a worker process (a graceful stop, as a
// rollout does) and waits for it to exit; one that does not within a
// minute is killed and fails the test.
func stopProcess(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the worker exited with %v after SIGTERM", err)
		}
	case <-time.After(time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatal("the worker did not stop within a minute of SIGTERM")
	}
	// What is left of its process group goes, as a service manager would
	// see to. Tool processes run in groups of their own: that they die
	// with the worker is for the test to check.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// attemptStarted reports whether the tool activity of a call is pending
// in the started state on the server c talks to.
func attemptStarted(ctx context.Context, c tclient.Client, id, callID string) bool {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return false
	}
	for _, a := range d.GetPendingActivities() {
		if a.GetActivityId() == "tool-"+callID && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
			return true
		}
	}
	return false
}

// openTurnsStartedBefore runs the rollout query of docs/operations.md: the running
// turns whose run started before the given time (the moment the last
// worker of the old build stopped). Those are the runs whose histories
// may hold the old code paths.
func openTurnsStartedBefore(t *testing.T, ctx context.Context, c tclient.Client, before time.Time) []string {
	t.Helper()
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND StartTime < '%s'",
		workflows.TurnWorkflow, before.UTC().Format(time.RFC3339Nano))
	var ids []string
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token})
		if err != nil {
			t.Fatalf("list %s: %v", q, err)
		}
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	slices.Sort(ids)
	return ids
}

// slowCall is how long the call that is running when the old worker
// stops would take.
const slowCall = 20 * time.Second

// upgradeTurn is one turn the upgrade test starts on the old worker.
type upgradeTurn struct {
	name   string // also the side-effect file's name: side-<name>.txt
	script string
	local  bool // model steps as local activities (ModelConfig.Local)
	bypass bool // the turn runs in bypass mode (its calls do not ask)
	// parked is how many entries the turn waits on when the old worker
	// stops (0: it is running a call instead).
	parked int
}

// TestUpgradeWhileTurnsWait starts turns with the worker built from an
// earlier commit (upgradeFrom; tools unsandboxed, older workflow code)
// on an embedded server, parks them on approvals and an AskUser question
// (one after a side effect already ran, one with half of its step
// approved, one in the middle of a slow call), stops that worker
// gracefully and starts the current build on the same data directory
// (local tools in the kernel sandbox). The current worker lists the same
// entries, takes the answers, and every turn completes; each side effect
// (appended to a marker file by the tool) ran exactly once, or not at
// all where it was denied or interrupted. The rollout query of docs/operations.md
// lists exactly the turns of the old build while they wait, and none once
// they finished.
func TestUpgradeWhileTurnsWait(t *testing.T) {
	newBin := buildWorker(t)
	oldBin := buildOldWorker(t, upgradeFrom)
	dataDir, workdir, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	cfg := filepath.Join(cwd, "config.yaml")
	if err := os.WriteFile(cfg, []byte(contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	const queue = "upgrade"
	args := []string{"--config", cfg, "--data-dir", dataDir, "--port", strconv.Itoa(freePort(t)), "--ui-port", "0",
		"--metrics-addr", "off", "--task-queue", queue, "--workdir", workdir}
	keyFile := filepath.Join(dataDir, "auth", "operator.key")
	side := func(name string) string {
		b, err := os.ReadFile(filepath.Join(workdir, "side-"+name+".txt"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return string(b)
	}

	old, addr := startEmbedded(t, oldBin, workdir, args...)
	defer func() { killProcess(t, old) }()
	ctx := ctxT(t, 4*time.Minute)
	c := dialAt(t, addr, keyFile)
	// Answers name the key they are sent with (the server refuses others).
	cl := client.New(c, queue)
	cl.PollInterval, cl.Via = 50*time.Millisecond, "operator"
	cl.LivePolicy = client.NoLivePolicy // the old worker predates the default

	// echo is allowed; printf asks. Each tool appends to side-<turn>.txt
	// in the workdir.
	pc := policy(t, permission.Policy{Allow: []string{"Bash(echo:*)"}})
	turns := []upgradeTurn{
		{name: "approve", parked: 1, script: `
steps:
  - tool_calls: [{id: p1, name: Bash, input: {command: "printf 'approved\n' >> side-approve.txt"}}]
  - text: approve done
`},
		{name: "ask", parked: 1, script: `
steps:
  - tool_calls:
      - id: q1
        name: AskUser
        input:
          questions:
            - question: "Which environment?"
              header: "Env"
              options: [{label: staging, description: "safe"}, {label: prod, description: "careful"}]
  - tool_calls: [{id: p2, name: Bash, input: {command: "printf 'asked\n' >> side-ask.txt"}}]
  - text: ask done
`},
		// A side effect runs on the old worker before the turn parks:
		// the current worker replays it and must not run it again.
		{name: "ran", parked: 1, local: true, script: `
steps:
  - tool_calls: [{id: e1, name: Bash, input: {command: "echo before >> side-ran.txt"}}]
  - tool_calls: [{id: p3, name: Bash, input: {command: "printf 'after\n' >> side-ran.txt"}}]
  - text: ran done
`},
		// One of two calls of a step is approved by the old worker, the
		// other by the current one; both then run on the current one.
		{name: "pair", parked: 2, script: `
steps:
  - tool_calls:
      - {id: a1, name: Bash, input: {command: "printf 'a\n' >> side-pair.txt"}}
      - {id: a2, name: Bash, input: {command: "printf 'b\n' >> side-pair.txt"}}
  - text: pair done
`},
		{name: "deny", parked: 1, script: `
steps:
  - tool_calls: [{id: d1, name: Bash, input: {command: "printf 'denied\n' >> side-deny.txt"}}]
  - text: deny done
`},
		// A side-effecting call is running when the old worker stops: it
		// dies with the worker and is not run again (at most once). It
		// starts last, once the others wait.
		{name: "slow", bypass: true, script: `
steps:
  - tool_calls: [{id: s1, name: Bash, input: {command: "echo begun >> side-slow.txt; sleep ` + strconv.Itoa(int(slowCall/time.Second)) + `; echo end >> side-slow.txt"}}]
  - text: slow done
`},
	}
	ids := map[string]string{}
	var oldIDs []string
	start := func(u upgradeTurn) {
		id := "upgrade-" + u.name + "-" + tag()
		ids[u.name] = id
		oldIDs = append(oldIDs, id)
		in := workflows.TurnInput{Prompt: u.name,
			Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, u.script), Local: u.local}, Permission: pc}
		if u.bypass {
			in.Permission = permission.Context{Mode: permission.ModeBypass}
		}
		if _, err := cl.Start(ctx, id, in); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string][]workflows.Pending{}
	for _, u := range turns {
		if u.parked > 0 {
			start(u)
		}
	}
	for _, u := range turns {
		if u.parked > 0 {
			before[u.name] = waitPending(t, cl, ids[u.name], u.parked)
		}
	}
	if ps := before["ask"]; ps[0].Kind != workflows.PendingExternal || ps[0].Tool != "AskUser" || ps[0].CallID != "q1" {
		t.Fatalf("ask turn waits on %+v, want the AskUser question", ps)
	}
	pair := before["pair"]
	slices.SortFunc(pair, func(a, b workflows.Pending) int { return strings.Compare(a.CallID, b.CallID) })
	if _, err := cl.Approve(ctx, ids["pair"], workflows.Approval{CallID: "a1", Decision: workflows.DecisionAllow, Hash: pair[0].Hash}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, cl, ids["pair"], 1)
	start(turns[len(turns)-1])
	slices.Sort(oldIDs)
	running := ctxT(t, time.Minute)
	for !attemptStarted(running, c, ids["slow"], "s1") || side("slow") != "begun\n" {
		select {
		case <-running.Done():
			page, err := cl.Events(ctx, ids["slow"], 0)
			t.Fatalf("the slow call did not start: side-slow.txt = %q, events %+v (%v)", side("slow"), page.Events, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	begun := time.Now()
	c.Close()
	stopProcess(t, old)
	stopped := time.Now()
	if got := side("ran"); got != "before\n" {
		t.Fatalf("side-ran.txt = %q before the upgrade, want the first call's effect only", got)
	}
	for _, name := range []string{"approve", "ask", "pair", "deny"} {
		if got := side(name); got != "" {
			t.Fatalf("side-%s.txt = %q before any answer reached a call", name, got)
		}
	}

	cur, addr := startEmbedded(t, newBin, workdir, args...)
	defer func() { killProcess(t, cur) }()
	t.Logf("old worker stopped to current worker serving: %s", time.Since(stopped).Round(time.Millisecond))
	c = dialAt(t, addr, keyFile)
	defer c.Close()
	cl = client.New(c, queue)
	cl.PollInterval, cl.Via = 50*time.Millisecond, "operator"
	cl.LivePolicy = client.NoLivePolicy // the old worker predates the default

	if got := openTurnsStartedBefore(t, ctx, c, stopped); !slices.Equal(got, oldIDs) {
		t.Errorf("rollout query lists %v while the old build's turns wait, want %v", got, oldIDs)
	}
	// The current worker shows what the old one recorded: the same
	// entries, with the same hashes, in the turns and in the listing.
	for _, u := range turns {
		if u.parked == 0 {
			continue
		}
		want := before[u.name]
		if u.name == "pair" {
			want = want[1:]
		}
		got := waitPending(t, cl, ids[u.name], len(want))
		for i := range want {
			if got[i].CallID != want[i].CallID || got[i].Hash != want[i].Hash || got[i].Kind != want[i].Kind {
				t.Errorf("%s: pending after the upgrade %s %s %s, before %s %s %s", u.name,
					got[i].CallID, got[i].Kind, got[i].Hash, want[i].CallID, want[i].Kind, want[i].Hash)
			}
		}
	}
	var listed []client.PendingEntry
	waitFor(t, ctx, func() bool {
		var err error
		listed, err = cl.ListPending(ctx, client.Filter{Workflow: "upgrade-"})
		return err == nil && len(listed) == 5
	})

	answered := time.Now()
	if _, err := cl.Approve(ctx, ids["approve"], workflows.Approval{CallID: "p1", Decision: workflows.DecisionAllow,
		Hash: before["approve"][0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.AnswerAskUser(ctx, ids["ask"], "q1", tools.AskUserAnswer{Answers: []tools.AskUserQuestionAnswer{
		{Question: "Which environment?", Selected: []string{"staging"}}}}, "operator"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Approve(ctx, ids["ran"], workflows.Approval{CallID: "p3", Decision: workflows.DecisionAllow,
		Hash: before["ran"][0].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Approve(ctx, ids["pair"], workflows.Approval{CallID: "a2", Decision: workflows.DecisionAllow, Hash: pair[1].Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Approve(ctx, ids["deny"], workflows.Approval{CallID: "d1", Decision: workflows.DecisionDeny,
		Hash: before["deny"][0].Hash, Reason: "not after the upgrade"}); err != nil {
		t.Fatal(err)
	}
	// The asked turn's next call is decided by the current worker: its
	// verdict records a sandbox profile, and it runs in the sandbox.
	ps := waitPending(t, cl, ids["ask"], 1)
	if ps[0].CallID != "p2" || ps[0].Sandbox == "" {
		t.Fatalf("the ask turn's call after the upgrade: %+v, want p2 with a sandbox profile", ps[0])
	}
	if _, err := cl.Approve(ctx, ids["ask"], workflows.Approval{CallID: "p2", Decision: workflows.DecisionAllow, Hash: ps[0].Hash}); err != nil {
		t.Fatal(err)
	}

	for _, u := range turns {
		res, err := cl.Result(ctx, ids[u.name])
		if err != nil {
			t.Fatalf("%s: %v", u.name, err)
		}
		if want := u.name + " done"; res.Answer != want {
			t.Errorf("%s: answer %q, want %q", u.name, res.Answer, want)
		}
		var failed []string
		for _, r := range toolResults(res) {
			if r.IsError {
				failed = append(failed, r.ToolCallID)
			}
		}
		want := map[string][]string{"deny": {"d1"}, "slow": {"s1"}}[u.name]
		if !slices.Equal(failed, want) {
			t.Errorf("%s: failed calls %v, want %v: %+v", u.name, failed, want, toolResults(res))
		}
	}
	t.Logf("first answer to every turn completed: %s", time.Since(answered).Round(time.Millisecond))
	// A process of the slow call that outlived its worker would have
	// written its end by now.
	time.Sleep(time.Until(begun.Add(slowCall + time.Second)))
	for name, want := range map[string]string{
		"approve": "approved\n",
		"ask":     "asked\n",
		"ran":     "before\nafter\n",
		"pair":    "a\nb\n",
		"deny":    "",
		// Begun once on the old worker, killed with it (no end), and not
		// run again by the current one.
		"slow": "begun\n",
	} {
		got := side(name)
		if name == "pair" {
			// The step's two calls may run in either order.
			lines := strings.SplitAfter(got, "\n")
			slices.Sort(lines)
			got = strings.Join(lines, "")
		}
		if got != want {
			t.Errorf("side-%s.txt = %q, want %q", name, got, want)
		}
	}
	// Visibility learns of a closed run shortly after it closed.
	closed := ctxT(t, 30*time.Second)
	for got := openTurnsStartedBefore(t, ctx, c, stopped); len(got) != 0; got = openTurnsStartedBefore(t, ctx, c, stopped) {
		select {
		case <-closed.Done():
			t.Fatalf("rollout query lists %v after every turn finished", got)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
