package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// readmeFile is the page of the manual with the library example
// (README.md's map links it), and readmeMarker the HTML comment in it
// before the Go block TestLibraryREADME compiles.
const readmeFile = "../docs/library.md"

const readmeMarker = "<!-- readme-library-example: compiled and run by TestLibraryREADME -->"

// freshNamespace registers a namespace of its own on the tests' server,
// without warden's search attributes, and waits until the frontend
// serves it.
func freshNamespace(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	ns := prefix + "-" + tag()
	if _, err := env.c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		_, err := env.c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
		return err == nil
	})
	return ns
}

// customAttributes are the names of the custom search attributes of ns.
func customAttributes(t *testing.T, ctx context.Context, ns string) []string {
	t.Helper()
	resp, err := env.c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(resp.GetCustomAttributes()))
}

// wardenAttributes are the names of warden's search attributes.
func wardenAttributes() []string { return slices.Sorted(maps.Keys(warden.SearchAttributes())) }

// readmeExample returns the Go block that follows readmeMarker in
// readmeFile.
func readmeExample(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), readmeMarker+"\n```go\n")
	if !ok {
		t.Fatalf("%s has no Go block after %q", readmeFile, readmeMarker)
	}
	code, _, ok := strings.Cut(after, "\n```\n")
	if !ok {
		t.Fatalf("%s: the library example's block does not end", readmeFile)
	}
	return code + "\n"
}

// buildUserModule builds main.go (code) as a user's module of its own
// that requires warden, replaced by this repository, and returns the
// binary. The requirements are the repository's, so the build needs no
// network.
func buildUserModule(t *testing.T, code string) string {
	t.Helper()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(mod), "\n")
	if !strings.HasPrefix(first, "module ") {
		t.Fatalf("go.mod starts with %q", first)
	}
	mod = fmt.Appendf(nil, "module example.com/readme\n%s\nrequire github.com/wardenhq/warden v0.0.0\n\nreplace github.com/wardenhq/warden => %s\n", rest, repo)
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": mod, "go.sum": sum, "main.go": []byte(code)} {
		writeFile(t, filepath.Join(dir, name), string(data), 0o644)
	}
	bin := filepath.Join(dir, "readme-example")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	// GOFLAGS keeps the run's own (scripts/test.sh's build flags: with
	// other flags the build would compile every dependency again).
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"), "GOPROXY=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the README's library example does not build: %v\n%s", err, out)
	}
	return bin
}

// TestLibraryREADME compiles the README's library example as a user
// would copy it (a module of its own) and runs it against the tests'
// server on a fresh namespace: it creates warden's search attributes
// there (they are missing before), registers its tool and middleware,
// finds its call through ListPending and approves it with the listed
// hash, and prints the turn's answer.
func TestLibraryREADME(t *testing.T) {
	start := time.Now()
	bin := buildUserModule(t, readmeExample(t))
	t.Logf("built the README example in %s", time.Since(start).Round(time.Second))
	ctx := ctxT(t, 4*time.Minute)
	ns := freshNamespace(t, ctx, "readme")
	if got := customAttributes(t, ctx, ns); len(got) != 0 {
		t.Fatalf("fresh namespace has attributes %v", got)
	}
	cmd := exec.CommandContext(ctx, bin, "--address", env.srv.Addr(), "--namespace", ns)
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("README example: %v\n%s", err, stderr.String())
	}
	// The SDK's default logger writes to stdout too: the answer is a line
	// of its own. The program ends only after it found the call waiting
	// (ListPending) and approved it.
	if !slices.Contains(strings.Split(string(out), "\n"), "Greeted Ada.") {
		t.Errorf("README example did not print the scripted answer:\n%s", out)
	}
	if !strings.Contains(stderr.String(), "tool call Greet g1") {
		t.Errorf("the example's middleware logged no call:\n%s", stderr.String())
	}
	if got := customAttributes(t, ctx, ns); !slices.Equal(got, wardenAttributes()) {
		t.Errorf("namespace attributes after the example: %v, want %v", got, wardenAttributes())
	}
	// The turn ran the tool once, after the approval.
	nc, err := tclient.NewClientFromExisting(env.c, tclient.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	resp, err := nc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns,
		Query: "WorkflowType = '" + workflows.TurnWorkflow + "' AND ExecutionStatus = 'Completed'"})
	if err != nil || len(resp.GetExecutions()) != 1 {
		t.Fatalf("completed turns in %s: %v, %v", ns, resp.GetExecutions(), err)
	}
}

// TestExampleMiddlewareEnsuresAttributes runs examples/middleware on a
// fresh namespace: at start it creates warden's search attributes, and
// its redaction middleware rewrites the secrets a Bash call prints. The
// control: the same call on a worker without the middleware returns
// them as printed.
func TestExampleMiddlewareEnsuresAttributes(t *testing.T) {
	ctx := ctxT(t, 3*time.Minute)
	ns := freshNamespace(t, ctx, "mw")
	queue := "tq-" + t.Name()
	startExample(t, "middleware", false, "--address", env.srv.Addr(), "--namespace", ns, "--task-queue", queue,
		"--content-dir", env.contentDir)
	waitFor(t, ctx, func() bool { return slices.Equal(customAttributes(t, ctx, ns), wardenAttributes()) })

	nc, err := tclient.NewClientFromExisting(env.c, tclient.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cl := client.New(nc, queue)
	cl.LivePolicy = client.NoLivePolicy
	const secret = "AKIAABCDEFGHIJKLMNOP"
	run := func(cl *client.Client) string {
		id := "mw-" + tag()
		in := workflows.TurnInput{
			Model: workflows.ModelConfig{Provider: "scripted", Script: script(t,
				"steps:\n  - tool_calls: [{id: b1, name: Bash, input: {command: \"echo password=hunter2 "+secret+"\"}}]\n  - text: done\n")},
			Permission: policy(t, permission.Policy{Allow: []string{"Bash(echo:*)"}}),
		}
		if _, err := cl.Start(ctx, id, in); err != nil {
			t.Fatal(err)
		}
		res, err := cl.Result(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		rs := toolResults(res)
		if len(rs) != 1 || rs[0].IsError {
			t.Fatalf("tool results %+v", rs)
		}
		return rs[0].Content
	}
	if got := run(cl); strings.Contains(got, "hunter2") || strings.Contains(got, secret) ||
		!strings.Contains(got, "password=[REDACTED] [REDACTED]") {
		t.Errorf("through the example's middleware the call returned %q", got)
	}
	if got := run(startWorker(t, warden.Options{})); !strings.Contains(got, "password=hunter2 "+secret) {
		t.Errorf("without the middleware the call returned %q", got)
	}
}

// TestListPendingWithoutSearchAttributes: on a namespace without
// warden's search attributes, ListPending fails with
// ErrNoSearchAttributes and the commands that create them, for a
// self-run server and for Temporal Cloud; once EnsureSearchAttributes
// made them, the same listing succeeds (the control).
func TestListPendingWithoutSearchAttributes(t *testing.T) {
	ctx := ctxT(t, 2*time.Minute)
	ns := freshNamespace(t, ctx, "nosa")
	nc, err := tclient.NewClientFromExisting(env.c, tclient.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cl := client.New(nc, "")
	cl.Namespace = ns
	_, err = cl.ListPending(ctx, client.Filter{Tool: "Bash"})
	if !errors.Is(err, client.ErrNoSearchAttributes) {
		t.Fatalf("ListPending on %s: %v, want ErrNoSearchAttributes", ns, err)
	}
	for _, want := range []string{
		"temporal operator search-attribute create --namespace " + ns +
			" --name WardenPendingCalls --type KeywordList --name WardenPendingTools --type KeywordList --name WardenSessionState --type Keyword --name WardenWaitingSince --type Datetime",
		"tcld namespace search-attributes add --namespace " + ns +
			` --search-attribute "WardenPendingCalls=KeywordList" --search-attribute "WardenPendingTools=KeywordList" --search-attribute "WardenSessionState=Keyword" --search-attribute "WardenWaitingSince=Datetime"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := warden.EnsureSearchAttributes(ctx, nc, ns); err != nil {
		t.Fatal(err)
	}
	if es, err := cl.ListPending(ctx, client.Filter{Tool: "Bash"}); err != nil || len(es) != 0 {
		t.Fatalf("ListPending once the attributes exist: %v, %v", es, err)
	}
}
