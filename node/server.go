package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/internal/devserver"
)

// serverOptions are the embedded server's options from the config and
// the server flags (--postgres, --ip, --history-shards).
func serverOptions(f Options, cfg config.Config) (devserver.Options, error) {
	o := devserver.Options{
		DataDir: cfg.Server.DataDir, Port: cfg.Server.Port, UIPort: cfg.Server.UIPort, IP: f.IP,
		HistoryShards: f.HistoryShards, Namespace: cfg.Server.Namespace, SearchAttributes: warden.SearchAttributes(),
		DynamicConfig: cfg.Server.DynamicConfig, LogLevel: cfg.Server.LogLevel,
		Retention: cfg.Server.Retention, Archive: cfg.Server.ArchiveDir(),
	}
	if f.Postgres != "" {
		p, err := devserver.ParsePostgresURL(f.Postgres)
		if err != nil {
			return o, err
		}
		if p.Password == "" {
			p.Password = os.Getenv("WARDEN_POSTGRES_PASSWORD")
		}
		o.Postgres = p
	}
	return o, nil
}

// RunServer runs only the Temporal server (and its Web UI), in a process
// of its own that workers join with --temporal-address, until ctx is
// done. It serves the process's Go metrics (and pprof with o.Pprof) on
// the metrics address.
func RunServer(ctx context.Context, cfg config.Config, f Options) error {
	if cfg.Temporal.Address != "" {
		return errors.New("--server-only runs a server: drop --temporal-address (or TEMPORAL_ADDRESS)")
	}
	tuneGC()
	start := time.Now()
	o, err := serverOptions(f, cfg)
	if err != nil {
		return err
	}
	keys, err := serverAuth(&o, cfg)
	if err != nil {
		return err
	}
	workerKey := ""
	if keys != nil && keys.Dir() != "" {
		// Workers on other processes join with this key (--key-file).
		if workerKey, err = keys.Ensure("worker", auth.RoleWorker); err != nil {
			return err
		}
		// A joining worker's inbox answers with this one (inbox.key_file).
		if _, err := keys.Ensure("inbox", auth.RoleDelegate); err != nil {
			return err
		}
	}
	srv, err := devserver.Start(ctx, o)
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Printf("temporal server  %s (namespace %s, %s)\n", srv.Addr(), cfg.Server.Namespace, srv.Storage())
	if srv.UIAddr() != "" {
		fmt.Printf("web ui           http://%s\n", srv.UIAddr())
	}
	printKeys(keys)
	if workerKey != "" {
		fmt.Printf("worker key       %s (workers join with --key-file)\n", workerKey)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	stopMetrics, err := serveMetrics(cfg.Metrics.Addr, reg, f.Pprof)
	if err != nil {
		return err
	}
	defer stopMetrics()
	fmt.Printf("server only      ready in %s; join with --temporal-address %s\n", time.Since(start).Round(time.Millisecond), srv.Addr())
	<-ctx.Done()
	fmt.Println("stopping")
	return nil
}
