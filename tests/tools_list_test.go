package tests

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/tools"
)

// TestStarterToolsList: `starter tools list` shows the registry of a
// real worker, one with an MCP server and a function tool besides the
// built-ins, each tool with its source and flags, as JSON and as a
// table.
func TestStarterToolsList(t *testing.T) {
	queue := "tq-tools-list-" + tag()
	lookup, err := tools.Func("Lookup", "Look a key up in the inventory.", func(_ context.Context, in struct {
		Key string `json:"key"`
	}) (string, error) {
		return in.Key, nil
	}, tools.WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	startWorkerOn(t, queue, warden.Options{Tools: append(connectEcho(t).Tools(), lookup)})
	ctx := ctxT(t, 90*time.Second)
	waitFor(t, ctx, func() bool {
		resp, err := env.c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		return err == nil && len(resp.GetPollers()) > 0
	})

	dir, sbin := t.TempDir(), buildStarter(t)
	args := append(starterConn(t, dir), "--task-queue", queue, "tools", "list")
	out, err := runStarter(t, sbin, dir, append(args, "--json")...)
	if err != nil {
		t.Fatalf("tools list --json: %v\n%s", err, out)
	}
	var es []tools.Entry
	if err := json.Unmarshal([]byte(out), &es); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkListedTools(t, es)

	out, err = runStarter(t, sbin, dir, args...)
	if err != nil {
		t.Fatalf("tools list: %v\n%s", err, out)
	}
	for _, re := range []string{
		`^task queue ` + regexp.QuoteMeta(queue) + `: worker \S+ answered\n`,
		`(?m)^backend local \(default\): sandbox on: landlock v\d+, `,
		`(?m)^NAME +SOURCE +READ-ONLY +CONCURRENT +EXTERNAL +STATE +NETWORK +DESCRIPTION$`,
		`(?m)^mcp__echo__echo +mcp:echo +true +false +false +false +policy +Echo the text back\.$`,
		`(?m)^mcp__echo__write_note +mcp:echo +false +false +false +false `,
		`(?m)^Lookup +function +true +true +false +false +policy +Look a key up in the inventory\.$`,
		`(?m)^Bash +builtin +false +false +false +false `,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output does not match %s:\n%s", re, out)
		}
	}
}

// TestStarterToolsListSandboxOff: a worker whose local backend runs
// tools unsandboxed says so in `starter tools list`, with its protected
// paths.
func TestStarterToolsListSandboxOff(t *testing.T) {
	queue := "tq-tools-off-" + tag()
	startWorkerOn(t, queue, warden.Options{Backends: map[string]backend.Backend{"local": &local.Backend{Unsandboxed: true}},
		Protected: []string{"/srv/warden/data{,/**}"}})
	ctx := ctxT(t, 90*time.Second)
	waitFor(t, ctx, func() bool {
		resp, err := env.c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		return err == nil && len(resp.GetPollers()) > 0
	})
	dir := t.TempDir()
	out, err := runStarter(t, buildStarter(t), dir, append(starterConn(t, dir), "--task-queue", queue, "tools", "list")...)
	if err != nil {
		t.Fatalf("tools list: %v\n%s", err, out)
	}
	for _, want := range []string{
		"backend local (default): sandbox OFF (backend.local.sandbox: off): tools run as the worker's user, with its files and network\n",
		"protected: /srv/warden/data{,/**}\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestStarterToolsListNoWorker: a queue no worker polls is an error
// that says so at once, without waiting for an answer.
func TestStarterToolsListNoWorker(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	args := append(starterConn(t, dir), "--task-queue", "tq-nobody-"+tag(), "tools", "list", "--wait", "30s")
	out, err := runStarter(t, buildStarter(t), dir, args...)
	if err == nil || !strings.Contains(err.Error(), `no worker polls task queue "tq-nobody-`) {
		t.Errorf("tools list on an empty queue: %v\n%s", err, out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the empty queue took %s to report", d)
	}
}

// starterConn writes an empty config in dir and returns the starter
// flags that reach the tests' server with it.
func starterConn(t *testing.T, dir string) []string {
	t.Helper()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", cfg, "--address", env.srv.Addr(), "--namespace", "default"}
}

// TestStarterToolsListStoppedWorker: the server lists a stopped worker
// among the queue's pollers for a few minutes; the listing then times
// out and the error says that no worker took it.
func TestStarterToolsListStoppedWorker(t *testing.T) {
	queue := "tq-tools-stopped-" + tag()
	w := worker.New(env.c, queue, worker.Options{})
	if _, err := warden.Register(w, warden.Options{Workdir: t.TempDir(), Content: env.store}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 60*time.Second)
	waitFor(t, ctx, func() bool {
		resp, err := env.c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		return err == nil && len(resp.GetPollers()) > 0
	})
	w.Stop()
	_, err := client.New(env.c, queue).Tools(ctx, 3*time.Second)
	if !errors.Is(err, client.ErrNoWorker) || !strings.Contains(err.Error(), "took the tools listing") {
		t.Fatalf("listing on a stopped worker's queue: %v", err)
	}
}

// checkListedTools checks the registry of TestStarterToolsList's worker:
// the built-ins, the echo server's tools and Lookup, in that order, each
// with its source and flags.
func checkListedTools(t *testing.T, es []tools.Entry) {
	t.Helper()
	byName := map[string]tools.Entry{}
	var names []string
	for _, e := range es {
		byName[e.Name] = e
		names = append(names, e.Name)
	}
	if len(es) != len(tools.Builtins())+5+1 || names[0] != "Bash" || names[len(names)-1] != "Lookup" {
		t.Fatalf("tools = %v", names)
	}
	type want struct {
		source                       string
		readOnly, concurrent, extern bool
	}
	for name, w := range map[string]want{
		"Bash":                  {tools.SourceBuiltin, false, false, false},
		"Read":                  {tools.SourceBuiltin, true, true, false},
		"AskUser":               {tools.SourceBuiltin, true, true, true},
		"mcp__echo__echo":       {"mcp:echo", true, false, false},
		"mcp__echo__write_note": {"mcp:echo", false, false, false},
		"mcp__echo__info":       {"mcp:echo", true, false, false},
		"Lookup":                {tools.SourceFunction, true, true, false},
	} {
		e, ok := byName[name]
		if !ok {
			t.Errorf("%s is not listed", name)
			continue
		}
		if got := (want{e.Source, e.ReadOnly, e.ConcurrencySafe, e.External}); got != w {
			t.Errorf("%s = %+v, want %+v", name, got, w)
		}
		if len(e.InputSchema) == 0 || e.Description == "" {
			t.Errorf("%s has no schema or description: %+v", name, e.Info)
		}
	}
}
