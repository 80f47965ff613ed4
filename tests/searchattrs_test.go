package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/internal/devserver"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// createCommand is the command the worker prints for a namespace that
// lacks all of warden's search attributes.
func createCommand(address, namespace string) string {
	return fmt.Sprintf("temporal operator search-attribute create --address %s --namespace %s"+
		" --name WardenPendingCalls --type KeywordList --name WardenPendingTools --type KeywordList --name WardenSessionState --type Keyword --name WardenWaitingSince --type Datetime",
		address, namespace)
}

// TestSearchAttributesAtStart runs the worker binary against a warden
// server whose namespace lacks the search attributes (a database made
// before them, or a namespace created by hand). A worker whose key may
// only read refuses to start and prints the exact command that creates
// them; warden.EnsureSearchAttributes returns the same as a typed error;
// a worker whose key may create them does, and its turns then park
// calls that a visibility query on the attributes finds. An attribute
// of the wrong type is reported, not papered over.
func TestSearchAttributesAtStart(t *testing.T) {
	wbin := buildWorker(t)
	ctx := ctxT(t, 3*time.Minute)
	keys, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := keys.Issue("root", auth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	_, readerKey, err := keys.Create("observer", auth.RoleReader)
	if err != nil {
		t.Fatal(err)
	}
	_, workerKey, err := keys.Create("joiner", auth.RoleWorker)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := devserver.Start(ctx, devserver.Options{Namespace: "default", LogLevel: "error",
		Auth: &devserver.Auth{Keys: keys, ClientKey: admin, UIKey: admin, Policy: auth.Policy{AnswerNames: []string{
			workflows.UpdateApprove, workflows.SignalApprove, workflows.UpdateExternalResult, workflows.SignalExternalResult}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	op, err := tclient.DialContext(ctx, tclient.Options{HostPort: srv.Addr(), Namespace: "default", Logger: quietLog(),
		HeadersProvider: auth.Headers(admin)})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	queue := "tq-sa-" + tag()
	workerArgs := func(key string) []string {
		return []string{"--temporal-address", srv.Addr(), "--key-file", key, "--task-queue", queue,
			"--metrics-addr", "off", "--workdir", t.TempDir()}
	}

	// 1. A reader's key may list the attributes but not create them: the
	// worker does not start, and says how to create them.
	cmd := exec.CommandContext(ctx, wbin, workerArgs(readerKey)...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("worker with a reader key started:\n%s", out)
	}
	for _, want := range []string{createCommand(srv.Addr(), "default"), "may only read", "lacks warden's search attributes"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("worker output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "task queue "+queue) {
		t.Errorf("the refused worker said it was ready:\n%s", out)
	}

	// 2. The library says the same to a program that registers warden on
	// its own worker.
	ro := dialAt(t, srv.Addr(), readerKey)
	defer ro.Close()
	_, err = warden.EnsureSearchAttributes(ctx, ro, "default")
	var missing *warden.MissingSearchAttributesError
	if !errors.As(err, &missing) || len(missing.Missing) != len(warden.SearchAttributes()) || !errors.As(err, new(*serviceerror.PermissionDenied)) {
		t.Fatalf("EnsureSearchAttributes with a reader key: %v, want all missing and permission denied", err)
	}
	if got, want := missing.Command(srv.Addr()), createCommand(srv.Addr(), "default"); got != want {
		t.Errorf("Command = %q, want %q", got, want)
	}
	if !strings.Contains(err.Error(), "temporal operator search-attribute create --namespace default --name WardenPendingCalls --type KeywordList") {
		t.Errorf("error %q does not carry the command", err)
	}

	// 3. A worker key may create them: the worker does, then serves.
	w, log := startLogged(t, wbin, t.TempDir(), workerArgs(workerKey)...)
	defer killProcess(t, w)
	log.wait(t, ctx, "task queue "+queue)
	if want := "created WardenPendingCalls, WardenPendingTools, WardenSessionState, WardenWaitingSince in namespace default"; !strings.Contains(log.String(), want) {
		t.Errorf("worker output lacks %q:\n%s", want, log)
	}
	cl := client.New(op, queue)
	cl.Via = "root"
	cl.PollInterval = 50 * time.Millisecond
	id := "sa-" + tag()
	s := script(t, "steps:\n  - tool_calls: [{id: t1, name: Bash, input: {command: \"touch made\"}}]\n  - text: made\n")
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: policy(t, permission.Policy{Ask: []string{"Bash(touch:*)"}})}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		resp, err := op.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default",
			Query: fmt.Sprintf("WardenPendingTools = 'Bash' AND WardenPendingCalls = 't1' AND WorkflowId = '%s'", id)})
		return err == nil && len(resp.GetExecutions()) == 1
	})
	entries, err := cl.ListPending(ctx, client.Filter{Workflow: id})
	if err != nil || len(entries) != 1 {
		t.Fatalf("listed %+v, %v; want the one waiting call", entries, err)
	}
	if _, err := cl.ApproveListed(ctx, id, entries[0].Pending, workflows.Approval{Decision: workflows.DecisionAllow}); err != nil {
		t.Fatal(err)
	}
	if res, err := cl.Result(ctx, id); err != nil || res.Answer != "made" {
		t.Fatalf("turn: %+v, %v", res, err)
	}

	// 4. Now that they exist, a reader's check passes and creates nothing.
	if created, err := warden.EnsureSearchAttributes(ctx, ro, "default"); err != nil || len(created) != 0 {
		t.Errorf("EnsureSearchAttributes once present: created %v, %v", created, err)
	}

	// 5. An attribute of another type cannot be fixed by creating it.
	if _, err := op.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: "wrong-type", WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		_, err := op.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: "wrong-type",
			SearchAttributes: map[string]enumspb.IndexedValueType{workflows.SAPendingCalls: enumspb.INDEXED_VALUE_TYPE_KEYWORD}})
		return err == nil
	})
	_, err = warden.EnsureSearchAttributes(ctx, op, "wrong-type")
	if err == nil || !strings.Contains(err.Error(), "WardenPendingCalls is Keyword, warden needs KeywordList") {
		t.Errorf("EnsureSearchAttributes with a Keyword WardenPendingCalls: %v", err)
	}
}

// procLog collects a process's output (and copies it to the test's
// stderr unless quiet).
type procLog struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	quiet bool
}

func (l *procLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.quiet {
		_, _ = os.Stderr.Write(p)
	}
	return l.buf.Write(p)
}

func (l *procLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// wait waits until the output contains s.
func (l *procLog) wait(t *testing.T, ctx context.Context, s string) {
	t.Helper()
	for !strings.Contains(l.String(), s) {
		select {
		case <-ctx.Done():
			t.Fatalf("no %q in the output:\n%s", s, tail(l.String(), 4000))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startLogged starts bin in dir in its own process group (killProcess
// ends it) and collects its output.
func startLogged(t *testing.T, bin, dir string, args ...string) (*exec.Cmd, *procLog) {
	t.Helper()
	return startLoggedEnv(t, false, nil, bin, dir, args...)
}

// startLoggedEnv is startLogged with variables added to the test's
// environment, and without copying the output when quiet.
func startLoggedEnv(t *testing.T, quiet bool, env []string, bin, dir string, args ...string) (*exec.Cmd, *procLog) {
	t.Helper()
	log := &procLog{quiet: quiet}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, log
}
