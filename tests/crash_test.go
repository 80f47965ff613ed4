package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/internal/devserver"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// freePort returns a TCP port free on 127.0.0.1 right now, outside the
// kernel's ephemeral range (devserver.FreePort): the process under test
// binds it later, and an ephemeral port can be taken in between by any
// outgoing connection.
func freePort(t testing.TB) int {
	t.Helper()
	port, err := devserver.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// startEmbedded starts the worker binary with its embedded server and
// waits until it serves; it returns the process and the server address.
func startEmbedded(t testing.TB, bin, dir string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	return startEmbeddedTo(t, bin, dir, os.Stderr, args...)
}

// startEmbeddedTo is startEmbedded with the worker's stderr (its log)
// going to stderr.
func startEmbeddedTo(t testing.TB, bin, dir string, stderr io.Writer, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var srv string
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(os.Stderr, "embedded worker:", line)
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "temporal" && f[1] == "server" {
				srv = f[2]
			}
			if strings.HasPrefix(line, "worker ") {
				addr <- srv
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case a := <-addr:
		return cmd, a
	case <-time.After(90 * time.Second):
		killProcess(t, cmd)
		t.Fatal("embedded worker did not become ready")
	}
	return nil, ""
}

// runStarter runs the starter binary and returns its stdout.
func runStarter(t testing.TB, bin, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("starter %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), err
}

// dialAt dials an embedded worker's server with the key in keyFile (the
// operator key it wrote under its data directory).
func dialAt(t *testing.T, addr, keyFile string) tclient.Client {
	t.Helper()
	o, err := client.DialOptions(config.Temporal{Address: addr, Namespace: "default", KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	o.Logger = quietLog()
	c, err := tclient.DialContext(ctxT(t, 30*time.Second), o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCrashEmbeddedServerSIGKILL parks a turn on a bypass-immune approval
// (rm -rf asks even though an allow rule matches) in a worker process that embeds the server, SIGKILLs that
// process, starts it again on the same data directory, and answers with
// the starter binary: the listing still shows the call, the approved
// command runs exactly once and the turn completes.
func TestCrashEmbeddedServerSIGKILL(t *testing.T) {
	wbin, sbin := buildWorker(t), buildStarter(t)
	dataDir, workdir, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(workdir, "build", "obj"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(cwd, "config.yaml")
	if err := os.WriteFile(cfg, []byte(contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(freePort(t))
	args := []string{"--config", cfg, "--data-dir", dataDir, "--port", port, "--ui-port", "0", "--metrics-addr", "off",
		"--task-queue", "crash", "--workdir", workdir}
	proc, addr := startEmbedded(t, wbin, workdir, args...)
	defer func() { killProcess(t, proc) }()

	ctx := ctxT(t, 3*time.Minute)
	c := dialAt(t, addr, filepath.Join(dataDir, "auth", "operator.key"))
	cl := client.New(c, "crash")
	cl.PollInterval = 50 * time.Millisecond
	s := script(t, "steps:\n  - tool_calls: [{id: rm1, name: Bash, input: {command: \"rm -rf ./build && echo once >> marker.txt\"}}]\n  - text: cleaned\n")
	id := "crash-embedded-" + tag()
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: policy(t, permission.Policy{Allow: []string{"Bash(rm:*)", "Bash(echo:*)"}})}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	if !ps[0].BypassImmune || ps[0].Kind != workflows.PendingApproval {
		t.Fatalf("pending = %+v, want a bypass-immune approval", ps[0])
	}
	c.Close()
	killProcess(t, proc)
	killed := time.Now()
	if _, err := os.Stat(filepath.Join(workdir, "build")); err != nil {
		t.Fatalf("./build went away before the approval: %v", err)
	}

	proc, addr = startEmbedded(t, wbin, workdir, args...)
	t.Logf("SIGKILL to embedded server+worker serving again: %s", time.Since(killed).Round(time.Millisecond))
	common := []string{"--config", cfg, "--address", addr, "--namespace", "default", "--task-queue", "crash",
		"--key-file", filepath.Join(dataDir, "auth", "operator.key")}
	var entries []client.PendingEntry
	waitFor(t, ctx, func() bool {
		out, err := runStarter(t, sbin, cwd, append([]string{"approvals", "list", "--json"}, common...)...)
		if err != nil {
			t.Log(err)
			return false
		}
		if err := json.Unmarshal([]byte(out), &entries); err != nil {
			t.Fatalf("approvals list --json: %v\n%s", err, out)
		}
		return len(entries) == 1
	})
	if e := entries[0]; e.WorkflowID != id || e.CallID != "rm1" || e.Hash != ps[0].Hash || !e.BypassImmune {
		t.Fatalf("listed after the crash: %+v", e)
	}
	t.Logf("SIGKILL to pending listed by the starter: %s", time.Since(killed).Round(time.Millisecond))
	out, err := runStarter(t, sbin, cwd, append([]string{"approvals", "approve", id, "rm1"}, common...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "rm1: allow") {
		t.Errorf("approve printed %q", out)
	}

	c = dialAt(t, addr, filepath.Join(dataDir, "auth", "operator.key"))
	defer c.Close()
	cl = client.New(c, "crash")
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rs := toolResults(res); res.Answer != "cleaned" || len(rs) != 1 || rs[0].IsError {
		t.Fatalf("answer %q, tool results %+v", res.Answer, rs)
	}
	if _, err := os.Stat(filepath.Join(workdir, "build")); !os.IsNotExist(err) {
		t.Errorf("./build still there: %v", err)
	}
	marker, err := os.ReadFile(filepath.Join(workdir, "marker.txt"))
	if err != nil || string(marker) != "once\n" {
		t.Errorf("marker.txt = %q, %v; want the command run exactly once", marker, err)
	}
}

// TestCrashSignalWhileNoWorker: an approval sent as a signal while no
// worker runs is accepted by the server and applied once a worker
// starts again.
func TestCrashSignalWhileNoWorker(t *testing.T) {
	wbin := buildWorker(t)
	queue := "tq-crash-signal-" + tag()
	workdir, cwd := t.TempDir(), t.TempDir()
	cfg := filepath.Join(cwd, "config.yaml")
	if err := os.WriteFile(cfg, []byte(contentConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	worker := func() *exec.Cmd {
		return startProcess(t, wbin, workdir, "--config", cfg, "--temporal-address", env.srv.Addr(), "--namespace", "default",
			"--task-queue", queue, "--metrics-addr", "off", "--workdir", workdir)
	}
	w := worker()
	ctx := ctxT(t, 2*time.Minute)
	cl := startWorkerless(queue)
	s := script(t, "steps:\n  - tool_calls: [{id: t1, name: Bash, input: {command: \"touch approved-by-signal\"}}]\n  - text: applied\n")
	id := "crash-signal-" + tag()
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s}}); err != nil {
		t.Fatal(err)
	}
	ps := waitPending(t, cl, id, 1)
	killProcess(t, w)

	if err := cl.ApproveSignal(ctx, id, workflows.Approval{CallID: "t1", Decision: workflows.DecisionAllow, Hash: ps[0].Hash, By: "signal-test"}); err != nil {
		t.Fatalf("signal with no worker running: %v", err)
	}
	// The server recorded the signal; nothing ran without a worker.
	signalled := false
	for _, e := range history(t, id) {
		if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == workflows.SignalApprove {
			signalled = true
		}
	}
	if !signalled {
		t.Fatal("no signal in history")
	}
	time.Sleep(time.Second)
	if _, err := os.Stat(filepath.Join(workdir, "approved-by-signal")); err == nil {
		t.Fatal("the call ran with no worker")
	}
	d, err := env.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("status with no worker = %v", st)
	}

	restarted := time.Now()
	w = worker()
	defer killProcess(t, w)
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("worker restart to turn completed: %s", time.Since(restarted).Round(time.Millisecond))
	if rs := toolResults(res); res.Answer != "applied" || len(rs) != 1 || rs[0].IsError {
		t.Fatalf("answer %q, tool results %+v", res.Answer, rs)
	}
	if _, err := os.Stat(filepath.Join(workdir, "approved-by-signal")); err != nil {
		t.Errorf("approved call did not run: %v", err)
	}
	page, err := cl.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	answered := false
	for _, e := range page.Events {
		if e.Type == workflows.EventAnswered && e.CallID == "t1" && strings.Contains(e.Text, "allow by signal-test") {
			answered = true
		}
	}
	if !answered {
		t.Errorf("no answered event for the signal: %+v", page.Events)
	}
}
