package config

import (
	"cmp"
	"fmt"
)

// EnvWebhookSecret names the environment variable that, when set,
// replaces notify.secret (FromEnv reads it; Apply lays it over the file).
const EnvWebhookSecret = "WARDEN_WEBHOOK_SECRET"

// Overrides are settings given on a command line or in the environment.
// Each non-zero field replaces the config file's value (see Apply); the
// zero value changes nothing.
type Overrides struct {
	// DataDir, Port, UIPort and LogLevel are the embedded server's
	// server.data_dir, server.port, server.ui_port (nil: unset; 0 turns
	// the UI off) and server.log_level.
	DataDir  string
	Port     int
	UIPort   *int
	LogLevel string
	// Address joins a cluster (temporal.address). Namespace sets both
	// server.namespace and temporal.namespace.
	Address, Namespace string
	// TLSCert, TLSKey, TLSCA, APIKey and KeyFile are the temporal.*
	// credentials of the same names.
	TLSCert, TLSKey, TLSCA, APIKey, KeyFile string
	// TaskQueue and Workdir are worker.task_queue and worker.workdir.
	TaskQueue, Workdir string
	// Backend is backend.default; docker or e2b also enables that backend.
	Backend string
	// MetricsAddr is metrics.addr.
	MetricsAddr string
	// Inbox is inbox.enabled (nil: unset); InboxListen is inbox.listen.
	Inbox       *bool
	InboxListen string
	// WebhookSecret is notify.secret.
	WebhookSecret string
	// DemoScript is demo.script.
	DemoScript string
}

// FromEnv reads the overrides of the environment through getenv
// (os.Getenv): TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS_CERT,
// TEMPORAL_TLS_KEY, TEMPORAL_TLS_CA, TEMPORAL_API_KEY, WARDEN_KEY_FILE and
// WARDEN_WEBHOOK_SECRET.
func FromEnv(getenv func(string) string) Overrides {
	return Overrides{
		Address:       getenv("TEMPORAL_ADDRESS"),
		Namespace:     getenv("TEMPORAL_NAMESPACE"),
		TLSCert:       getenv("TEMPORAL_TLS_CERT"),
		TLSKey:        getenv("TEMPORAL_TLS_KEY"),
		TLSCA:         getenv("TEMPORAL_TLS_CA"),
		APIKey:        getenv("TEMPORAL_API_KEY"),
		KeyFile:       getenv("WARDEN_KEY_FILE"),
		WebhookSecret: getenv(EnvWebhookSecret),
	}
}

// Apply sets the non-zero fields of o on c.
func (c *Config) Apply(o Overrides) {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.Server.DataDir, o.DataDir)
	if o.Port != 0 {
		c.Server.Port = o.Port
	}
	if o.UIPort != nil {
		c.Server.UIPort = *o.UIPort
	}
	set(&c.Server.LogLevel, o.LogLevel)
	set(&c.Temporal.Address, o.Address)
	if o.Namespace != "" {
		c.Server.Namespace, c.Temporal.Namespace = o.Namespace, o.Namespace
	}
	set(&c.Temporal.TLSCert, o.TLSCert)
	set(&c.Temporal.TLSKey, o.TLSKey)
	set(&c.Temporal.TLSCA, o.TLSCA)
	set(&c.Temporal.APIKey, o.APIKey)
	set(&c.Temporal.KeyFile, o.KeyFile)
	set(&c.Worker.TaskQueue, o.TaskQueue)
	set(&c.Worker.Workdir, o.Workdir)
	switch o.Backend {
	case "":
	case "docker":
		c.Backend.Default, c.Backend.Docker.Enabled = o.Backend, true
	case "e2b":
		c.Backend.Default, c.Backend.E2B.Enabled = o.Backend, true
	default:
		c.Backend.Default = o.Backend
	}
	set(&c.Metrics.Addr, o.MetricsAddr)
	if o.Inbox != nil {
		c.Inbox.Enabled = *o.Inbox
	}
	set(&c.Inbox.Listen, o.InboxListen)
	set(&c.Notify.Secret, o.WebhookSecret)
	set(&c.Demo.Script, o.DemoScript)
}

// Resolve is the config of a worker: the file at path (see Load), the
// environment's overrides (env, from FromEnv) over it and flags over
// both, validated.
func Resolve(path string, env, flags Overrides) (Config, error) {
	c, err := Load(path)
	if err != nil {
		return c, err
	}
	c.Apply(env)
	c.Apply(flags)
	return c, c.Validate()
}

// ResolveClient is the config of a client of the worker (starter), as
// Resolve but for the address: flags.Address, else env.Address, is only
// the frontend the client dials (returned, "" when neither is set), not
// temporal.address, so the namespace and the operator key stay those of
// the embedded server the config describes. It fills Temporal.KeyFile
// with ResolveKeyFile.
func ResolveClient(path string, env, flags Overrides) (Config, string, error) {
	c, err := Load(path)
	if err != nil {
		return c, "", err
	}
	address := cmp.Or(flags.Address, env.Address)
	env.Address, flags.Address = "", ""
	c.Apply(env)
	c.Apply(flags)
	c.ResolveKeyFile(address)
	return c, address, nil
}

// Frontend is the address a client of c dials: address when given, else
// temporal.address, else the embedded server's 127.0.0.1:server.port.
func (c Config) Frontend(address string) string {
	switch {
	case address != "":
		return address
	case c.Temporal.Address != "":
		return c.Temporal.Address
	}
	return fmt.Sprintf("127.0.0.1:%d", c.Server.Port)
}
