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
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/internal/devserver"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/workflows"
)

// env is the shared server of this test binary.
var env struct {
	srv    *devserver.Server
	c      tclient.Client
	binDir string
	// prebuilt is $WARDEN_TEST_BINS: a directory where scripts/test.sh
	// built cmd/worker and cmd/starter from this tree once for every go
	// test process of the run ("": each process links its own).
	prebuilt string
	// store is the content store every worker of the tests shares
	// (in-process ones directly, worker processes through contentDir).
	store      *content.FS
	contentDir string
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
	env.prebuilt = os.Getenv("WARDEN_TEST_BINS")
	env.contentDir = filepath.Join(dir, "content")
	if env.store, err = content.NewFS(env.contentDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
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
func startWorker(t testing.TB, o warden.Options) *client.Client {
	t.Helper()
	return startWorkerOn(t, "tq-"+t.Name(), o)
}

// startWorkerOn is startWorker on the given task queue (a test with two
// differently configured workers).
func startWorkerOn(t testing.TB, queue string, o warden.Options) *client.Client {
	t.Helper()
	if o.Workdir == "" {
		o.Workdir = t.TempDir()
	}
	if o.Content == nil {
		o.Content = env.store
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
	// The tests share one namespace, where the default policy store would
	// run on the queue of the first test that made it: a test that wants
	// live policy names its own store (TestStarterFollowsLivePolicyByDefault
	// tests the default).
	cl.LivePolicy = client.NoLivePolicy
	return cl
}

// buildWorker compiles cmd/worker once per test binary.
func buildWorker(t testing.TB) string {
	t.Helper()
	if bin := prebuiltBin("worker"); bin != "" {
		return bin
	}
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

// prebuiltBin is $WARDEN_TEST_BINS/name when the run built it ("":
// build it here).
func prebuiltBin(name string) string {
	if env.prebuilt == "" {
		return ""
	}
	bin := filepath.Join(env.prebuilt, name)
	if _, err := os.Stat(bin); err != nil {
		return ""
	}
	return bin
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startWorkerless returns a client for a queue served by another process.
func startWorkerless(queue string) *client.Client {
	cl := client.New(env.c, queue)
	cl.PollInterval = 50 * time.Millisecond
	cl.LivePolicy = client.NoLivePolicy // as startWorkerOn
	return cl
}

// contentConfig is the config line that points a worker process at the
// tests' shared content store.
func contentConfig() string {
	return fmt.Sprintf("content: {dir: %q}\n", env.contentDir)
}

// conversation reads a finished turn's whole conversation from the shared
// store (the result carries only its head and the messages after it).
func conversation(res workflows.TurnResult) []model.Message {
	if res.Conversation == "" {
		return res.Messages
	}
	// The head is a content id: turns with identical conversations share
	// it, and any of them holds the same content.
	matches, _ := filepath.Glob(filepath.Join(env.contentDir, "turns", "*", res.Conversation))
	if len(matches) == 0 {
		panic(fmt.Sprintf("conversation head %s not found in the store", res.Conversation))
	}
	turn, err := content.UnescapeTurn(filepath.Base(filepath.Dir(matches[0])))
	if err != nil {
		panic(err)
	}
	l := &content.Log{Store: env.store, CacheBytes: -1}
	msgs, err := l.Load(context.Background(), turn, res.Conversation)
	if err != nil {
		panic(err)
	}
	for _, m := range res.Messages {
		r, err := l.Resolve(context.Background(), turn, m)
		if err != nil {
			panic(err)
		}
		msgs = append(msgs, r)
	}
	return msgs
}
