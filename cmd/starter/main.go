// Command starter drives warden from the command line: run a scripted
// turn, list tools, check a permission policy, and list or answer
// pending approvals. It links only the Temporal SDK client, never the
// server.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"os/user"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		os.Exit(1)
	}
}

// conn holds the connection flags shared by subcommands.
type conn struct {
	config, address, namespace, taskQueue, apiKey, keyFile string
	// keyName is the name of the warden key dial found ("" without one).
	keyName string
}

// by is who an answer names: --by, else the key's name, else the OS user.
func (cn *conn) by(flag string) string {
	if flag != "" {
		return flag
	}
	if cn.keyName != "" {
		return cn.keyName
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

func newRoot() *cobra.Command {
	cn := &conn{}
	root := &cobra.Command{
		Use:           "starter",
		Short:         "Drive warden agent turns and approvals",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&cn.config, "config", "", "config file (default temporal-dev.yaml when present)")
	pf.StringVar(&cn.address, "address", os.Getenv("TEMPORAL_ADDRESS"), "Temporal frontend (default: the worker's, 127.0.0.1:PORT from config)")
	pf.StringVar(&cn.namespace, "namespace", os.Getenv("TEMPORAL_NAMESPACE"), "namespace")
	pf.StringVar(&cn.taskQueue, "task-queue", "", "task queue (default from config)")
	pf.StringVar(&cn.apiKey, "api-key", os.Getenv("TEMPORAL_API_KEY"), "API key for a hosted cluster")
	pf.StringVar(&cn.keyFile, "key-file", "", "warden key file (default $WARDEN_KEY_FILE, else the operator key in the embedded server's data directory)")
	root.AddCommand(newRunCmd(cn), newToolsCmd(), newPermissionCmd(), newApprovalsCmd(cn), newAuditCmd(cn), newBenchCmd(cn), newWatchCmd(cn),
		newAskCmd(cn), newExternalCmd(cn), newBatchCmd(cn), newShowCmd(cn), newGCCmd(cn), newKeysCmd(cn))
	return root
}

// settings resolves the config file plus flags.
func (cn *conn) settings() (config.Config, error) {
	cfg, err := config.Load(cn.config)
	if err != nil {
		return cfg, err
	}
	if cn.namespace != "" {
		cfg.Server.Namespace, cfg.Temporal.Namespace = cn.namespace, cn.namespace
	}
	if cn.taskQueue != "" {
		cfg.Worker.TaskQueue = cn.taskQueue
	}
	if cn.keyFile != "" {
		cfg.Temporal.KeyFile = cn.keyFile
	}
	cfg.ResolveKeyFile(cn.address)
	return cfg, nil
}

// dial connects to the same address the worker serves by default.
func (cn *conn) dial(ctx context.Context) (tclient.Client, *client.Client, config.Config, error) {
	cfg, err := cn.settings()
	if err != nil {
		return nil, nil, cfg, err
	}
	addr := cn.address
	if addr == "" {
		addr = cfg.Temporal.Address
	}
	if addr == "" {
		addr = fmt.Sprintf("127.0.0.1:%d", cfg.Server.Port)
	}
	t := cfg.Temporal
	t.Address, t.Namespace = addr, cfg.Namespace()
	if cn.apiKey != "" {
		t.APIKey = cn.apiKey
	}
	opts, err := t.ClientOptions()
	if err != nil {
		return nil, nil, cfg, err
	}
	opts.Logger = sdklog.NewStructuredLogger(quiet())
	c, err := tclient.DialContext(ctx, opts)
	if err != nil {
		if t.KeyFile == "" && errors.As(err, new(*serviceerror.PermissionDenied)) {
			return nil, nil, cfg, fmt.Errorf("dial %s: %w (pass --key-file or set WARDEN_KEY_FILE; the embedded worker writes DATA_DIR/auth/operator.key)", addr, client.Explain(err))
		}
		return nil, nil, cfg, fmt.Errorf("dial %s: %w", addr, client.Explain(err))
	}
	cl := client.New(c, cfg.Worker.TaskQueue)
	if key, _ := t.Key(); key != "" {
		cn.keyName, _ = auth.NameOf(key)
		cl.Via = cn.keyName
	}
	// Turns record the approvers of the config: the workflow checks
	// every answer against them, whichever client sends it.
	if cl.Approvers, err = cfg.Inbox.Approvers(); err != nil {
		c.Close()
		return nil, nil, cfg, err
	}
	return c, cl, cfg, nil
}
