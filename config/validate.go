package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/permission"
)

// Validate checks values; errors name the key. It checks what the file
// alone can tell: node.Check adds the checks that need the parts that
// run (backend.env, rule examples, compaction, the webhook secret).
func (c Config) Validate() error {
	var errs []error
	for _, section := range []func() []error{c.validateServer, c.validateWorker, c.validateBackend,
		c.validateModels, c.validateTools, c.validatePermission, c.validateContent, c.validateBudgets,
		c.Telemetry.validate} {
		errs = append(errs, section()...)
	}
	return errors.Join(errs...)
}

// validPort reports a port out of range (0 allowed only with zeroOK).
func validPort(key string, p int, zeroOK bool) []error {
	if p < 0 || p > 65535 || (p == 0 && !zeroOK) {
		return []error{fmt.Errorf("%s: %d is not a valid port", key, p)}
	}
	return nil
}

func (c Config) validateServer() []error {
	errs := append(validPort("server.port", c.Server.Port, false), validPort("server.ui_port", c.Server.UIPort, true)...)
	if strings.TrimSpace(c.Server.Namespace) == "" {
		errs = append(errs, errors.New("server.namespace: must not be empty"))
	}
	switch c.Server.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("server.log_level: %q is not one of debug, info, warn, error", c.Server.LogLevel))
	}
	if c.Server.Retention < 0 {
		errs = append(errs, fmt.Errorf("server.retention: %s is negative", c.Server.Retention))
	}
	if c.Server.Retention > 0 && c.Server.Retention < time.Minute {
		errs = append(errs, fmt.Errorf("server.retention: %s is below a minute", c.Server.Retention))
	}
	if a := c.Audit.Stream; a.MaxSizeMB < 0 || a.Keep < 0 || a.Sweep < 0 || a.Interval < 0 {
		errs = append(errs, errors.New("audit.stream: max_size_mb, keep, sweep and interval must not be negative"))
	}
	if s := c.Audit.Stream.Sink; strings.Contains(s, "://") && !slices.ContainsFunc([]string{"http://", "https://", "otlp+http://", "otlp+https://"}, func(p string) bool { return strings.HasPrefix(s, p) }) {
		errs = append(errs, fmt.Errorf("audit.stream.sink: %q: a URL must be http://, https://, otlp+http:// or otlp+https://", s))
	}
	if (c.Temporal.TLSCert == "") != (c.Temporal.TLSKey == "") {
		errs = append(errs, errors.New("temporal.tls_cert and temporal.tls_key: set both or neither"))
	}
	return errs
}

func (c Config) validateWorker() []error {
	var errs []error
	w := c.Worker
	if strings.TrimSpace(w.TaskQueue) == "" {
		errs = append(errs, errors.New("worker.task_queue: must not be empty"))
	}
	if w.StickyCacheSize < 0 {
		errs = append(errs, errors.New("worker.sticky_cache_size: must not be negative"))
	}
	if w.MaxConcurrentActivities < 0 {
		errs = append(errs, errors.New("worker.max_concurrent_activities: must not be negative"))
	}
	if w.WorkflowTaskPollers < 0 || w.WorkflowTaskPollers == 1 {
		errs = append(errs, errors.New("worker.workflow_task_pollers: must be 0 (the default) or at least 2"))
	}
	if w.ActivityTaskPollers < 0 {
		errs = append(errs, errors.New("worker.activity_task_pollers: must not be negative"))
	}
	if w.PollerAutoscaling && (w.WorkflowTaskPollers != 0 || w.ActivityTaskPollers != 0) {
		errs = append(errs, errors.New("worker.poller_autoscaling: set it or the poller counts, not both"))
	}
	switch w.GRPCCompression {
	case "", "gzip", "none":
	default:
		errs = append(errs, fmt.Errorf("worker.grpc_compression: %q is not one of gzip, none", w.GRPCCompression))
	}
	return errs
}

func (c Config) validateBackend() []error {
	var errs []error
	b := c.Backend
	switch {
	case b.Default == "local":
	case b.Default == "docker" && b.Docker.Enabled, b.Default == "e2b" && b.E2B.Enabled:
	default:
		errs = append(errs, fmt.Errorf("backend.default: backend %q is unknown or not enabled (local, docker or e2b with enabled: true)", b.Default))
	}
	if s := b.Local.Sandbox; s != "" && s != "on" && s != "off" {
		errs = append(errs, fmt.Errorf("backend.local.sandbox: %q is not on or off", s))
	}
	for _, l := range b.Local.Off {
		if _, ok := LocalLayers()[l]; !ok {
			names := slices.Sorted(maps.Keys(LocalLayers()))
			errs = append(errs, fmt.Errorf("backend.local.sandbox_off: %q is not a layer (%s)", l, strings.Join(names, ", ")))
		}
	}
	if _, err := b.Local.Limits.Values(); err != nil {
		errs = append(errs, err)
	}
	if n := b.Local.Network; n.Connections < 0 || n.ConnectionsTotal < 0 || n.Refusals < 0 || n.HeaderTimeout < 0 || n.IdleTimeout < 0 {
		errs = append(errs, errors.New("backend.local.network: a bound is negative (0 or left out keeps the default)"))
	}
	if b.Local.GuardMaxDirs < 0 {
		errs = append(errs, errors.New("backend.local.guard_max_dirs: negative (0 or left out keeps the default, 250000)"))
	}
	errs = append(errs, b.validateSecrets()...)
	if b.Docker.Enabled && b.Docker.Image == "" {
		errs = append(errs, errors.New("backend.docker.image: required when docker is enabled"))
	}
	return errs
}

// validateSecrets checks backend.secrets: brokered on the sandboxed
// local backend only, so the others refuse them rather than pass the
// placeholder to a tool no proxy stands in front of.
func (b Backend) validateSecrets() []error {
	if len(b.Secrets) == 0 {
		return nil
	}
	var errs []error
	switch {
	case b.Local.SandboxOff():
		errs = append(errs, errors.New("backend.secrets: brokered only by the sandboxed local backend; backend.local.sandbox is off (a tool process could read the worker's memory and environment)"))
	case b.Docker.Enabled, b.E2B.Enabled:
		errs = append(errs, errors.New("backend.secrets: brokered only by the local backend; turn backend.docker and backend.e2b off, or leave the secrets out (their tools would get neither the value nor a working placeholder)"))
	}
	for _, name := range slices.Sorted(maps.Keys(b.Secrets)) {
		s := b.Secrets[name]
		key := "backend.secrets." + name
		if s.FromEnv == "" {
			errs = append(errs, fmt.Errorf("%s.from_env: required (the worker's environment variable holding the value)", key))
		}
		if len(s.Hosts) == 0 {
			errs = append(errs, fmt.Errorf("%s.hosts: required (the host names whose requests get the value)", key))
		}
		if s.Format != "" && s.Header == "" {
			errs = append(errs, fmt.Errorf("%s.format: needs header", key))
		}
		for _, e := range b.Env {
			if n, _, _ := strings.Cut(e, "="); n == name {
				errs = append(errs, fmt.Errorf("%s: also in backend.env, which would give tools the value", key))
			}
		}
	}
	return errs
}

func (c Config) validateModels() []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Models)) {
		m := c.Models[name]
		if m.Kind != "openai" && m.Kind != "anthropic" {
			errs = append(errs, fmt.Errorf("models.%s.kind: %q is not openai or anthropic", name, m.Kind))
		}
		if m.Model == "" {
			errs = append(errs, fmt.Errorf("models.%s.model: required", name))
		}
		if name == "scripted" {
			errs = append(errs, errors.New("models.scripted: the name is reserved for the scripted model"))
		}
	}
	for i, s := range c.MCP.Servers {
		if err := s.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("mcp.servers[%d]: %w", i, err))
		}
	}
	return errs
}

func (c Config) validateTools() []error {
	errs := c.Tools.Defaults.validate("tools.defaults")
	switch c.Tools.GrepEngine {
	case "", "auto", "rg", "go":
	default:
		errs = append(errs, fmt.Errorf("tools.grep_engine: %q is not one of auto, rg, go", c.Tools.GrepEngine))
	}
	if c.Tools.GrepTimeout < 0 {
		errs = append(errs, fmt.Errorf("tools.grep_timeout: %s is negative (0 or unset: the default, 30s)", c.Tools.GrepTimeout))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Tools.PerTool)) {
		errs = append(errs, c.Tools.PerTool[name].validate("tools.per_tool."+name)...)
	}
	return errs
}

// validate checks one tool's settings under key.
func (s ToolSettings) validate(key string) []error {
	var errs []error
	switch s.Escalation {
	case "", "deny", "allow", "notify":
	default:
		errs = append(errs, fmt.Errorf("%s.escalation: %q is not one of deny, allow, notify", key, s.Escalation))
	}
	if s.Retry.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("%s.retry.max_attempts: must not be negative", key))
	}
	if s.Timeout < 0 {
		errs = append(errs, fmt.Errorf("%s.timeout: must not be negative", key))
	}
	for _, h := range s.NetworkHosts {
		if err := permission.CheckHost(h); err != nil {
			errs = append(errs, fmt.Errorf("%s.network_hosts: %w", key, err))
		}
	}
	return errs
}

func (c Config) validatePermission() []error {
	if _, err := c.Permission.Context(); err != nil {
		return []error{fmt.Errorf("permission: %w", err)}
	}
	return nil
}
