// Command worker runs warden's Temporal worker. With no Temporal address
// it first starts an embedded Temporal server (SQLite in --data-dir) and
// its Web UI in the same process; with --temporal-address it joins an
// existing cluster. It serves Prometheus metrics and can run a demo turn.
// It parses the command line and the config; package node builds and
// runs everything.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/node"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// flags are the command line options that are not config overrides.
type flags struct {
	config     string
	serverOnly bool
	node       node.Options
}

// parse reads the command line; the config is the file's with the
// environment's and the flags' overrides (config.Resolve).
func parse(args []string) (flags, config.Config, error) {
	var f flags
	var o config.Overrides
	var uiPort int
	var inbox bool
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.StringVar(&f.config, "config", "", "config file (default temporal-dev.yaml when present)")
	fs.StringVar(&o.DataDir, "data-dir", "", "embedded server data directory (default ./.warden)")
	fs.IntVar(&o.Port, "port", 0, "embedded server frontend port (default 7233)")
	// The value counts only when the flag is given (fs.Visit below), so
	// its zero default prints no "(default 0)" after the real one.
	fs.IntVar(&uiPort, "ui-port", 0, "Web UI port (default 8233; 0 turns the UI off)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "", "Prometheus /metrics address (default 127.0.0.1:9464; \"off\" disables)")
	fs.BoolVar(&f.node.Pprof, "pprof", false, "also serve Go's pprof profiles under /debug/pprof/ on the metrics address (off by default)")
	fs.BoolVar(&f.serverOnly, "server-only", false, "run only the Temporal server (and Web UI), for workers that join with --temporal-address")
	fs.StringVar(&f.node.Postgres, "postgres", os.Getenv("WARDEN_POSTGRES_URL"), "embedded server on PostgreSQL instead of SQLite: postgres://USER@HOST:PORT/DB (env WARDEN_POSTGRES_URL; password also from WARDEN_POSTGRES_PASSWORD)")
	fs.StringVar(&f.node.IP, "ip", "", "address the embedded server's frontend and UI bind (default 127.0.0.1; 0.0.0.0 for all)")
	fs.IntVar(&f.node.HistoryShards, "history-shards", 0, "embedded server history shards, fixed when its database is created (default 1 on SQLite, 4 on PostgreSQL)")
	fs.StringVar(&o.Address, "temporal-address", "", "join this Temporal cluster instead of embedding a server (env TEMPORAL_ADDRESS)")
	fs.StringVar(&o.Namespace, "namespace", "", "namespace (env TEMPORAL_NAMESPACE)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "client certificate for the cluster (env TEMPORAL_TLS_CERT)")
	fs.StringVar(&o.TLSKey, "tls-key", "", "client key for the cluster (env TEMPORAL_TLS_KEY)")
	fs.StringVar(&o.TLSCA, "tls-ca", "", "CA certificate for the cluster (env TEMPORAL_TLS_CA)")
	fs.StringVar(&o.APIKey, "api-key", "", "API key for a hosted cluster (env TEMPORAL_API_KEY)")
	fs.StringVar(&o.KeyFile, "key-file", "", "warden key to join a warden server with --temporal-address (env WARDEN_KEY_FILE; --server-only writes DATA_DIR/auth/worker.key)")
	fs.StringVar(&o.TaskQueue, "task-queue", "", "task queue (default warden)")
	fs.StringVar(&o.Workdir, "workdir", "", "default workspace directory for tools")
	fs.StringVar(&o.LogLevel, "log-level", "", "embedded server log level")
	fs.StringVar(&o.Backend, "backend", "", "default backend for turns that name none: local, docker or e2b (enables it)")
	fs.BoolVar(&inbox, "inbox", false, "serve the approvals inbox (inbox.enabled)")
	fs.StringVar(&o.InboxListen, "inbox-listen", "", "inbox address (default 127.0.0.1:8234)")
	fs.StringVar(&o.DemoScript, "demo", "", "after start, run a demo turn from this script file and print it")
	fs.BoolVar(&f.node.ExitAfterDemo, "exit-after-demo", false, "stop once the demo turn finished")
	if err := fs.Parse(args); err != nil {
		return f, config.Config{}, err
	}
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "ui-port":
			o.UIPort = &uiPort
		case "inbox":
			o.Inbox = &inbox
		}
	})
	cfg, err := config.Resolve(f.config, config.FromEnv(os.Getenv), o)
	return f, cfg, err
}

func run(args []string) error {
	f, cfg, err := parse(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.serverOnly {
		return node.RunServer(ctx, cfg, f.node)
	}
	return node.Run(ctx, cfg, f.node)
}
