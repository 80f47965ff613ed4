// Command middleware is a worker that wraps every tool call in two
// middlewares of its own, registered through warden.Options.ToolMiddleware:
//
//   - timing logs each call's tool, id, attempt and duration, and adds
//     the duration to the result's metadata;
//   - redaction rewrites secrets (AWS access keys, GitHub tokens,
//     password=/token=/api_key= values) in the output of Bash and
//     PowerShell before it reaches the workflow history or the model.
//
// The first middleware is the outermost, so timing measures redaction too.
//
//	go run ./examples/middleware --address 127.0.0.1:7233 --task-queue warden
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"time"

	tclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/tools"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "middleware:", err)
		os.Exit(1)
	}
}

func run() error {
	address := flag.String("address", "127.0.0.1:7233", "Temporal frontend address")
	keyFile := flag.String("key-file", os.Getenv("WARDEN_KEY_FILE"), "warden key file, for a server that requires keys (env WARDEN_KEY_FILE)")
	namespace := flag.String("namespace", "default", "Temporal namespace")
	apiKey := flag.String("api-key", os.Getenv("TEMPORAL_API_KEY"), "API key sent over TLS, as Temporal Cloud takes it (env TEMPORAL_API_KEY)")
	queue := flag.String("task-queue", "warden", "task queue to serve")
	contentDir := flag.String("content-dir", ".warden/content", "directory of the content store that keeps conversations out of history (shared by the queue's workers)")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
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
		ToolMiddleware: []middleware.Middleware{timing(logger), redaction()},
		Content:        store,
		Logger:         logger,
	}); err != nil {
		return err
	}
	return w.Run(worker.InterruptCh())
}

// timing logs how long each call took and appends a chunk carrying the
// duration as result metadata ("duration_ms").
func timing(logger *slog.Logger) middleware.Middleware {
	return func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, c middleware.Call) tools.Stream {
			start := time.Now()
			inner := next(ctx, c)
			return func(yield func(tools.Chunk, error) bool) {
				failed := false
				for ch, err := range inner {
					failed = failed || err != nil
					if !yield(ch, err) {
						return
					}
				}
				d := time.Since(start)
				logger.Info("tool call", "tool", c.Name(), "call_id", c.ID, "attempt", c.Attempt,
					"duration", d, "infrastructure_error", failed)
				if !failed {
					yield(tools.Chunk{Metadata: map[string]any{"duration_ms": d.Milliseconds()}}, nil)
				}
			}
		}
	}
}

// secretPatterns returns the patterns of secrets in shell output. Group
// 1, when present, is a prefix to keep (the key of a key=value pair).
func secretPatterns() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`),
		regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`),
		regexp.MustCompile(`(?i)\b((?:password|passwd|secret|token|api[_-]?key)\s*[=:]\s*)\S+`),
	}
}

// redaction rewrites secrets in the chunks of the shell tools (Bash and
// PowerShell). It works per chunk: a secret split across two chunks of a
// streamed output is not seen whole; buffer in your own version if that
// matters.
func redaction() middleware.Middleware {
	patterns := secretPatterns()
	return middleware.MapChunks(func(c middleware.Call, ch tools.Chunk) tools.Chunk {
		if name := c.Name(); name == "Bash" || name == "PowerShell" {
			ch.Text = redact(patterns, ch.Text)
		}
		return ch
	})
}

// redact replaces every match of patterns in s with [REDACTED], keeping
// the key of key=value pairs.
func redact(patterns []*regexp.Regexp, s string) string {
	for _, re := range patterns {
		if re.NumSubexp() > 0 {
			s = re.ReplaceAllString(s, "${1}[REDACTED]")
		} else {
			s = re.ReplaceAllString(s, "[REDACTED]")
		}
	}
	return s
}
