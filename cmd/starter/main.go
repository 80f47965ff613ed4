// Command starter drives warden from the command line: run a scripted
// turn, list tools, check a permission policy, and list or answer
// pending approvals. It links only the Temporal SDK client, never the
// server.
package main

import (
	"context"
	"os"
	"os/signal"
	"os/user"

	"github.com/spf13/cobra"
	tclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

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
	config string
	flags  config.Overrides
	// address is the frontend dial connects to ("" for the config's),
	// set by settings.
	address string
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
	pf.StringVar(&cn.flags.Address, "address", "", "Temporal frontend (default: $TEMPORAL_ADDRESS, else the worker's, 127.0.0.1:PORT from config)")
	pf.StringVar(&cn.flags.Namespace, "namespace", "", "namespace (default $TEMPORAL_NAMESPACE, else from config)")
	pf.StringVar(&cn.flags.TaskQueue, "task-queue", "", "task queue (default from config)")
	pf.StringVar(&cn.flags.APIKey, "api-key", "", "API key for a hosted cluster, sent as a bearer token over TLS (default $TEMPORAL_API_KEY)")
	pf.StringVar(&cn.flags.TLSCert, "tls-cert", "", "client certificate for a cluster that requires one (default $TEMPORAL_TLS_CERT)")
	pf.StringVar(&cn.flags.TLSKey, "tls-key", "", "client certificate's key (default $TEMPORAL_TLS_KEY)")
	pf.StringVar(&cn.flags.TLSCA, "tls-ca", "", "CA certificate the cluster's is signed with (default $TEMPORAL_TLS_CA; else the system's)")
	pf.StringVar(&cn.flags.KeyFile, "key-file", "", "warden key file (default $WARDEN_KEY_FILE, else the operator key in the embedded server's data directory)")
	root.AddCommand(newRunCmd(cn), newToolsCmd(cn), newPermissionCmd(cn), newApprovalsCmd(cn), newAuditCmd(cn), newBenchCmd(cn), newWatchCmd(cn),
		newAskCmd(cn), newExternalCmd(cn), newBatchCmd(cn), newShowCmd(cn), newGCCmd(cn), newKeysCmd(cn), newPolicyCmd(cn), newChatCmd(cn), newBudgetCmd(cn), newSessionCmd(cn))
	return root
}

// settings resolves the config file, the environment and the flags.
func (cn *conn) settings() (config.Config, error) {
	cfg, addr, err := config.ResolveClient(cn.config, config.FromEnv(os.Getenv), cn.flags)
	cn.address = addr
	return cfg, err
}

// dial connects to the same address the worker serves by default.
func (cn *conn) dial(ctx context.Context) (tclient.Client, *client.Client, config.Config, error) {
	cfg, err := cn.settings()
	if err != nil {
		return nil, nil, cfg, err
	}
	c, err := client.Dial(ctx, cfg, cn.address, sdklog.NewStructuredLogger(quiet()))
	if err != nil {
		return nil, nil, cfg, err
	}
	cl := client.New(c, cfg.Worker.TaskQueue)
	cl.Namespace = cfg.Namespace()
	cn.keyName = client.KeyName(cfg.Temporal)
	cl.Via = cn.keyName
	// Turns record the approvers of the config: the workflow checks
	// every answer against them, whichever client sends it.
	if cl.Approvers, err = client.Approvers(cfg.Inbox); err != nil {
		c.Close()
		return nil, nil, cfg, err
	}
	return c, cl, cfg, nil
}
