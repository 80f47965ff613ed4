// Command custom-tool is a worker of your own that runs warden with your
// tools next to the built-ins: it dials a Temporal cluster, registers
// warden on a worker with the tools of package deploytool, and runs until
// interrupted. Start turns on its task queue with package client or
// `starter run --task-queue`.
//
//	go run ./examples/custom-tool --address 127.0.0.1:7233 --task-queue deploys
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	tclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/examples/custom-tool/deploytool"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "custom-tool:", err)
		os.Exit(1)
	}
}

func run() error {
	address := flag.String("address", "127.0.0.1:7233", "Temporal frontend address")
	keyFile := flag.String("key-file", os.Getenv("WARDEN_KEY_FILE"), "warden key file, for a server that requires keys (env WARDEN_KEY_FILE)")
	namespace := flag.String("namespace", "default", "Temporal namespace")
	apiKey := flag.String("api-key", os.Getenv("TEMPORAL_API_KEY"), "API key sent over TLS, as Temporal Cloud takes it (env TEMPORAL_API_KEY)")
	queue := flag.String("task-queue", "warden", "task queue to serve")
	workdir := flag.String("workdir", "", "workspace directory for the built-in tools (default: current directory)")
	contentDir := flag.String("content-dir", ".warden/content", "directory of the content store that keeps conversations out of history (share it, or use an S3 store, with the other workers of the queue)")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// config.Temporal turns a key file or an API key into the client's
	// credentials.
	conn := config.Temporal{Address: *address, Namespace: *namespace, KeyFile: *keyFile, APIKey: *apiKey}
	opts, err := client.DialOptions(conn)
	if err != nil {
		return err
	}
	opts.Logger = sdklog.NewStructuredLogger(logger)
	c, err := tclient.Dial(opts)
	if err != nil {
		return fmt.Errorf("dial %s: %w", *address, err)
	}
	defer c.Close()

	// Before the worker starts: the namespace needs warden's search
	// attributes (waiting turns set them; listings query them). This
	// creates the missing ones, or fails with the commands to run.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if created, err := warden.EnsureSearchAttributes(ctx, c, *namespace); err != nil {
		return err
	} else if len(created) > 0 {
		logger.Warn("created warden's search attributes", "namespace", *namespace, "created", created)
	}

	store, err := content.NewFS(*contentDir)
	if err != nil {
		return err
	}
	w := worker.New(c, *queue, worker.Options{})
	if _, err := warden.Register(w, warden.Options{
		Tools:   deploytool.Tools(),
		Workdir: *workdir,
		Content: store,
		Logger:  logger,
	}); err != nil {
		return err
	}
	return w.Run(worker.InterruptCh())
}
