package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	tclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/internal/devserver"
	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/telemetry"
)

// connect starts the embedded server (no temporal.address) or reads the
// cluster's connection settings, dials the worker's client and makes
// sure the namespace has warden's search attributes.
func (n *node) connect(ctx context.Context) error {
	n.copts = tclient.Options{Namespace: n.cfg.Namespace(), Logger: sdklog.NewStructuredLogger(n.logger),
		MetricsHandler: metrics.NewSDKHandler(n.reg, metrics.ApprovalRoutes(n.approvals)...)}
	var err error
	if n.cfg.Temporal.Address == "" {
		err = n.embedded(ctx)
	} else {
		err = n.cluster()
	}
	if err != nil {
		return err
	}
	tuneClient(&n.copts, n.cfg)
	if err := n.tracing(ctx); err != nil {
		return err
	}
	if n.c, err = tclient.DialContext(ctx, n.copts); err != nil {
		return fmt.Errorf("dial temporal: %w", err)
	}
	n.onStop(n.c.Close)
	return ensureSearchAttributes(ctx, n.c, n.cfg, n.copts.HostPort)
}

// tracing builds the tracer provider of the config's telemetry section
// and the environment (nothing when traces are off) and puts the SDK's
// tracing interceptor on the worker's client, which the worker and the
// inbox's client inherit. The provider is flushed and shut down after
// the client closes.
func (n *node) tracing(ctx context.Context) error {
	p, err := telemetry.Setup(ctx, n.cfg.Telemetry, "warden-worker", os.Getenv)
	if err != nil || p == nil {
		return err
	}
	i, err := telemetry.Interceptor(p.TracerProvider())
	if err != nil {
		return err
	}
	n.tracer = p
	n.copts.Interceptors = append(n.copts.Interceptors, i)
	n.onStop(func() {
		if err := p.ShutdownWithin(5 * time.Second); err != nil {
			n.logger.Warn("traces not flushed", "error", err)
		}
	})
	fmt.Println("traces           on (OTLP)")
	return nil
}

// embedded starts the embedded server with the keyring that guards it,
// and points the worker's client at it with the worker's key.
func (n *node) embedded(ctx context.Context) error {
	o, err := serverOptions(n.o, n.cfg)
	if err != nil {
		return err
	}
	keys, err := serverAuth(&o, n.cfg)
	if err != nil {
		return err
	}
	if o.Auth != nil {
		n.copts.HeadersProvider = auth.Headers(o.Auth.ClientKey)
		if n.inboxKey, err = keys.Issue("inbox", auth.RoleDelegate); err != nil {
			return err
		}
	}
	srv, err := devserver.Start(ctx, o)
	if err != nil {
		return err
	}
	n.onStop(srv.Stop)
	n.copts.HostPort = srv.Addr()
	fmt.Printf("temporal server  %s (namespace %s, data %s)\n", srv.Addr(), n.cfg.Server.Namespace, srv.DatabasePath())
	if o.Postgres != nil {
		fmt.Printf("persistence      %s\n", srv.Storage())
	}
	if srv.UIAddr() != "" {
		fmt.Printf("web ui           http://%s\n", srv.UIAddr())
	}
	printKeys(keys)
	return nil
}

// cluster takes the cluster's address and credentials from the config,
// and the inbox's delegate key from inbox.key_file.
func (n *node) cluster() error {
	cluster, err := client.ConfigOptions(n.cfg, "")
	if err != nil {
		return err
	}
	n.copts.HostPort, n.copts.ConnectionOptions, n.copts.Credentials = cluster.HostPort, cluster.ConnectionOptions, cluster.Credentials
	n.copts.HeadersProvider = cluster.HeadersProvider
	if f := n.cfg.InboxKeyFile(); n.cfg.Inbox.Enabled && f != "" {
		if n.inboxKey, err = auth.ReadKeyFile(f); err != nil {
			return fmt.Errorf("inbox.key_file: %w", err)
		}
	}
	fmt.Printf("temporal cluster %s (namespace %s)\n", n.cfg.Temporal.Address, n.cfg.Temporal.Namespace)
	return nil
}

// ensureSearchAttributes checks the namespace's search attributes and
// creates the missing ones (warden.EnsureSearchAttributes); when the
// credentials may not, the worker does not start and says which command
// creates them.
func ensureSearchAttributes(ctx context.Context, c tclient.Client, cfg config.Config, address string) error {
	ns := cfg.Namespace()
	created, err := warden.EnsureSearchAttributes(ctx, c, ns)
	var missing *warden.MissingSearchAttributesError
	if errors.As(err, &missing) {
		hint := "with the TLS or API-key flags an administrator of the cluster uses"
		if cfg.Temporal.Address == "" || cfg.Temporal.KeyFile != "" {
			hint = "on a warden server, with --api-key \"$(cat DATA_DIR/auth/operator.key)\" --tls=false"
		}
		return fmt.Errorf("namespace %s lacks warden's search attributes %s, and this worker's credentials may not create them: %w\n"+
			"create them as an administrator of the namespace (%s), then start the worker again:\n  %s\n"+
			"on Temporal Cloud, which refuses the operator service, with tcld (or in the Cloud UI, the namespace's search attributes):\n  %s",
			ns, strings.Join(slices.Sorted(maps.Keys(missing.Missing)), ", "), missing.Err, hint, missing.Command(address), missing.CloudCommand())
	}
	if err != nil {
		return fmt.Errorf("search attributes: %w", err)
	}
	if len(created) > 0 {
		fmt.Printf("search attrs     created %s in namespace %s\n", strings.Join(created, ", "), ns)
	}
	return nil
}
