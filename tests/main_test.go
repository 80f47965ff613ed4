// Package tests holds warden's integration tests: a real Temporal server
// (embedded, in this process), real workers, real processes and files.
package tests

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	tclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/internal/devserver"
	"github.com/wardenhq/warden/workflows"
)

// env is the shared server of this test binary.
var env struct {
	srv    *devserver.Server
	c      tclient.Client
	binDir string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	srv, err := devserver.Start(ctx, devserver.Options{
		Namespace:        "default",
		SearchAttributes: searchAttributes(),
		LogLevel:         "error",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start server:", err)
		return 1
	}
	defer srv.Stop()
	c, err := tclient.DialContext(ctx, tclient.Options{HostPort: srv.Addr(), Namespace: "default", Logger: quietLog()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		return 1
	}
	defer c.Close()
	env.srv, env.c = srv, c
	dir, err := os.MkdirTemp("", "warden-tests-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	env.binDir = dir
	return m.Run()
}

func searchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		workflows.SAPendingCalls: enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
		workflows.SAPendingTools: enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
		workflows.SAWaitingSince: enumspb.INDEXED_VALUE_TYPE_DATETIME,
	}
}

func quietLog() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// startWorker runs an in-process worker on its own task queue and
// returns a client for it.
func startWorker(t *testing.T, o warden.Options) *client.Client {
	t.Helper()
	queue := "tq-" + t.Name()
	if o.Workdir == "" {
		o.Workdir = t.TempDir()
	}
	w := worker.New(env.c, queue, worker.Options{})
	if _, err := warden.Register(w, o); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	cl := client.New(env.c, queue)
	cl.PollInterval = 50 * time.Millisecond
	return cl
}

// buildWorker compiles cmd/worker once per test binary.
func buildWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(env.binDir, "worker")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/worker")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build worker: %v", err)
	}
	return bin
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startWorkerless returns a client for a queue served by another process.
func startWorkerless(queue string) *client.Client {
	cl := client.New(env.c, queue)
	cl.PollInterval = 50 * time.Millisecond
	return cl
}
